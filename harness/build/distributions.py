"""The two distributions built from this repository (`make dist`), and the check of each.

    apmbench-sdk   apmbench.v1 + apmbench.adapters (packaging/sdk): what a method's
                   server needs, nothing of the harness
    apmbench-grpc  apmbench.harness (the repository root), depending on
                   apmbench-sdk of the same version

The SDK's sources live in the fixed top-level folders, outside its project
directory, and an sdist cannot reach outside its project; so the SDK is built
from a staged tree (`sdk_tree`) that lays its project files and sources side
by side. The image build (`make images`) installs the SDK from the same tree.

    python -m apmbench.harness.build.distributions [--out dist] [--no-install-check]

builds both wheels and sdists (each wheel from its sdist, which proves the
sdist complete), runs `twine check`, then installs each wheel into a fresh
venv: the SDK alone must serve `null` and pass `apmbench-grpc check`, with
no package of the harness present. It prints the SDK's installed size.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import click

from apmbench.adapters.sdk.errors import ApmbenchError

SDK = "apmbench-sdk"
HARNESS = "apmbench-grpc"
SDK_PROJECT = "packaging/sdk"
SDK_PROJECT_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md")
# Staged path -> repository folder: the SDK's packages.
SDK_SOURCES = {"adapters": "adapters", "proto/apmbench/v1": "proto/apmbench/v1"}
# Distributions only the harness needs: none may reach a venv that installed the SDK alone.
HARNESS_ONLY = ("apmbench-grpc", "click", "docker", "matplotlib", "av", "rich", "psutil")
# Wheels carry zip timestamps; a fixed one makes a rebuild of unchanged sources identical.
SOURCE_DATE_EPOCH = "315532800"  # 1980-01-01, the earliest a zip can record
_SKIP = re.compile(r"(^|/)(__pycache__|\.mypy_cache|\.ruff_cache)(/|$)|\.pyc$")


class DistError(ApmbenchError):
    """Building or checking a distribution failed."""


def version(root: Path) -> str:
    """The one version of both distributions: apmbench-grpc's, in the root pyproject.toml."""
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    return str(meta["project"]["version"])


def sdk_pin(root: Path) -> str | None:
    """The apmbench-sdk requirement of apmbench-grpc, as written."""
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    for spec in meta["project"]["dependencies"]:
        if re.match(rf"{SDK}\b", spec):
            return str(spec)
    return None


def sdk_tree(root: Path) -> dict[str, bytes]:
    """The SDK's staged project: relative path -> content (no caches, sorted walk)."""
    out: dict[str, bytes] = {}
    for name in SDK_PROJECT_FILES:
        out[name] = (root / SDK_PROJECT / name).read_bytes()
    out["VERSION"] = (version(root) + "\n").encode()
    for staged, folder in SDK_SOURCES.items():
        base = root / folder
        for path in sorted(base.rglob("*")):
            rel = path.relative_to(base).as_posix()
            if path.is_file() and not _SKIP.search(rel):
                out[f"{staged}/{rel}"] = path.read_bytes()
    return out


def write_tree(files: Mapping[str, bytes], into: Path) -> Path:
    for name, data in files.items():
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return into


def _run(
    cmd: list[str], what: str, *, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-25:])
        raise DistError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")
    return str(proc.stdout)


def _build(project: Path, out: Path) -> None:
    env = {**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH}
    # No isolation: the build backend is in this venv (the dev extra), and a
    # build must not need the network.
    cmd = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(project)]
    _run(cmd, f"building {project}", env=env)


