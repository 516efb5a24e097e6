"""Names and labels of the harness's containers, and removal of those a killed harness left.

A harness killed with SIGKILL cannot remove its container. Every container
therefore carries labels naming its run and its harness process (host, pid,
process start time), and a fixed name per (run, trajectory). When a runtime
starts it removes:

- every container whose harness on this host is dead (a resumed run's own
  leftovers, and those of runs nobody resumes);
- none of a live harness: if that harness runs the same run directory,
  starting fails instead (the two would fight over it).

Containers of other hosts sharing the engine are never touched.
"""

from __future__ import annotations

import hashlib
import re
import socket
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import psutil
from docker.models.containers import Container

from apmbench.harness import logs
from apmbench.harness.errors import ConfigError
from apmbench.harness.runtimes.docker import socketdir

MANAGED = "org.apmbench.managed"
RUN = "org.apmbench.run"
RUN_DIR = "org.apmbench.run-dir"
TRAJECTORY = "org.apmbench.trajectory"
OWNER = "org.apmbench.owner"
SOCKET_DIR = "org.apmbench.socket-dir"
# Socket directories are made with this prefix; cleanup removes no other directory.
SOCKET_DIR_PREFIX = socketdir.PREFIX


@dataclass(frozen=True)
class Owner:
    """The harness process that owns a container: host, pid and the pid's start time."""

    host: str
    pid: int
    started: float

    def label(self) -> str:
        return f"{self.host}:{self.pid}:{self.started:.2f}"

    @classmethod
    def me(cls) -> Owner:
        proc = psutil.Process()
        return cls(socket.gethostname(), proc.pid, proc.create_time())

    @classmethod
    def parse(cls, label: str) -> Owner | None:
        parts = label.rsplit(":", 2)
        try:
            return cls(parts[0], int(parts[1]), float(parts[2]))
        except (IndexError, ValueError):
            return None

    def alive(self) -> bool:
        """Whether this process still runs (on this host; a reused pid does not count)."""
        try:
            return abs(psutil.Process(self.pid).create_time() - self.started) < 0.05
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False


def run_key(run_dir: Path) -> str:
    """A short stable id of a run directory on this host."""
    text = f"{socket.gethostname()}:{run_dir.resolve()}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def container_name(key: str, part: str) -> str:
    """'apmbench-<run>-<part>', within Docker's name alphabet; odd ids get a hash suffix."""
    clean = re.sub(r"[^A-Za-z0-9_.-]", "_", part)[:48]
    if clean != part:
        clean += "-" + hashlib.sha256(part.encode()).hexdigest()[:6]
    return f"apmbench-{key}-{clean}"


def labels(key: str, run_dir: Path, part: str, owner: Owner, socket_dir: Path) -> dict[str, str]:
    return {
        MANAGED: "1",
        RUN: key,
        RUN_DIR: str(run_dir.resolve()),
        TRAJECTORY: part,
        OWNER: owner.label(),
        SOCKET_DIR: str(socket_dir),
    }


def remove(container: Container) -> None:
    """Force-remove a container and its anonymous volumes (gone already is fine)."""
    try:
        container.remove(force=True, v=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as e:
        # "removal already in progress" from a concurrent cleanup is fine too.
        if e.status_code != 409:
            raise


def _remove_leftover(container: Container) -> None:
    """A dead harness's container and the socket directory it was given."""
    socket_dir = (container.labels or {}).get(SOCKET_DIR, "")
    remove(container)
    # Only temp dirs the harness made are ever removed (a tmpfs there is unmounted first).
    if socket_dir.startswith(SOCKET_DIR_PREFIX) and Path(socket_dir).is_dir():
        socketdir.remove_path(Path(socket_dir))


def clean(client: docker.DockerClient, key: str, me: Owner) -> list[str]:
    """Remove leftovers as the module docstring says; return the removed names."""
    log = logs.get("docker")
    removed = []
    for container in client.containers.list(all=True, filters={"label": MANAGED}):
        found = container.labels or {}
        owner = Owner.parse(found.get(OWNER, ""))
        if owner is None or found.get(OWNER) == me.label():
            continue
        # The run key hashes the host name too, so only this host's containers qualify.
        if owner.host != me.host:
            continue
        if owner.alive():
            if found.get(RUN) == key:
                raise ConfigError(
                    f"the run directory {found.get(RUN_DIR)} is in use by a running harness "
                    f"(pid {owner.pid}, container {container.name}); wait for it or stop it first"
                )
            continue
        log.info("removing leftover container", name=container.name, run=found.get(RUN_DIR))
        _remove_leftover(container)
        removed.append(str(container.name))
    return removed
