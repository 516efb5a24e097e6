"""Images of the VLM reference systems, built like the others (no registry needed).

    apmbench/vlm-base-cpu:latest    apmbench/base + CPU torch (wheel from the build host)
                                    + transformers         (`make images-vlm-cpu`)
    apmbench/<vlm-system>:cpu       one per VLM system, on vlm-base-cpu
    apmbench/<vlm-system>:gpu       one per VLM system, on apmbench/base-gpu (`make images-gpu`)

The model is never in an image: it is mounted at /models/vlm when a run
starts (`--mount DIR:/models/vlm`). Like every image here they carry the
hash of their inputs, so nothing unchanged is rebuilt.

    python -m apmbench.harness.build.vlm_images --cpu | --gpu [--rootfs IMAGE] [--rebuild]
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import tomllib
from importlib import metadata
from pathlib import Path

import click

from apmbench.harness.errors import ImageBuildError
from apmbench.harness.runtimes.docker.engine import connect
from apmbench.harness.build.images import BASE, BASE_GPU, Builder, ImageRow, or_exit, summary

# The general protocols and the specialised memories (kv-memory, event-memory): all are
# the same image recipe on the same base, differing only in the system they start.
VLM_SYSTEMS = (
    "vlm-simplestream",
    "vlm-video-memory",
    "vlm-text-memory",
    "kv-memory",
    "event-memory",
)
BASE_CPU = "apmbench/vlm-base-cpu:latest"


def vlm_image(system: str, variant: str) -> str:
    """apmbench/<system>:cpu or :gpu."""
    return f"apmbench/{system}:{variant}"


def models_extra(root: Path) -> dict[str, str]:
    """The `models` extra of pyproject.toml: package name -> requirement."""
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    extra = meta["project"]["optional-dependencies"]["models"]
    return {re.split(r"[<>=!~ \[]", spec, maxsplit=1)[0]: spec for spec in extra}


def transformers_spec(root: Path) -> str:
    """The transformers this host runs the tests with, else the extra's requirement."""
    try:
        return f"transformers=={metadata.version('transformers')}"
    except metadata.PackageNotFoundError:
        return models_extra(root)["transformers"]


def torch_wheel(root: Path, into: Path) -> Path:
    """A CPU torch wheel of the pinned version for the image's Python (3.11, x86-64 Linux).

    $APMBENCH_TORCH_WHEEL names one; otherwise the host's pip finds it with its own
    configuration (find-links, extra indexes), and a CUDA build is refused.
    """
    if given := os.environ.get("APMBENCH_TORCH_WHEEL"):
        path = Path(given)
        if not path.is_file():
            raise ImageBuildError(f"APMBENCH_TORCH_WHEEL={given}: no such file")
        return path
    spec = models_extra(root)["torch"]
    cmd = [
        sys.executable, "-m", "pip", "download", spec, "--no-deps", "--only-binary=:all:",
        "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
        "--platform", "manylinux_2_28_x86_64", "--dest", str(into), "--quiet",
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(into.glob("torch-*.whl"))
    if done.returncode != 0 or not wheels:
        raise ImageBuildError(f"pip could not find a wheel for {spec}:\n{done.stderr[-2000:]}")
    if "+cpu" not in wheels[0].name:
        raise ImageBuildError(
            f"pip found {wheels[0].name}, a CUDA build of several GB; offer the CPU build "
            "(PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu, or a local wheel "
            "directory in PIP_FIND_LINKS), or set APMBENCH_TORCH_WHEEL=/path/to/torch-...+cpu...whl"
        )
    return wheels[0]


def build_cpu(builder: Builder, base_id: str) -> dict[str, str]:
    """vlm-base-cpu and the :cpu system images on apmbench/base (id `base_id`)."""
    root = builder.root
    with tempfile.TemporaryDirectory(prefix="apmbench-wheel-") as tmp:
        wheel = torch_wheel(root, Path(tmp))
        files = {
            "Dockerfile": (root / "containers" / "vlm-base-cpu" / "Dockerfile").read_bytes(),
            f"wheels/{wheel.name}": wheel.read_bytes(),
        }
    args = {"BASE": BASE, "TRANSFORMERS_SPEC": transformers_spec(root)}
    built = {BASE_CPU: builder.build(BASE_CPU, files, args, parent=base_id)}
    built.update(systems(builder, BASE_CPU, built[BASE_CPU], "cpu"))
    return built


def build_gpu(builder: Builder, base_gpu_id: str) -> dict[str, str]:
    """The :gpu system images on apmbench/base-gpu (id `base_gpu_id`)."""
    return systems(builder, BASE_GPU, base_gpu_id, "gpu")


def systems(builder: Builder, base: str, base_id: str, variant: str) -> dict[str, str]:
    dockerfile = (builder.root / "containers" / "vlm" / "Dockerfile").read_bytes()
    return {
        vlm_image(name, variant): builder.build(
            vlm_image(name, variant),
            {"Dockerfile": dockerfile},
            {"BASE": base, "SYSTEM": name},
            parent=base_id,
        )
        for name in VLM_SYSTEMS
    }


@click.command()
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."))
@click.option("--rootfs", envvar="ROOTFS", default=None, help="As for `make images`.")
@click.option("--cpu", "variant", flag_value="cpu", help="CPU torch (vlm-base-cpu, :cpu images).")
@click.option("--gpu", "variant", flag_value="gpu", help="CUDA torch (base-gpu, :gpu images).")
@click.option("--rebuild", is_flag=True, help="Build even when the inputs have not changed.")
def main(root: Path, rootfs: str | None, variant: str | None, rebuild: bool) -> None:
    """Build the VLM systems' images (and whatever they stand on)."""
    if variant is None:
        raise click.UsageError("give --cpu or --gpu")

    def build() -> list[ImageRow]:
        builder = Builder(root.resolve(), connect(), rebuild)
        built = builder.all(rootfs or None, gpu=variant == "gpu")
        if variant == "gpu":
            built.update(build_gpu(builder, built[BASE_GPU]))
        else:
            built.update(build_cpu(builder, built[BASE]))
        return summary(builder.client, built)

    for row in or_exit(build):
        click.echo(f"{row['image']:<36} {row['id']}  {row['size_mb']:>5} MB")


if __name__ == "__main__":
    main()
