"""How a system's container is run: secure by default, each relaxation explicit.

Plain data and parsing only (no docker SDK import), so the CLI can check the
options before anything is started. `ContainerSettings.record()` is what
manifest.json keeps under `runtime.container`.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import NotRequired, TypedDict

from apmbench.harness.errors import ConfigError

# The uid the base image declares (containers/base/Dockerfile). Used when the
# harness itself runs as root, because a container must not.
DEFAULT_UID = 10001
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)([kmgt]?)b?$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
UNLIMITED = ("none", "unlimited", "0")
# Where the runtime mounts the socket directory (runtime.MOUNT); no --mount may cover it.
MOUNT_RESERVED = "/run/apmbench"


def parse_size(text: str, option: str) -> int | None:
    """'16g', '512m', '1073741824' -> bytes; 'none' -> None (no limit)."""
    value = text.strip().lower()
    if value in UNLIMITED:
        return None
    match = _SIZE.match(value)
    if match is None:
        raise ConfigError(f"{option} {text!r}: give a size such as 512m or 16g, or 'none'")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def parse_count(text: str, option: str, *, integer: bool) -> float | None:
    value = text.strip().lower()
    if value in UNLIMITED:
        return None
    try:
        number = int(value) if integer else float(value)
    except ValueError as e:
        kind = "a whole number" if integer else "a number"
        raise ConfigError(f"{option} {text!r}: give {kind}, or 'none' for no limit") from e
    if number <= 0:
        raise ConfigError(f"{option} {text!r}: must be positive, or 'none' for no limit")
    return number


class ContainerRecord(TypedDict):
    """manifest.json's `runtime.container`: how the container ran (`ContainerSettings.record`;
    the Docker runtime adds what the engine applied)."""

    network: str
    ip_sockets: bool
    read_only_root: bool
    tmpfs: dict[str, int]
    user: str
    cap_drop: list[str]
    cap_add: list[str]
    no_new_privileges: bool
    init: bool
    memory_bytes: int | None
    memswap_bytes: int | None
    cpus: float | None
    pids_limit: int | None
    shm_bytes: int
    gpus: str
    env_names: list[str]
    mounts: list[str]
    relaxations: list[str]
    cpus_requested: NotRequired[float | None]
    log_driver: NotRequired[dict[str, str]]


@dataclass(frozen=True)
class GpuRequest:
    """`--gpus`: none, all, a count, or device ids (e.g. '0,1' or GPU UUIDs). A bare `0`
    names GPU 0, unlike `docker run --gpus 0` (a count of none): no one writes a count of
    zero to mean no GPU when `none` says it, and everyone who writes `0` means the first."""

    count: int = 0
    """-1 for all GPUs, 0 for none, else that many."""
    device_ids: tuple[str, ...] = ()

    @property
    def wanted(self) -> bool:
        return self.count != 0 or bool(self.device_ids)

    @classmethod
    def parse(cls, text: str) -> GpuRequest:
        value = text.strip()
        if value.lower() in ("", "none"):
            return cls()
        if value == "0":
            return cls(device_ids=("0",))
        if value.lower() == "all":
            return cls(count=-1)
        if value.isdigit():
            return cls(count=int(value))
        ids = tuple(part.strip() for part in value.removeprefix("device=").split(","))
        if not all(ids):
            raise ConfigError(f"--gpus {text!r}: give none, all, a count, or device ids like 0,1")
        return cls(device_ids=ids)

    def describe(self) -> str:
        if self.device_ids:
            return "device=" + ",".join(self.device_ids)
        return {0: "none", -1: "all"}.get(self.count, str(self.count))


@dataclass(frozen=True)
class BindMount:
    """`--mount HOST:CONTAINER[:ro|rw]`: a host path inside the container, read-only unless
    `:rw` (e.g. a model directory: weights are read, never written)."""

    host: str
    container: str
    read_only: bool = True

    @classmethod
    def parse(cls, text: str) -> BindMount:
        parts = text.split(":")
        mode = parts.pop() if len(parts) == 3 else "ro"
        if len(parts) != 2 or mode not in ("ro", "rw") or not all(parts):
            raise ConfigError(
                f"--mount {text!r}: give HOST_PATH:CONTAINER_PATH, optionally :ro or :rw"
            )
        host, container = Path(parts[0]).resolve(), parts[1]
        if not host.exists():
            raise ConfigError(f"--mount {text!r}: {host} does not exist on this host")
        target = container.rstrip("/")
        if (
            not container.startswith("/")
            or target in ("", MOUNT_RESERVED)
            or target.startswith(MOUNT_RESERVED + "/")
        ):
            raise ConfigError(
                f"--mount {text!r}: the container path must be absolute, and neither / nor "
                f"in {MOUNT_RESERVED} (the socket directory)"
            )
        return cls(str(host), container, mode == "ro")

    def describe(self) -> str:
        return f"{self.host}:{self.container}:{'ro' if self.read_only else 'rw'}"


def default_user() -> str:
    """The harness's own uid:gid when it is not root (it then owns the socket
    directory and can connect to the socket the container creates), else the
    image's non-root uid."""
    uid = os.getuid()
    if uid == 0:
        return f"{DEFAULT_UID}:{DEFAULT_UID}"
    return f"{uid}:{os.getgid()}"


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def _is_root(user: str) -> bool:
    return user.split(":", 1)[0] == "0"