def build(root: Path, out: Path) -> list[Path]:
    """Both sdists and wheels into `out` (emptied of older ones); returns the files."""
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("apmbench_sdk-*"), *out.glob("apmbench_grpc-*")]:
        old.unlink()
    with tempfile.TemporaryDirectory(prefix="apmbench-sdk-stage-") as stage:
        _build(write_tree(sdk_tree(root), Path(stage)), out)
    with tempfile.TemporaryDirectory(prefix="apmbench-grpc-stage-") as stage:
        # A copy, so the build's egg-info and build/ never land in the checkout.
        staged = Path(stage)
        for name in ("pyproject.toml", "setup.py", "README.md"):
            shutil.copy2(root / name, staged / name)
        shutil.copytree(root / "harness", staged / "harness", ignore=_ignore_caches)
        _build(staged, out)
    files = sorted([*out.glob("apmbench_sdk-*"), *out.glob("apmbench_grpc-*")])
    v = version(root)
    for stem in ("apmbench_sdk", "apmbench_grpc"):
        for suffix in ("-py3-none-any.whl", ".tar.gz"):
            if not (out / f"{stem}-{v}{suffix}").is_file():
                raise DistError(f"the build left no {stem}-{v}{suffix} in {out}")
    return files


def _ignore_caches(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if _SKIP.search(n)]


def twine_check(files: list[Path]) -> str:
    """`twine check --strict`: metadata complete, the long description renders on PyPI."""
    cmd = [sys.executable, "-m", "twine", "check", "--strict", *map(str, files)]
    return _run(cmd, "twine check")


# -- the install check ------------------------------------------------------


@dataclass(frozen=True)
class Venv:
    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def site_packages(self) -> Path:
        found = sorted(self.path.glob("lib/python3*/site-packages"))
        if not found:
            raise DistError(f"no site-packages under {self.path}")
        return found[0]

    def installed(self) -> dict[str, str]:
        """Distribution name (normalised) -> version, of what pip installed here."""
        code = (
            "import importlib.metadata as m\n"
            "for d in m.distributions():\n"
            "    print(d.metadata['Name'].lower().replace('_', '-'), d.version)\n"
        )
        # -I: the current folder (a checkout's egg-info) must not count as installed.
        lines = _run([str(self.python), "-I", "-c", code], "listing the venv").splitlines()
        return dict(line.split(" ", 1) for line in lines if " " in line)


def fresh_venv(path: Path) -> Venv:
    _run([sys.executable, "-m", "venv", str(path)], "creating a venv")
    return Venv(path)


def pip_install(venv: Venv, wheel: Path, find_links: Path) -> None:
    """Install `wheel` and its dependencies: this machine's pip configuration finds
    them (its index, caches, find-links), `find_links` the sibling distribution."""
    cmd = [str(venv.python), "-m", "pip", "install", "-q", "--find-links", str(find_links)]
    _run([*cmd, str(wheel)], f"installing {wheel.name} into {venv.path}")


def installed_mb(venv: Venv, names: list[str] | None = None) -> float:
    """Megabytes on disk in site-packages, without the venv's own pip and setuptools;
    with `names`, only those distributions' files (from their RECORD)."""
    site = venv.site_packages()
    skip = re.compile(r"^(pip|setuptools|pkg_resources|_distutils_hack)([-_.]|$)")
    total = 0
    if names is None:
        for entry in site.iterdir():
            if skip.match(entry.name) or entry.name == "distutils-precedence.pth":
                continue
            paths = entry.rglob("*") if entry.is_dir() else [entry]
            total += sum(p.stat().st_size for p in paths if p.is_file() and not p.is_symlink())
        return total / 1e6
    for record in site.glob("*.dist-info/RECORD"):
        dist = record.parent.name.split("-")[0].lower().replace("_", "-")
        if dist not in names:
            continue
        for line in record.read_text().splitlines():
            rel = line.split(",", 1)[0]
            path = (site / rel).resolve()
            if path.is_file():
                total += path.stat().st_size
    return total / 1e6


