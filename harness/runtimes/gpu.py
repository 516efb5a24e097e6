"""`--gpus` for a sandboxed `--system` or `--command`: which NVIDIA device nodes and driver
libraries the bubblewrap box gets, found as the NVIDIA container toolkit finds them.

The box's /dev is bwrap's own minimal one (null, zero, full, random, urandom, tty): without
`--gpus` it holds no /dev/nvidia* node, whatever the host has. With a request it gets

- `/dev/nvidiactl` and `/dev/nvidia-uvm` (CUDA opens both; a host without either is refused
  with a ConfigError naming the node), and `/dev/nvidiaN` for each chosen GPU: N is the
  device node's number (the driver's minor number, which is nvidia-smi's index on most
  hosts). `all` is every `/dev/nvidiaN`, a count the lowest N that many;
- never `/dev/nvidia-uvm-tools` (profiling counters: CUPTI's view of every context on the
  GPU), `/dev/nvidia-modeset` (display; compute does not open it) nor `/dev/nvidia-caps/*`
  (MIG's config and monitor capabilities, over every instance on the GPU): a MIG device
  cannot be requested here (`--image` passes it through the engine's toolkit);
- the driver's user-space libraries (libcuda, libnvidia-ml, the PTX JIT, NVVM, ...) that
  the dynamic loader's cache (`ldconfig -p`) lists, read-only, at the path it lists them
  (one already visible through a bound system directory, /usr, needs no bind).

Each node is bound with `--dev-bind` (bwrap's `--ro-bind` and `--remount-ro` both set
nodev, which makes a device node unopenable), so the mount is writable as a mount: a box
could chmod or set the times of the node it sees when its uid owns it, and the box's uid is
the harness's on the host (bwrap maps one onto the other). Run as root (the harness's uid
owns the host's nodes), every start therefore gets nodes of its own: fresh copies
(mknod: same type, numbers, mode and owner) in a directory only the harness writes, made
at that start's `wrap`, so nothing one start does to its nodes reaches another. A harness
that is not root binds the host's nodes, which its uid does not own (refused otherwise).

Everything here is plain data and file-system reads: the directory of device nodes
(`dev_dir`), the root the libraries' paths are read under (`lib_root`) and the loader's
listing (`ldconfig_listing`) are parameters, so tests use stand-ins.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apmbench.harness.errors import ConfigError
from apmbench.harness.json_types import JsonObject
from apmbench.harness.runtimes import owned_dirs
from apmbench.harness.runtimes.docker.settings import GpuRequest

DEV_DIR = Path("/dev")
"""Where the host's device nodes are read (tests point it at stand-ins)."""
LIB_ROOT = Path("/")
"""The root the loader's listed library paths are read under (the toolkit's driver root)."""
CONTROL_NODES = ("nvidiactl", "nvidia-uvm")
"""Opened by every CUDA process: required with any request."""
LEFT_OUT_NODES = ("nvidia-uvm-tools", "nvidia-modeset", "nvidia-caps")
"""Present on GPU hosts, never passed (module docstring says why)."""
DRIVER_LIBRARIES = (
    "libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so",
    "libnvidia-gpucomp.so", "libnvidia-allocator.so", "libnvidia-cfg.so",
    "libnvidia-opencl.so", "libnvidia-fatbinaryloader.so", "libnvidia-compiler.so",
    "libnvidia-pkcs11.so", "libnvidia-pkcs11-openssl3.so", "libnvidia-nvvm70.so",
)  # fmt: skip
"""The compute and utility libraries of the toolkit's list (libnvidia-container's
nvc_info.c), by the name before their version. Not the debugger's (libcudadebugger): it
attaches to other processes' kernels."""
DEVICE_COPIES_PREFIX = "apmdev-"
"""`/tmp/apmdev-<pid>-<start>-*`: the per-start device node copies of a harness run as root."""
KEPT_GENERATIONS = 64
"""Copies of earlier starts removed once this many newer ones exist (bwrap has long since
bound them; a bound node lives on after its path is removed)."""

_NODE = re.compile(r"nvidia(\d+)")
_LISTED = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s*=>\s*(\S+)\s*$")


