"""Names and labels of the harness's containers, and removal of those a killed harness left.

A harness killed with SIGKILL cannot remove its container. Every container
therefore carries labels naming its run and its harness process (host, pid,
process start time), and a fixed name per (run, trajectory). When a runtime
starts it removes:

- every container whose harness on this host is dead (a resumed run's own
  leftovers, and those of runs nobody resumes);
- none of a live harness: if that harness runs the same run directory,
  starting fails instead (the two would fight over it);
- every socket directory named by a dead harness (`socketdir.remove_dead`),
  labelled by a container or not.

Containers of other hosts sharing the engine are never touched, and neither is
anything this harness cannot prove it made: labels can be copied by anyone who
can create a container, so every container also carries `PROOF`, an HMAC of its
labels under a secret only the harness's own state holds (`secret_key`). A
container without a valid proof is left alone, and a socket directory is
removed only when its label names, with no link and no `..`, a directory
directly in /tmp with the harness's prefix.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
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
PROOF = "org.apmbench.proof"
_PROVED = (RUN, RUN_DIR, TRAJECTORY, OWNER, SOCKET_DIR)
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


def secret_key() -> bytes:
    """This user's harness secret (made once, readable by this user only), in the cache
    that no system under evaluation sees."""
    from apmbench.harness.paths import cache_root

    path = cache_root() / "leftovers.key"
    try:
        return path.read_bytes()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes()  # another harness made it just now
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_bytes(32))
    return path.read_bytes()


def proof(found: dict[str, str], key: bytes | None = None) -> str:
    text = "\n".join(f"{name}={found.get(name, '')}" for name in _PROVED)
    return hmac.new(key or secret_key(), text.encode(), hashlib.sha256).hexdigest()


def proved(found: dict[str, str], key: bytes | None = None) -> bool:
    """Whether labels were written by a harness holding this user's secret."""
    return hmac.compare_digest(found.get(PROOF, ""), proof(found, key))


def labels(key: str, run_dir: Path, part: str, owner: Owner, socket_dir: Path) -> dict[str, str]:
    found = {
        MANAGED: "1",
        RUN: key,
        RUN_DIR: str(run_dir.resolve()),
        TRAJECTORY: part,
        OWNER: owner.label(),
        SOCKET_DIR: str(socket_dir),
    }
    return {**found, PROOF: proof(found)}


def own_socket_dir(label: str) -> Path | None:
    """The socket directory a label names, if it is one this harness could have made: an
    absolute path, directly in the prefix's directory, with the prefix, reached through no
    link and no `..`; else None."""
    if not label.startswith(SOCKET_DIR_PREFIX):
        return None
    path = Path(label)
    base = Path(SOCKET_DIR_PREFIX).parent
    if ".." in path.parts or path.parent != base:
        return None
    real = Path(os.path.realpath(path))
    if real != path or path.is_symlink() or not path.is_dir():
        return None
    return path


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
    own = own_socket_dir((container.labels or {}).get(SOCKET_DIR, ""))
    remove(container)
    # Only temp dirs the harness made are ever removed (a tmpfs there is unmounted first).
    if own is not None:
        socketdir.remove_path(own)


def clean(client: docker.DockerClient, key: str, me: Owner) -> list[str]:
    """Remove leftovers as the module docstring says; return the removed names."""
    log = logs.get("docker")
    removed = []
    foreign = []
    secret = secret_key()
    # A container removed between the engine's list and its inspect (another run's
    # stop, on a shared engine) is no leftover: the list skips it instead of failing.
    listed = client.containers.list(all=True, filters={"label": MANAGED}, ignore_removed=True)
    for container in listed:
        found = container.labels or {}
        if not proved(found, secret):
            # Copied labels: not this harness's to remove, whatever they claim.
            foreign.append(str(container.name))
            continue
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
    if foreign:
        # Once per start, not once per container: on a shared engine (another user's
        # harness, a test's forged labels) there can be many, at every start.
        log.info(
            "leaving containers this harness did not make (its labels, not its proof)",
            count=len(foreign),
            names="-v lists them",
        )
        log.debug("containers this harness did not make", names=", ".join(sorted(foreign)))
    # Socket directories no container names any more (the harness was killed between
    # making one and labelling its container, or between removing the two).
    for path in socketdir.remove_dead():
        log.info("removed a leftover socket directory", path=str(path))
    return removed
