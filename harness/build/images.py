"""Build the apmbench images with no container registry (`make images`).

    apmbench/rootfs:latest    Debian + python3-venv by mmdebstrap, `docker import`ed:
                              nothing is pulled, so it works air-gapped
    apmbench/base:latest      + apmbench-sdk alone in /opt/apmbench (no harness), a
                              non-root user
    apmbench/<name>:latest    one per line of containers/systems.txt
    apmbench-test/template    containers/template as a method author builds it; its
                              size is checked against TEMPLATE_MAX_MB
    apmbench/base-gpu:latest  + torch and transformers with the CUDA runtime from
                              PyPI wheels (only with --gpu: multi-GB, for GPU hosts)
    apmbench/harness:latest   the harness itself and bubblewrap, on apmbench/rootfs-harness
                              (only with --harness: the image of a Kubernetes shard's pod,
                              deploy/k8s/evaluate-job.yaml)

Every image carries the label `org.apmbench.inputs`, a hash of what it was
built from (the parent image's id, the Dockerfile, the files copied in, the
build arguments). An image whose label matches is not built again, so a
second `make images` with nothing changed does nothing. Builds use the
engine's classic builder through the API (no buildx needed) with
`network_mode="host"`, the only way pip reaches the index when the engine has
no bridge network.

    python -m apmbench.harness.build.images [--rootfs IMAGE] [--gpu] [--rebuild]
        [--node-template] [--harness]
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict, TypeVar

import click
import docker
import docker.errors
import requests

from apmbench.adapters.sdk.errors import ApmbenchError
from apmbench.harness.build.distributions import SDK_PROJECT, sdk_tree
from apmbench.harness.errors import EngineUnanswered, ImageBuildError
from apmbench.harness.runtimes.docker.engine import connect, unanswered

INPUTS_LABEL = "org.apmbench.inputs"
ROOTFS = "apmbench/rootfs:latest"
BASE = "apmbench/base:latest"
BASE_GPU = "apmbench/base-gpu:latest"
TEMPLATE = "apmbench-test/template:latest"
# A method's image on the template should weigh little more than Python itself
# (the Debian root is ~104 MB): the SDK's serving stack gets the rest.
TEMPLATE_MAX_MB = 180
SUITE = "bookworm"
# libstdc++6: grpcio's extension needs it; ca-certificates: TLS for pip.
PACKAGES = ("python3-venv", "ca-certificates", "libstdc++6")
NODE_ROOTFS = "apmbench/rootfs-node:latest"
HARNESS_ROOTFS = "apmbench/rootfs-harness:latest"
HARNESS = "apmbench/harness:latest"
# The harness starts methods in bubblewrap; it runs in the pod, so the pod's image has it.
HARNESS_PACKAGES = (*PACKAGES, "bubblewrap")
HARNESS_PROJECT_FILES = ("pyproject.toml", "setup.py", "README.md")
NODE_PACKAGES = ("nodejs", "npm", "ca-certificates")
NODE_TEMPLATE = "apmbench/template-node:latest"
NODE_TEMPLATE_FILES = (
    "Dockerfile", "package.json", "package-lock.json", "server.js", "memory_system.proto",
)  # fmt: skip
# Documentation and translations are a third of a minimal Debian and unused here.
DPKG_EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/locale/*", "/usr/share/info/*")
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
_SKIP = re.compile(r"(^|/)(__pycache__|\.mypy_cache|\.ruff_cache)(/|$)|\.pyc$")

Files = Mapping[str, bytes]
"""A build context: path inside the context -> content."""


def image_name(system: str) -> str:
    """The image of a registered system: apmbench/<name>:latest."""
    return f"apmbench/{system}:latest"


def system_lines(root: Path) -> dict[str, list[str]]:
    """containers/systems.txt: a registered system a line, then the pip requirements its
    image adds to the lean base (what it needs beyond serving); # comments."""
    lines = (root / "containers" / "systems.txt").read_text().splitlines()
    words = [s.split() for line in lines if (s := line.split("#", 1)[0].strip())]
    return {w[0]: w[1:] for w in words}


def systems_list(root: Path) -> list[str]:
    return list(system_lines(root))


def debian_mirror() -> str:
    """The Debian mirror apt on this machine uses ($APMBENCH_DEBIAN_MIRROR wins)."""
    if env := os.environ.get("APMBENCH_DEBIAN_MIRROR"):
        return env
    sources = sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    for path in sources:
        for line in path.read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    listing = Path("/etc/apt/sources.list")
    if listing.exists():
        for line in listing.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and "security" not in parts[1]:
                return parts[1] if not parts[1].startswith("[") else parts[2]
    return "http://deb.debian.org/debian"