def gpu_nodes(dev_dir: Path = DEV_DIR) -> dict[int, Path]:
    """The host's GPU device nodes, `/dev/nvidiaN` by N."""
    try:
        names = os.listdir(dev_dir)
    except OSError:
        return {}
    found = {}
    for name in names:
        match = _NODE.fullmatch(name)
        if match and stat.S_ISCHR(_mode(dev_dir / name)):
            found[int(match.group(1))] = dev_dir / name
    return dict(sorted(found.items()))


def _mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _missing(path: Path, request: GpuRequest, why: str) -> ConfigError:
    return ConfigError(
        f"--gpus {request.describe()}: {path} is missing on this host ({why}); the sandbox "
        "passes a GPU only where its NVIDIA device nodes exist (a GPU host with the driver "
        "loaded; `nvidia-smi` lists what it has). Run without --gpus for a CPU system"
    )


def chosen_nodes(request: GpuRequest, dev_dir: Path = DEV_DIR) -> list[Path]:
    """The device nodes `request` gives the box: the control nodes, then each chosen GPU's.
    Raises ConfigError naming the first missing node."""
    nodes = []
    for name in CONTROL_NODES:
        path = dev_dir / name
        if not stat.S_ISCHR(_mode(path)):
            raise _missing(path, request, "every CUDA process opens it")
        nodes.append(path)
    host = gpu_nodes(dev_dir)
    if request.device_ids:
        wanted = []
        for given in request.device_ids:
            if not given.isdigit():
                raise ConfigError(
                    f"--gpus {request.describe()}: {given!r} is not a device number; for a "
                    "sandboxed system give the numbers N of /dev/nvidiaN (e.g. 0,1), all, or a "
                    "count (UUIDs and MIG devices: --image)"
                )
            wanted.append(int(given))
    elif request.count == -1:
        if not host:
            raise _missing(dev_dir / "nvidia0", request, "no /dev/nvidiaN exists")
        wanted = list(host)
    else:
        wanted = list(host)[: request.count]
        if len(wanted) < request.count:
            absent = next(n for n in range(len(host) + request.count) if n not in host)
            raise _missing(
                dev_dir / f"nvidia{absent}",
                request,
                f"{request.count} GPUs asked for, {len(host)} found",
            )
    for number in dict.fromkeys(wanted):
        if number not in host:
            raise _missing(dev_dir / f"nvidia{number}", request, "the GPU asked for")
        nodes.append(host[number])
    return nodes


def ldconfig_listing() -> str:
    """`ldconfig -p`: the dynamic loader's cache as the NVIDIA container toolkit reads it."""
    for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig", shutil.which("ldconfig")):
        if ldconfig and os.access(ldconfig, os.X_OK):
            try:
                done = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if done.returncode == 0:
                return done.stdout
    return ""


def driver_libraries(listing: str, lib_root: Path = Path("/")) -> list[tuple[Path, Path]]:
    """(source on the host, path in the box) of each driver library the listing names, for
    this machine's ABI only (`x86-64` or `AArch64` in the listing's flags): the box sees it
    at the listed path, read from `lib_root` joined with it."""
    machine = os.uname().machine
    abi = {"x86_64": "x86-64", "aarch64": "AArch64"}.get(machine)
    found: dict[Path, Path] = {}
    for line in listing.splitlines():
        match = _LISTED.match(line)
        if match is None:
            continue
        name, flags, listed = match.groups()
        if not name.startswith(DRIVER_LIBRARIES) or not listed.startswith("/"):
            continue
        if abi is not None and abi not in flags:
            continue  # the i386 copies of a multilib host
        source = lib_root / listed.lstrip("/")
        if source.exists():
            found.setdefault(Path(listed), Path(os.path.realpath(source)))
    return [(source, dest) for dest, source in sorted(found.items())]