@contextmanager
def serving(venv: Venv, system: str, workdir: Path, timeout: float = 60.0) -> Iterator[str]:
    """`python -m apmbench.adapters SYSTEM` from `venv`, on a Unix socket; yields the address."""
    address = f"unix:{workdir / 'sdk.sock'}"
    log = workdir / "server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [str(venv.python), "-I", "-m", "apmbench.adapters", system, "--address", address],
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=workdir,  # not the checkout: its folders must not shadow the installed ones
        )
    try:
        deadline = time.monotonic() + timeout
        while b"serving " not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise DistError(
                    f"the SDK from {venv.path} did not serve {system} "
                    f"(exit {proc.poll()}):\n{log.read_text()[-2000:]}"
                )
            time.sleep(0.05)
        yield address
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass(frozen=True)
class SdkReport:
    installed_mb: float
    sdk_mb: float
    distributions: dict[str, str]
    check_output: str


def check_sdk(wheel: Path, find_links: Path, workdir: Path) -> SdkReport:
    """Install the SDK wheel alone into a fresh venv, refuse any harness package in it,
    serve `null` from it and run the harness's `check` against that server."""
    venv = fresh_venv(workdir / "sdk-venv")
    pip_install(venv, wheel, find_links)
    dists = venv.installed()
    present = sorted(name for name in HARNESS_ONLY if name in dists)
    if present:
        raise DistError(
            f"installing {wheel.name} alone brought in the harness's {', '.join(present)}: "
            "apmbench-sdk must depend only on what serving needs (packaging/sdk/pyproject.toml)"
        )
    probe = (
        "import importlib.util\n"
        "assert importlib.util.find_spec('apmbench.harness') is None, 'apmbench.harness present'\n"
        "import apmbench.adapters.sdk, apmbench.v1.memory_system_pb2\n"
    )
    _run([str(venv.python), "-I", "-c", probe], f"importing the SDK from {wheel.name}", cwd=workdir)
    with serving(venv, "null", workdir) as address:
        cmd = [sys.executable, "-m", "apmbench.harness.cli", "check", "--endpoint", address]
        output = _run([*cmd, "--out", str(workdir / "check")], "apmbench-grpc check", cwd=workdir)
    return SdkReport(installed_mb(venv), installed_mb(venv, [SDK]), dists, output)


def check_harness(wheel: Path, find_links: Path, workdir: Path) -> dict[str, str]:
    """Install apmbench-grpc into a fresh venv (its SDK from `find_links`) and import it."""
    venv = fresh_venv(workdir / "harness-venv")
    pip_install(venv, wheel, find_links)
    code = "import apmbench.harness.cli, apmbench.adapters.sdk, apmbench.v1.memory_system_pb2\n"
    _run([str(venv.python), "-I", "-c", code], f"importing {wheel.name}", cwd=workdir)
    _run([str(venv.path / "bin" / HARNESS), "--version"], "apmbench-grpc --version", cwd=workdir)
    return venv.installed()


@click.command()
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."))
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=Path("dist"))
@click.option("--no-install-check", is_flag=True, help="Build and twine-check only.")
def main(root: Path, out: Path, no_install_check: bool) -> None:
    """Build apmbench-sdk and apmbench-grpc (wheels and sdists) and check them."""
    root = root.resolve()
    try:
        files = build(root, out.resolve())
        click.echo(twine_check(files).rstrip())
        for f in files:
            click.echo(f"{f.name:<44} {f.stat().st_size / 1e3:>8.0f} kB")
        if no_install_check:
            return
        v = version(root)
        with tempfile.TemporaryDirectory(prefix="apmbench-dist-check-") as tmp:
            work = Path(tmp)
            out = out.resolve()
            sdk = check_sdk(out / f"apmbench_sdk-{v}-py3-none-any.whl", out, work)
            click.echo(f"{SDK} alone in a fresh venv: serves null, `check` passed")
            deps = sorted(n for n in sdk.distributions if n not in ("pip", "setuptools", SDK))
            click.echo(
                f"{SDK} installed size: {sdk.installed_mb:.1f} MB with its dependencies "
                f"({sdk.sdk_mb:.1f} MB itself; with {', '.join(deps)})"
            )
            check_harness(out / f"apmbench_grpc-{v}-py3-none-any.whl", out, work)
            click.echo(f"{HARNESS} in a fresh venv: imports, `apmbench-grpc --version` runs")
    except ApmbenchError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