def digest(*parts: bytes | str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def tree_files(
    root: Path, dirs: Iterable[str], files: Iterable[str], prefix: str
) -> dict[str, bytes]:
    """Files under `dirs` and the single `files`, keyed by `prefix/relative path`."""
    lead = f"{prefix}/" if prefix else ""
    out: dict[str, bytes] = {}
    for name in files:
        out[lead + name] = (root / name).read_bytes()
    for d in dirs:
        for path in sorted((root / d).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and not _SKIP.search(rel):
                out[lead + rel] = path.read_bytes()
    return out


def context_tar(files: Files) -> bytes:
    """A reproducible tar of the context: fixed owner, mode and mtime, sorted names."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in sorted(files):
            data = files[name]
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def harness_requirements(root: Path) -> bytes:
    """The harness's dependencies and apmbench-sdk's (both installed from their sources in
    the harness image, so the exact pin of apmbench-sdk is left out) and the build backend."""
    sdk = requirements(root).decode().splitlines()
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    own = [d for d in meta["project"]["dependencies"] if not d.startswith("apmbench-sdk")]
    return ("\n".join([*sdk, *own]) + "\n").encode()


def requirements(root: Path, extras: Iterable[str] = ()) -> bytes:
    """apmbench-sdk's dependencies (with `extras`) and build backend, for the cached
    dependency layer of apmbench/base: the harness's own never enter an image."""
    meta = tomllib.loads((root / SDK_PROJECT / "pyproject.toml").read_text())
    deps = list(meta["project"]["dependencies"])
    for extra in extras:
        deps += meta["project"]["optional-dependencies"][extra]
    deps += meta["build-system"]["requires"]
    return ("\n".join(deps) + "\n").encode()


@dataclass
class Builder:
    """Builds images on one engine, skipping those whose inputs have not changed."""

    root: Path
    client: docker.DockerClient
    rebuild: bool = False
    say: Callable[[str], None] = field(default=lambda line: print(line, flush=True))

    def current(self, ref: str, inputs: str) -> str | None:
        """The id of `ref` if it exists and was built from `inputs`."""
        if self.rebuild:
            return None
        try:
            image = self.client.images.get(ref)
        except docker.errors.ImageNotFound:
            return None
        labels = image.labels or {}
        return str(image.id) if labels.get(INPUTS_LABEL) == inputs else None

    def image_id(self, ref: str) -> str:
        try:
            image_id = str(self.client.images.get(ref).id)
        except docker.errors.ImageNotFound as e:
            raise ImageBuildError(f"image {ref!r} was expected on the engine but is missing") from e
        return image_id

    def build(
        self,
        tag: str,
        files: Files,
        buildargs: Mapping[str, str] | None = None,
        parent: str = "",
    ) -> str:
        """Build `tag` from a context with a Dockerfile, unless built from the same inputs already.

        `parent` is the id of the image named in FROM, so a rebuilt parent
        rebuilds its children.
        """
        args = dict(buildargs or {})
        inputs = digest(
            tag, parent, *(f"{k}={v}" for k, v in sorted(args.items())),
            *(x for name in sorted(files) for x in (name, files[name])),
        )  # fmt: skip
        existing = self.current(tag, inputs)
        if existing is not None:
            self.say(f"{tag}: up to date ({existing[7:19]})")
            return existing
        self.say(f"{tag}: building")
        # Only proxies and an index mirror come from the host; nothing else leaks into the build.
        for key in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "PIP_INDEX_URL"):
            if os.environ.get(key) and key not in args:
                args[key] = os.environ[key]
        try:
            stream = self.client.api.build(
                fileobj=io.BytesIO(context_tar(files)),
                custom_context=True,
                tag=tag,
                buildargs=args,
                labels={INPUTS_LABEL: inputs},
                network_mode="host",
                rm=True,
                forcerm=True,
                decode=True,
            )
            tail: list[str] = []
            for chunk in stream:
                if "error" in chunk:
                    detail = "".join(tail[-15:])
                    raise ImageBuildError(f"building {tag} failed: {chunk['error']}\n{detail}")
                text = chunk.get("stream")
                if text:
                    tail.append(text)
                    if text.startswith("Step ") or "Successfully" in text:
                        self.say(f"  {text.rstrip()}")
        except docker.errors.APIError as e:
            raise ImageBuildError(f"building {tag} failed: {e.explanation or e}") from e
        image_id = self.image_id(tag)
        self._prune()
        return image_id

    def _prune(self) -> None:
        """Drop the images a rebuild replaced (untagged, ours): they would pile up."""
        # Failing (another build or a container still uses one, or a busy engine that does
        # not answer in time) is harmless: the next build prunes them.
        with contextlib.suppress(docker.errors.APIError, requests.RequestException):
            self.client.images.prune(filters={"dangling": True, "label": INPUTS_LABEL})

    # -- the images ------------------------------------------------------------

    def rootfs(
        self, base: str | None = None, packages: tuple[str, ...] = PACKAGES, ref: str = ROOTFS
    ) -> str:
        """The root filesystem under apmbench/base; `base` uses an existing image instead.
        `packages` and `ref` make another Debian root the same way (the Node.js template's)."""
        if base is not None:
            try:
                return self.image_id(base)
            except ImageBuildError:
                self.say(f"{base}: pulling")
                try:
                    pulled = str(self.client.images.pull(base).id)
                except docker.errors.APIError as e:
                    raise ImageBuildError(
                        f"base image {base!r} is neither on the engine nor pullable "
                        f"({e.explanation or e}); build the registry-free one by leaving "
                        "ROOTFS unset"
                    ) from e
                return pulled
        mirror = debian_mirror()
        cmd = [
            "mmdebstrap",
            "--variant=essential",
            "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
            f"--include={','.join(packages)}",
            *(f"--dpkgopt=path-exclude={p}" for p in DPKG_EXCLUDES),
            SUITE,
            "-",
            mirror,
        ]
        inputs = digest(*cmd)
        existing = self.current(ref, inputs)
        if existing is not None:
            self.say(f"{ref}: up to date ({existing[7:19]})")
            return existing
        if shutil.which("mmdebstrap") is None:
            raise ImageBuildError(
                "mmdebstrap is not installed: `apt-get install -y mmdebstrap` (as root), or "
                "build on an image from a registry: `make images ROOTFS=python:3.11-slim-bookworm`"
            )
        self.say(f"{ref}: mmdebstrap {SUITE} from {mirror}")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        repository, tag = ref.rsplit(":", 1)
        try:
            self.client.api.import_image_from_stream(
                proc.stdout,
                repository=repository,
                tag=tag,
                changes=[f"LABEL {INPUTS_LABEL}={inputs}", 'CMD ["/bin/sh"]'],
            )
        except docker.errors.APIError as e:
            proc.kill()
            raise ImageBuildError(f"docker import of the root filesystem failed: {e}") from e
        finally:
            proc.stdout.close()
        errors = proc.stderr.read().decode(errors="replace")
        if proc.wait() != 0:
            # The import may have stored a truncated tree: never leave it tagged.
            self.client.images.remove(ref, force=True)
            raise ImageBuildError(
                f"mmdebstrap failed (exit {proc.returncode}); it needs root (or user "
                f"namespaces) and the Debian mirror {mirror} (set APMBENCH_DEBIAN_MIRROR):\n"
                + "\n".join(errors.splitlines()[-15:])
            )
        return self.image_id(ref)

    def base(self, rootfs_id: str, rootfs_ref: str) -> str:
        dockerfile = (self.root / "containers" / "base" / "Dockerfile").read_bytes()
        files = {
            "Dockerfile": dockerfile,
            "ca-certificates.crt": CA_BUNDLE.read_bytes() if CA_BUNDLE.exists() else b"",
            "prune.txt": (self.root / "containers" / "base" / "prune.txt").read_bytes(),
            "requirements.txt": requirements(self.root),
            **{f"sdk/{name}": data for name, data in sdk_tree(self.root).items()},
        }
        return self.build(BASE, files, {"ROOTFS": rootfs_ref}, parent=rootfs_id)

    def system(self, base_id: str, name: str) -> str:
        dockerfile = (self.root / "containers" / "system" / "Dockerfile").read_bytes()
        args = {"BASE": BASE, "SYSTEM": name, "EXTRAS": " ".join(system_lines(self.root)[name])}
        return self.build(image_name(name), {"Dockerfile": dockerfile}, args, parent=base_id)

    def template(self, base_id: str) -> str:
        """containers/template as-is, on apmbench/base: what a method author starts from."""
        folder = self.root / "containers" / "template"
        files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}
        return self.build(TEMPLATE, files, parent=base_id)

    def base_gpu(self, base_id: str) -> str:
        dockerfile = (self.root / "containers" / "base-gpu" / "Dockerfile").read_bytes()
        return self.build(BASE_GPU, {"Dockerfile": dockerfile}, {"BASE": BASE}, parent=base_id)

    def node_template(self) -> str:
        """containers/template-node as apmbench/template-node, on a Debian root with Node.js
        made like apmbench/rootfs (no registry); not part of `all`, the container tests build
        it."""
        rootfs_id = self.rootfs(packages=NODE_PACKAGES, ref=NODE_ROOTFS)
        folder = self.root / "containers" / "template-node"
        files = {name: (folder / name).read_bytes() for name in NODE_TEMPLATE_FILES}
        # npm reaches its registry through whatever TLS the host trusts (a proxy's CA too).
        files["extra-ca.crt"] = CA_BUNDLE.read_bytes() if CA_BUNDLE.exists() else b""
        return self.build(NODE_TEMPLATE, files, {"ROOTFS": NODE_ROOTFS}, parent=rootfs_id)

    def harness(self, tag: str = HARNESS) -> str:
        """containers/harness as `tag`: the harness and bubblewrap on a Debian root made like
        apmbench/rootfs; not part of `all` (only a cluster's shard pods need it)."""
        rootfs_id = self.rootfs(packages=HARNESS_PACKAGES, ref=HARNESS_ROOTFS)
        files = {
            "Dockerfile": (self.root / "containers" / "harness" / "Dockerfile").read_bytes(),
            "ca-certificates.crt": CA_BUNDLE.read_bytes() if CA_BUNDLE.exists() else b"",
            "requirements.txt": harness_requirements(self.root),
            **{f"sdk/{name}": data for name, data in sdk_tree(self.root).items()},
            **tree_files(self.root, ["harness"], HARNESS_PROJECT_FILES, "harness-project"),
        }
        return self.build(tag, files, {"ROOTFS": HARNESS_ROOTFS}, parent=rootfs_id)

    def all(self, rootfs: str | None = None, gpu: bool = False) -> dict[str, str]:
        """Build everything `make images` promises; return image name -> id."""
        rootfs_id = self.rootfs(rootfs)
        built = {rootfs or ROOTFS: rootfs_id}
        built[BASE] = base_id = self.base(rootfs_id, rootfs or ROOTFS)
        for name in systems_list(self.root):
            built[image_name(name)] = self.system(base_id, name)
        built[TEMPLATE] = self.template(base_id)
        if gpu:
            built[BASE_GPU] = self.base_gpu(base_id)
        return built