@dataclass(frozen=True)
class GpuPassthrough:
    """What a GPU request gives one sandbox: its device nodes and driver libraries."""

    request: GpuRequest
    nodes: tuple[Path, ...]
    """Host nodes, each bound at /dev/NAME."""
    libraries: tuple[tuple[Path, Path], ...]
    """(host file, path in the box), bound read-only."""

    @classmethod
    def find(
        cls,
        request: GpuRequest,
        dev_dir: Path | None = None,
        lib_root: Path | None = None,
        listing: str | None = None,
    ) -> GpuPassthrough:
        """Raises ConfigError naming a missing node, or for a harness that is not root but
        owns a node (its box would own it too). Unset, `dev_dir` is DEV_DIR, `lib_root`
        LIB_ROOT and `listing` what `ldconfig_listing()` reads, each looked up when called."""
        nodes = chosen_nodes(request, DEV_DIR if dev_dir is None else dev_dir)
        if os.geteuid() != 0:
            owned = [n for n in nodes if os.stat(n).st_uid == os.geteuid()]
            if owned:
                raise ConfigError(
                    f"--gpus {request.describe()}: {owned[0]} belongs to the harness's user, "
                    "so the sandboxed system (which runs as that user on the host) could change "
                    "its mode and times: run the harness as another user, or as root (each "
                    "start then gets copies of its own)"
                )
        text = ldconfig_listing() if listing is None else listing
        root = LIB_ROOT if lib_root is None else lib_root
        return cls(request, tuple(nodes), tuple(driver_libraries(text, root)))

    def describe(self, copies: bool) -> JsonObject:
        return {
            "request": self.request.describe(),
            "devices": ["/dev/" + n.name for n in self.nodes],
            "device_source": "fresh copies per start" if copies else "the host's nodes",
            "libraries": [str(dest) for _, dest in self.libraries],
            "left_out": ["/dev/" + n for n in LEFT_OUT_NODES],
        }


class DeviceCopies:
    """Fresh copies of device nodes for each start, in a directory only the harness writes
    (root only: mknod needs CAP_MKNOD). `available()` says whether copies work here: root,
    and a directory on a file system whose nodes open (not mounted nodev)."""

    def __init__(self, base: Path | None = None) -> None:
        self.base = Path(tempfile.gettempdir()) if base is None else base
        self._dir: Path | None = None
        self._made = 0
        self._lock = threading.Lock()
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @staticmethod
    def possible(base: Path | None = None) -> bool:
        if os.geteuid() != 0:
            return False
        try:
            return not os.statvfs(base or tempfile.gettempdir()).f_flag & os.ST_NODEV
        except OSError:
            return False

    def fresh(self, nodes: Sequence[Path]) -> list[Path]:
        """New nodes like `nodes` (type, numbers, mode, owner), in a new subdirectory."""
        with self._lock:
            if self._dir is None:
                for dead, _ in owned_dirs.dead_owner_dirs(self.base, DEVICE_COPIES_PREFIX):
                    shutil.rmtree(dead, ignore_errors=True)
                self._dir = Path(
                    tempfile.mkdtemp(
                        prefix=owned_dirs.name_prefix(DEVICE_COPIES_PREFIX), dir=self.base
                    )
                )
                self._finalizer = weakref.finalize(
                    self, shutil.rmtree, str(self._dir), ignore_errors=True
                )
            self._made += 1
            number = self._made
            generation = self._dir / str(number)
            generation.mkdir(mode=0o700)
            with contextlib.suppress(OSError):
                shutil.rmtree(self._dir / str(number - KEPT_GENERATIONS))
        copies = []
        for node in nodes:
            info = os.stat(node)
            copy = generation / node.name
            os.mknod(copy, stat.S_IFMT(info.st_mode) | 0o600, info.st_rdev)
            os.chown(copy, info.st_uid, info.st_gid)
            os.chmod(copy, stat.S_IMODE(info.st_mode))
            copies.append(copy)
        return copies

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()


def bwrap_args(
    gpu: GpuPassthrough, sources: Sequence[Path], visible: Iterable[Path]
) -> tuple[list[str], list[str]]:
    """The device binds (to follow `--dev /dev`) and the library binds (to follow the
    system directories'): `sources` are the node files to bind (the host's or copies), in
    `gpu.nodes`' order; a library under a `visible` path is already there, read-only."""
    roots = list(visible)
    devices: list[str] = []
    for source, node in zip(sources, gpu.nodes, strict=True):
        devices += ["--dev-bind", str(source), f"/dev/{node.name}"]
    libraries: list[str] = []
    for source, dest in gpu.libraries:
        seen = Path(os.path.realpath(dest)) == source  # the host's own file at that path
        if seen and any(dest == r or r in dest.parents for r in roots):
            continue
        libraries += ["--ro-bind", str(source), str(dest)]
    return devices, libraries
