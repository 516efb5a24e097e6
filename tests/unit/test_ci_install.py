"""CI's install step (.ci/install_tools.py) in the situations a CI machine can be in.

The script is run for real, as CI runs it, with PATH pointing at a directory of
stand-in executables: `apt-get` there records its arguments and, when asked to
install a package, puts that package's command on PATH (or fails, as Debian's npm
fails beside a vendor's Node.js).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "install_tools.py"
PACKAGE_OF = {
    "docker.io": "dockerd",
    "mmdebstrap": "mmdebstrap",
    "bubblewrap": "bwrap",
    "runsc": "runsc",
    "nodejs": "node",
    "npm": "npm",
    "chromium": "chromium",
    "protobuf-compiler": "protoc",
    "protobuf-compiler-grpc": "grpc_cpp_plugin",
    "protoc-gen-go": "protoc-gen-go",
    "protoc-gen-go-grpc": "protoc-gen-go-grpc",
    "golang-go": "go",
    "g++": "g++",
    "ruby-grpc-tools": "grpc_tools_ruby_protoc",
    "pkg-config": "pkg-config",
    # Libraries have no command: a file they install marks them (under INSTALL_TOOLS_ROOT).
    "libgrpc++-dev": "/usr/include/grpcpp/grpcpp.h",
    "golang-google-grpc-dev": "/usr/share/gocode/src/google.golang.org/grpc/server.go",
    "golang-google-protobuf-dev": "/usr/share/gocode/src/google.golang.org/protobuf/proto/proto.go",
}
EVERY_TOOL = tuple(PACKAGE_OF.values())

FAKE_APT = """#!/bin/sh
echo "$@" >> "{log}"
if [ "$1" = install ]; then
    for pkg in "$@"; do :; done
    case " {refuse} " in *" $pkg "*)
        echo "E: $pkg : Conflicts: nodejs"; echo "E: Unable to correct problems, you have held broken packages."
        exit 100;;
    esac
    case "$pkg" in {cases} esac
fi
exit 0
"""


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _machine(
    tmp_path: Path, present: tuple[str, ...], refuse: tuple[str, ...] = ()
) -> tuple[Path, Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    root = tmp_path / "root"
    log = tmp_path / "apt.log"
    for command in present:
        if command.startswith("/"):
            (root / command[1:]).parent.mkdir(parents=True, exist_ok=True)
            (root / command[1:]).touch()
        else:
            _executable(bin_dir / command, "#!/bin/sh\nexit 0\n")
    cases = "".join(
        f'{pkg}) /bin/mkdir -p "$(/usr/bin/dirname "{root}{cmd}")"; : > "{root}{cmd}";; '
        if cmd.startswith("/")
        else f'{pkg}) printf "#!/bin/sh\\nexit 0\\n" > "{bin_dir}/{cmd}"; /bin/chmod +x "{bin_dir}/{cmd}";; '
        for pkg, cmd in PACKAGE_OF.items()
    )
    _executable(bin_dir / "apt-get", FAKE_APT.format(log=log, refuse=" ".join(refuse), cases=cases))
    return bin_dir, log


def _run(bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Only the stand-ins: the real /usr/bin must not lend this machine's tools.
    env = dict(os.environ, PATH=str(bin_dir), INSTALL_TOOLS_ROOT=str(bin_dir.parent / "root"))
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=60
    )


def _apt_calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_nothing_installed_installs_every_tool_one_at_a_time(tmp_path: Path) -> None:
    bin_dir, log = _machine(tmp_path, present=())
    done = _run(bin_dir)
    assert done.returncode == 0, done.stderr
    calls = _apt_calls(log)
    assert calls[0] == "update -q"
    installs = [c.split()[-1] for c in calls[1:]]
    assert installs == list(PACKAGE_OF)  # one package a call, every one
    root = tmp_path / "root"
    assert all(
        (root / tool[1:]).exists() if tool.startswith("/") else (bin_dir / tool).exists()
        for tool in EVERY_TOOL
    )


def test_node_from_another_source_is_kept_and_debian_npm_never_asked_for(tmp_path: Path) -> None:
    # A vendor's Node.js brings its own npm; Debian's npm conflicts with it.
    bin_dir, log = _machine(tmp_path, present=("node", "npm"), refuse=("npm", "nodejs"))
    done = _run(bin_dir)
    assert done.returncode == 0, done.stderr
    installs = [c.split()[-1] for c in _apt_calls(log) if c.startswith("install")]
    assert installs == [p for p in PACKAGE_OF if p not in ("nodejs", "npm")]
    assert "present" in done.stdout and "node" in done.stdout


def test_everything_present_runs_no_apt_at_all(tmp_path: Path) -> None:
    bin_dir, log = _machine(tmp_path, present=EVERY_TOOL)
    done = _run(bin_dir)
    assert done.returncode == 0, done.stderr
    assert _apt_calls(log) == []
    dry = _run(bin_dir, "--dry-run")
    assert dry.stdout.strip() == ""


def test_a_failed_install_names_the_tool_and_its_package(tmp_path: Path) -> None:
    # node from another source, but its npm missing: Debian's npm then conflicts.
    bin_dir, _log = _machine(
        tmp_path, present=(*EVERY_TOOL[:3], "node", "chromium"), refuse=("npm",)
    )
    done = _run(bin_dir)
    assert done.returncode == 1
    assert "could not install npm (Debian package npm" in done.stderr
    assert "Conflicts" in done.stderr  # apt's own words travel with it


@pytest.mark.parametrize("present", [(), ("node", "npm"), EVERY_TOOL])
def test_dry_run_changes_nothing_and_prints_the_plan(
    tmp_path: Path, present: tuple[str, ...]
) -> None:
    bin_dir, log = _machine(tmp_path, present=present)
    done = _run(bin_dir, "--dry-run")
    assert done.returncode == 0
    assert _apt_calls(log) == []
    planned = [
        line.split()[-1] for line in done.stdout.splitlines() if line.startswith("apt-get install")
    ]
    assert planned == [pkg for pkg, cmd in PACKAGE_OF.items() if cmd not in present]