class ImageRow(TypedDict):
    """One built image as `summary` lists it."""

    image: str
    id: str
    size_mb: int


def summary(client: docker.DockerClient, built: Mapping[str, str]) -> list[ImageRow]:
    rows: list[ImageRow] = []
    for ref, image_id in built.items():
        image = client.images.get(image_id)
        rows.append(
            ImageRow(image=ref, id=image_id[7:19], size_mb=round(image.attrs["Size"] / 1e6))
        )
    return rows


T = TypeVar("T")


def or_exit(work: Callable[[], T]) -> T:
    """`work()`, or a message and an exit: 2 for what the user can fix (a missing tool, a
    failed step), 3 for an engine that did not answer in time (never a traceback)."""
    try:
        return work()
    except EngineUnanswered as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(3)
    except ApmbenchError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)
    except requests.RequestException as e:
        click.echo(f"error: {unanswered(e, 'while building')}", err=True)
        sys.exit(3)


@click.command()
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."))
@click.option(
    "--rootfs",
    envvar="ROOTFS",
    default=None,
    help="Use this image (e.g. python:3.11-slim-bookworm) instead of the mmdebstrap root.",
)
@click.option("--gpu", is_flag=True, help="Also build apmbench/base-gpu (CUDA wheels, multi-GB).")
@click.option("--rebuild", is_flag=True, help="Build even when the inputs have not changed.")
@click.option(
    "--node-template",
    is_flag=True,
    help="Also build apmbench/template-node (containers/template-node on a Node.js root).",
)
@click.option(
    "--harness",
    "harness_image",
    is_flag=True,
    help="Also build apmbench/harness (the harness and bubblewrap: a Kubernetes shard's pod).",
)
def main(
    root: Path,
    rootfs: str | None,
    gpu: bool,
    rebuild: bool,
    node_template: bool,
    harness_image: bool,
) -> None:
    """Build the base image and one image per reference system."""

    def build() -> tuple[dict[str, str], list[ImageRow]]:
        builder = Builder(root.resolve(), connect(), rebuild)
        built = builder.all(rootfs or None, gpu)
        if node_template:
            built[NODE_TEMPLATE] = builder.node_template()
        if harness_image:
            built[HARNESS] = builder.harness()
        return built, summary(builder.client, built)

    _, rows = or_exit(build)
    for row in rows:
        click.echo(f"{row['image']:<32} {row['id']}  {row['size_mb']:>5} MB")
    template_mb = next(row["size_mb"] for row in rows if row["image"] == TEMPLATE)
    verdict = "met" if template_mb < TEMPLATE_MAX_MB else "NOT MET"
    click.echo(f"template image: {template_mb} MB (target < {TEMPLATE_MAX_MB} MB): {verdict}")


if __name__ == "__main__":
    main()