@dataclass(frozen=True)
class ContainerSettings:
    """Everything about how the image runs; the defaults are the hardened ones."""

    network: str = "none"
    """Docker network mode; anything but "none" (--allow-network, --network) lets the method out."""
    read_only_root: bool = True
    """Root filesystem read-only, with a tmpfs at /tmp (--writable-root relaxes)."""
    loopback: bool = False
    """IP sockets on the container's own loopback when it has no network (--allow-loopback).
    Off: their packets move per-CPU counters the next container reads (seccomp.NETWORK)."""
    user: str = field(default_factory=default_user)
    """uid[:gid] inside the container; root only when asked for (--user 0)."""
    cap_add: tuple[str, ...] = ()
    """Capabilities given back after dropping all (--cap-add)."""
    no_new_privileges: bool = True
    """setuid binaries cannot gain privileges (--allow-new-privileges relaxes)."""
    memory_bytes: int | None = 16 << 30
    """Memory limit; swap is limited to the same value, so there is no swap (--memory)."""
    cpus: float | None = 4.0
    """CPU limit in cores, capped at what the engine has (--cpus)."""
    pids: int | None = 4096
    """Process and thread limit (--pids-limit); torch and gRPC start many threads."""
    shm_bytes: int = 1 << 30
    """/dev/shm size (--shm-size); PyTorch data loaders share tensors through it."""
    tmp_bytes: int = 4 << 30
    """Size of the /tmp tmpfs; it counts against the memory limit when used (--tmp-size)."""
    gpus: GpuRequest = field(default_factory=GpuRequest)
    """GPUs through device requests (--gpus); needs the engine's NVIDIA runtime."""
    env: tuple[tuple[str, str], ...] = ()
    """Extra environment (--env KEY=VALUE); only the names go into the manifest."""
    mounts: tuple[BindMount, ...] = ()
    """Host paths in the container (--mount HOST:CONTAINER[:ro|rw]); read-only by default."""

    def __post_init__(self) -> None:
        # Numeric: the harness must give the socket directory to this uid on the host,
        # where the image's user names mean nothing.
        if not re.fullmatch(r"\d+(:\d+)?", self.user):
            raise ConfigError(f"--user {self.user!r}: give uid[:gid] as numbers, e.g. 1000:1000")
        for key, _ in self.env:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
                raise ConfigError(f"--env {key!r}: give KEY=VALUE with a valid variable name")

    @staticmethod
    def parse_env(pairs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        out = []
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep:
                raise ConfigError(f"--env {pair!r}: give KEY=VALUE")
            out.append((key, value))
        return tuple(out)

    @property
    def ip_sockets(self) -> bool:
        """Whether the container may open IP sockets: on a network, or --allow-loopback."""
        return self.network != "none" or self.loopback

    def relaxations(self) -> list[str]:
        """Each default this run gives up, in words, for the manifest and the log."""
        out = []
        if self.network != "none":
            out.append(f"network: {self.network}")
        elif self.loopback:
            out.append("IP sockets on its own loopback (host packet counters: a channel)")
        if not self.read_only_root:
            out.append("writable root filesystem")
        if _is_root(self.user):
            out.append("runs as root")
        if self.cap_add:
            out.append("capabilities: " + ",".join(self.cap_add))
        if not self.no_new_privileges:
            out.append("new privileges allowed")
        out.extend(f"writable mount {m.describe()}" for m in self.mounts if not m.read_only)
        # Read-only stops writes to a socket file, not connections through it (the Docker
        # socket mounted read-only still hands out the engine).
        out.extend(
            f"socket mount {m.describe()} (read-only does not stop connecting to it)"
            for m in self.mounts
            if m.read_only and _is_socket(m.host)
        )
        for name, value in (
            ("memory", self.memory_bytes),
            ("cpus", self.cpus),
            ("pids", self.pids),
        ):
            if value is None:
                out.append(f"no {name} limit")
        return out

    def record(self) -> ContainerRecord:
        return {
            "network": self.network,
            "ip_sockets": self.ip_sockets,
            "read_only_root": self.read_only_root,
            "tmpfs": {"/tmp": self.tmp_bytes},
            "user": self.user,
            "cap_drop": ["ALL"],
            "cap_add": list(self.cap_add),
            "no_new_privileges": self.no_new_privileges,
            "init": True,
            "memory_bytes": self.memory_bytes,
            "memswap_bytes": self.memory_bytes,
            "cpus": self.cpus,
            "pids_limit": self.pids,
            "shm_bytes": self.shm_bytes,
            "gpus": self.gpus.describe(),
            "env_names": sorted(k for k, _ in self.env),
            "mounts": [m.describe() for m in self.mounts],
            "relaxations": self.relaxations(),
        }
