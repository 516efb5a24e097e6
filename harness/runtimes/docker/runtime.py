"""`DockerRuntime`: a system in its own container, driven over a Unix socket.

Every container start gets a fresh, bounded host directory bind-mounted at
/run/apmbench (`socketdir`), removed with the container, and must serve on
unix:/run/apmbench/sock (also in $APMBENCH_ADDRESS); the harness connects only
to the socket it verified there. Network, root filesystem, user, capabilities
and resources are locked down as `ContainerSettings` says; /proc's and /sys's host-wide
counters are frozen copies or masked (procview.py); every other
writable path is a tmpfs that dies with the container (the image's VOLUMEs
too), and no host path is mounted but the ones the user passes with --mount.
Start-up waits for the socket, then for health SERVING, then runs the canary.
A call that fails because the container died or hangs is re-raised with what
happened to it (exit code, OOM kill, its last output) and where its full log
is. The container is removed when the runtime stops; leftovers of a
harness killed before it could are removed by the next start (`leftovers`).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, NotRequired, TypedDict, TypeVar

import docker
import docker.errors
import requests
from docker.models.containers import Container
from docker.models.images import Image
from docker.types import DeviceRequest, Mount

from apmbench.adapters.sdk import errors
from apmbench.harness.errors import ConfigError, EngineError, RuntimeStartError
from apmbench.harness.json_types import JSON, JsonObject
from apmbench.harness.protocol.client import Deadlines, SystemClient
from apmbench.harness.runtimes import procview, seccomp
from apmbench.harness.runtimes.base import (
    Launch,
    Runtime,
    RuntimeConfig,
    RuntimeRecord,
    tree_cpu_s,
    wait_serving,
)
from apmbench.harness.runtimes.docker import leftovers, masked, socketdir
from apmbench.harness.runtimes.docker.canary import run_canary
from apmbench.harness.runtimes.docker.engine import (
    NO_GPU_DRIVER,
    check_network,
    connect,
    engine_facts,
    find_image,
    image_facts,
    unanswered,
)
from apmbench.harness.runtimes.docker.logstream import LogStream, log_config, tail
from apmbench.harness.runtimes.docker.settings import ContainerRecord, ContainerSettings
from apmbench.harness.runtimes.docker.socketdir import SocketDir, SocketRefused
from apmbench.harness.runtimes.inode_counters import scramble as scramble_inode_counters
from apmbench.harness.runtimes.logcap import DEFAULT_MAX_LOG_BYTES
from apmbench.harness.runtimes.page_cache import ServeCgroup, in_container_cgroup
from apmbench.harness.runtimes.spare_freezer import spare_deadline_s
from apmbench.harness.stopping import uninterrupted

if TYPE_CHECKING:
    from apmbench.harness.runtimes import RuntimeSpec

T = TypeVar("T")
MOUNT = "/run/apmbench"
ADDRESS_IN_CONTAINER = f"unix:{MOUNT}/sock"


class _WatchedClient(SystemClient):
    """A client whose transport failures say what happened to the container."""

    def __init__(
        self,
        address: str,
        deadlines: Deadlines,
        explain: Callable[[errors.ProtocolError], str | None],
        shown_as: str,
    ) -> None:
        super().__init__(address, deadlines)
        # Messages name the socket's path, not the /proc/self/fd link it is reached by.
        self.address = shown_as
        self._explain = explain

    def _call(self, rpc: str, fn: Callable[[], T]) -> T:
        try:
            return super()._call(rpc, fn)
        except (errors.Unavailable, errors.DeadlineExceeded, errors.Cancelled) as e:
            what = self._explain(e)
            if what is None:
                raise
            raise type(e)(f"{e.message}. {what}", rpc=e.rpc) from e


def _uid_gid(user: str) -> tuple[int, int]:
    uid, _, gid = user.partition(":")
    return int(uid), int(gid or uid)


PAUSE_TRIES = 6


def pause_retrying(container: Container) -> None:
    """`docker pause`, tried again when the freeze does not complete: on cgroup v1 runc gives
    up ("unable to freeze") when a process stays busy through its retries, which a loaded
    machine makes likely, and leaves the retry to its caller (runc PR #4388). Waits 0.2,
    0.4, ... 3.2 s between tries; raises the last error. A container that is gone or not
    running fails at once (a 404 or 409 does not change with time)."""
    for attempt in range(PAUSE_TRIES):
        try:
            container.pause()
            return
        except docker.errors.APIError as e:
            status = e.response.status_code if e.response is not None else None
            if status in (404, 409) or attempt == PAUSE_TRIES - 1:
                raise
            time.sleep(0.2 * 2**attempt)


@dataclass(frozen=True)
class DockerConfig(RuntimeConfig):
    """`--image IMAGE` and how its container runs (the container options)."""

    image: str
    """The image as given (a tag or an id)."""
    container: ContainerSettings = field(default_factory=ContainerSettings)
    """Hardened defaults, each relaxation explicit."""

    @property
    def name(self) -> str:
        return self.image

    def spares_allowed(self) -> bool:
        # A spare container on network none shares nothing with the serving one; on another
        # network the serving one could hand its memory over; on a GPU both would read each
        # other's use of the device.
        return self.container.network == "none" and not self.container.gpus.wanted

    def resume_identity(self, runtime: Runtime) -> str:
        # By its id too: a rebuilt image under the same tag is a different system.
        assert isinstance(runtime, DockerRuntime)
        return f"{self.image} ({runtime.image_id})"


class PageCacheRecord(TypedDict):
    reset: bool
    why_not: NotRequired[str]
    rule: str


class DockerSpares(TypedDict):
    frozen_once_loaded: bool
    how: str


class ProcViewRecord(TypedDict):
    frozen: list[str]
    masked: list[str]
    taken: JSON


class DockerRecord(RuntimeRecord):
    """manifest.json's `runtime` for a container."""

    image: JsonObject
    engine: JsonObject
    container: ContainerRecord
    socket_dir: JsonObject
    proc_view: ProcViewRecord
    image_volumes_as_tmpfs: list[str]
    max_log_bytes: int | None
    page_cache: PageCacheRecord
    spares: DockerSpares


class DockerRuntime(Runtime):
    """Runs `image` with the hardened defaults of `settings`; output goes to `log_path`."""

    kind = "docker"
    config_type = DockerConfig

    @classmethod
    def from_spec(cls, spec: RuntimeSpec, launch: Launch) -> DockerRuntime:
        config = spec.config_as(DockerConfig)
        return cls(
            config.image,
            launch.run_dir,
            launch.deadlines,
            config.container,
            launch.startup_timeout_s,
            max_log_bytes=spec.max_log_bytes,
            spare=spec.wants_spare,
            spare_budget_bytes=spec.spare_budget,
        )

    def __init__(
        self,
        image: str,
        run_dir: Path,
        deadlines: Deadlines,
        settings: ContainerSettings | None = None,
        startup_timeout_s: float = 120.0,
        stop_timeout_s: float = 5.0,
        max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
        spare: bool = False,
        spare_budget_bytes: int | None = None,
    ) -> None:
        from apmbench.harness.runtimes.spare_plan import SparePlan

        self.max_log_bytes = max_log_bytes
        self.image_ref = image
        self.run_dir = run_dir
        self.log_path = run_dir / "logs" / "system.log"
        self.deadlines = deadlines
        self.settings = settings or ContainerSettings()
        self.startup_timeout_s = startup_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.key = leftovers.run_key(run_dir)
        self.owner = leftovers.Owner.me()
        self.starts = 0
        self._part = "start"
        self._engine: docker.DockerClient | None = None
        self._image: Image | None = None
        self._facts: JsonObject = {}
        self._proc: procview.ProcView | None = None
        self._dir: SocketDir | None = None
        self._volumes: list[str] = []
        self._container: Container | None = None
        self._logs: LogStream | None = None
        self._client: SystemClient | None = None
        # Containers started ahead of the restarts that will use them, each with its own
        # socket directory (which only it mounts) on network none: nothing of the serving
        # container reaches a spare, and a spare gets no request before it is promoted.
        self.spare = spare
        # Created off the main thread: a container's create and start are engine calls of
        # a second or more on a loaded host, which a restart would otherwise wait for.
        self._spares: collections.deque[Future[_Box]] = collections.deque()
        self._work: ThreadPoolExecutor | None = None
        self._retiring: Future[None] | None = None
        self._retired: list[Container] = []
        self._count = threading.Lock()
        self.spares = SparePlan(spare_budget_bytes)
        if self.settings.gpus.wanted:
            # The engine does not say what a container holds on its GPU: without a budget
            # from the user, no second copy of a model is started beside it.
            self.spares.gpu_cap = 0
        self._spare_number = 0
        self._paused: set[int] = set()
        self._ran_s: dict[int, float] = {}
        """How long each paused spare had run before its pause: its load resumes from there."""
        self._resumed: dict[int, float] = {}
        """When each promoted spare's load would have begun had it never been paused."""
        """Spares paused once loaded (spare_freezer.py says why), by start number."""
        self._spare_lock = threading.Lock()
        self._watcher: threading.Thread | None = None
        self._stopping = threading.Event()
        self._first_load_s: float | None = None
        self._serving_in: dict[str, ServeCgroup] = {}
        """Each serving container's page-cache cgroup (page_cache.py), by container id."""
        self._page_cache_why = ""

    # -- Runtime ---------------------------------------------------------------

    @property
    def can_restart(self) -> bool:
        return True

    @property
    def address(self) -> str:
        assert self._dir is not None, "not started"
        return f"unix:{self._dir.path / 'sock'}"

    @property
    def image_id(self) -> str:
        assert self._image is not None, "not started"
        return str(self._image.id)

    def begin_trajectory(self, trajectory_id: str) -> None:
        self._part = trajectory_id

    def start(self) -> SystemClient:
        if self._engine is not None:
            raise RuntimeStartError("docker runtime already started: use restart()")
        try:
            return self._start()
        except requests.RequestException as e:
            raise unanswered(e, f"while starting {self.image_ref}") from e

    def _start(self) -> SystemClient:
        engine = self._engine = connect()
        self._image = find_image(engine, self.image_ref)
        self._facts = engine_facts(engine)
        check_network(engine, self.settings.network)
        leftovers.clean(engine, self.key, self.owner)
        self._check_user()
        self._proc = procview.current()
        config = self._image.attrs.get("Config") or {}
        self._volumes = sorted(config.get("Volumes") or {})
        scramble_inode_counters()  # what a run before left there is gone (inode_counters.py)
        client = self._launch()
        try:
            run_canary(client)
        except errors.ProtocolError as e:
            self._fail(f"started but failed the start-up canary ({e})")
        return client

    def restart(self) -> SystemClient:
        try:
            return self._restart()
        except requests.RequestException as e:
            raise unanswered(e, f"while restarting {self.image_ref}") from e

    def _restart(self) -> SystemClient:
        asked = time.monotonic()
        if self.spare:
            self._retire()
        else:
            self._remove_container()
        self.spares.restarted(asked)
        # The retired container has stopped: before the next reads anything, what it left
        # in the host's inode-number counters is gone (inode_counters.py).
        scramble_inode_counters()
        box = None
        while box is None and self._spares:
            with self._spare_lock:
                future = self._spares.popleft()
            try:
                box = future.result()
            except (EngineError, docker.errors.APIError, requests.RequestException):
                box = None  # this spare could not be made: the next one, or a new one
                continue
            with self._spare_lock:
                self._unpause(box)  # the live one has stopped and its pages are evicted
            if not _box_running(box):
                self._discard(box)  # it died while waiting: the next one, or a new one
                box = None
        client = self._launch(box, asked)
        self._top_up()
        return client

    def system_described(self, details: Mapping[str, str]) -> None:
        self.spares.declare(details)

    def expect_restarts(self) -> None:
        self._top_up()

    def _worker(self) -> ThreadPoolExecutor:
        if self._work is None:
            self._work = ThreadPoolExecutor(max_workers=3, thread_name_prefix="spares")
        return self._work

    def _retire(self) -> None:
        """Stop and remove the serving container off the main thread: the next one (a
        spare, already started beside it on its own network namespace) serves meanwhile.
        Its log section closes first; the next start's output is held back until then."""
        with uninterrupted():
            if self._client is not None:
                self._client.close()
                self._client = None
            container, logs, directory = self._container, self._logs, self._dir
            self._container, self._logs, self._dir = None, None, None
            if container is None:
                if directory is not None:
                    directory.remove()
                return
            self._retired.append(container)
            self._freeze_and_evict(container)
            self._retiring = self._worker().submit(
                self._take_down, container, logs, directory, self._retiring
            )

    def _take_down(
        self,
        container: Container,
        logs: LogStream | None,
        directory: SocketDir | None,
        before: Future[None] | None,
    ) -> None:
        if before is not None:
            with contextlib.suppress(Exception):
                before.result()  # sections close in start order
        with contextlib.suppress(docker.errors.APIError, requests.RequestException):
            container.stop(timeout=int(self.stop_timeout_s))
        self._release_cgroup(container)
        if logs is not None:
            logs.join()
        with contextlib.suppress(docker.errors.APIError, requests.RequestException):
            leftovers.remove(container)
        if directory is not None:
            directory.remove()

    def _top_up(self) -> None:
        from apmbench.harness.runtimes.process import ProcessRuntime

        if self.spare and self.spares.per_start_bytes is None:
            self.spares.per_start_bytes = self._memory_of(self._container)
        while self.spare and len(self._spares) < self.spares.wanted(ProcessRuntime.SPARES):
            self._spare_number += 1
            name = leftovers.container_name(self.key, f"{self._part}-s{self._spare_number}")
            made = self._worker().submit(self._create, name, False)
            with self._spare_lock:  # the pausing thread walks the deque
                self._spares.append(made)
        if self.spare and self._watcher is None:
            self._watcher = threading.Thread(
                target=self._pause_loaded, name="spare-pauser", daemon=True
            )
            self._watcher.start()

    def _pause_loaded(self) -> None:
        """Pause each spare once its socket appears, or once its load took too long."""
        while not self._stopping.wait(0.05):
            deadline = spare_deadline_s(self._first_load_s, 30.0)
            with self._spare_lock:
                for future in list(self._spares):
                    if not future.done() or future.exception() is not None:
                        continue
                    box = future.result()
                    if box.number in self._paused:
                        continue
                    loaded = os.path.lexists(box.dir.path / socketdir.SOCKET)
                    if loaded or time.monotonic() - box.launched > deadline:
                        with contextlib.suppress(docker.errors.APIError, requests.RequestException):
                            box.container.pause()
                            self._paused.add(box.number)
                            self._ran_s[box.number] = time.monotonic() - box.launched

    def _unpause(self, box: _Box) -> None:
        if box.number in self._paused:
            self._paused.discard(box.number)
            with contextlib.suppress(docker.errors.APIError, requests.RequestException):
                box.container.unpause()
            # The time it sat paused is no part of its load: a spare paused before its socket
            # appeared gets the rest of --startup-timeout from now, not from its launch.
            self._resumed[box.number] = time.monotonic() - self._ran_s.pop(box.number, 0.0)

    def _memory_of(self, container: Container | None) -> int | None:
        """The container's memory use (its model included), from the engine's stats."""
        if container is None:
            return None
        try:
            stats = container.stats(stream=False)
        except (docker.errors.APIError, requests.RequestException):
            return None
        if not isinstance(stats, dict):
            return None
        used = (stats.get("memory_stats") or {}).get("usage")
        return int(used) if used else None

    def _discard(self, box: _Box) -> None:
        with uninterrupted():
            self._unpause(box)
            with contextlib.suppress(docker.errors.APIError, requests.RequestException):
                box.container.stop(timeout=int(self.stop_timeout_s))
            leftovers.remove(box.container)
            box.dir.remove()

    def stop(self) -> None:
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join(5.0)
            self._watcher = None
        retiring = self._retiring
        if retiring is not None:
            # The serving start's section is held back until the one before is closed.
            with contextlib.suppress(Exception):
                retiring.result()
        self._remove_container()
        work, self._work = self._work, None
        if work is not None:
            work.shutdown(wait=True)  # every spare being made is made, then discarded
        self._retiring = None
        with uninterrupted():
            # A take-down the engine refused part of: removed again (gone already is fine).
            while self._retired:
                with contextlib.suppress(docker.errors.APIError, requests.RequestException):
                    leftovers.remove(self._retired.pop())
        with uninterrupted():
            while self._spares:
                future = self._spares.popleft()
                if future.exception() is None:
                    self._discard(future.result())
        if self.starts:
            from apmbench.harness.runtimes.spare_plan import STARTS_FILE

            self.spares.write(self.log_path.parent / STARTS_FILE, self.starts)
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def log_tail(self, lines: int = 15) -> str:
        return tail(self._container, lines) if self._container is not None else ""

    @classmethod
    def resume_facts(cls, recorded: Mapping[str, object]) -> dict[str, object]:
        # The environment's names are the system's own settings, not its confinement: a
        # resume may drop a knob (a test's slow-down, say).
        given = recorded.get("container")
        container = dict(given) if isinstance(given, Mapping) else {}
        container.pop("env_names", None)
        return {
            "kind": recorded.get("kind"),
            "max_log_bytes": recorded.get("max_log_bytes"),
            "container": container,
            "image_volumes_as_tmpfs": recorded.get("image_volumes_as_tmpfs"),
        }

    def describe(self) -> DockerRecord:
        assert self._image is not None, "not started"
        container = self.settings.record()
        # What was applied, not what was asked for: the engine caps --cpus at what it has.
        container["cpus_requested"] = self.settings.cpus
        container["cpus"] = self._applied_cpus()
        container["log_driver"] = log_config(self.max_log_bytes).config | {"type": "json-file"}
        volumes = self._tmpfs_volumes()
        if volumes:
            container["relaxations"] = [
                *container["relaxations"],
                "image declares volumes (each a tmpfs of --tmp-size, never a host volume): "
                + ", ".join(volumes),
            ]
        return {
            "kind": self.kind,
            "image": image_facts(self._image, self.image_ref),
            "engine": self._facts,
            "container": container,
            "socket_dir": socketdir.record(),
            "proc_view": self._proc_facts(),
            "image_volumes_as_tmpfs": volumes,
            "max_log_bytes": self.max_log_bytes,
            "page_cache": self._page_cache_facts(),
            "spares": {"frozen_once_loaded": self.spare, "how": "docker pause"},
        }

    def _page_cache_facts(self) -> PageCacheRecord:
        rule = "pages a start makes resident while it serves are evicted when it stops"
        why = self._page_cache_why
        if why:
            return {"reset": False, "why_not": why, "rule": rule}
        return {"reset": True, "rule": rule}

    def _proc_facts(self) -> ProcViewRecord:
        assert self._proc is not None, "not started"
        return {
            "frozen": [path for _, path in self._proc.docker_binds()],
            "masked": self._proc.docker_masked(),
            "taken": self._proc.describe()["taken"],
        }

    def _applied_cpus(self) -> float | None:
        cpus = self.settings.cpus
        if cpus is None:
            return None
        engine = self._facts.get("cpus")
        return min(cpus, float(engine) if isinstance(engine, int | float) and engine else cpus)

    def _tmpfs_volumes(self) -> list[str]:
        """The image's VOLUMEs that get a bounded tmpfs (those under a --mount or /tmp have
        their own)."""
        taken = {"/tmp", MOUNT, *(m.container.rstrip("/") for m in self.settings.mounts)}
        return [p for p in self._volumes if p.rstrip("/") not in taken]

    # -- containers ------------------------------------------------------------

    def _check_user(self) -> None:
        user = self.settings.user
        uid, _ = _uid_gid(user)
        if os.getuid() != 0 and uid != os.getuid():
            raise ConfigError(
                f"--user {user}: the container creates its socket as that uid, and this harness "
                f"(uid {os.getuid()}) could not connect to it; leave --user unset, or run the "
                "harness as root"
            )

    def _run_options(self, name: str, directory: SocketDir) -> dict[str, Any]:
        s = self.settings
        # An image's VOLUMEs would otherwise be anonymous volumes on the host's disk,
        # unbounded; a tmpfs there dies with the container like /tmp does. The engine
        # keeps the image directory's mode, so the owner must be the container's user.
        uid, gid = _uid_gid(s.user)
        tmpfs = {"/tmp": f"rw,nosuid,nodev,size={s.tmp_bytes},mode=1777"}
        assert self._proc is not None
        # What a container reads of the host's counters was frozen before any system
        # started; the rest is masked at creation (masked.create).
        frozen = [Mount(path, str(copy), type="bind", read_only=True)
                  for copy, path in self._proc.docker_binds()]  # fmt: skip
        for path in self._tmpfs_volumes():
            tmpfs[path] = f"rw,nosuid,nodev,size={s.tmp_bytes},uid={uid},gid={gid}"
        options: dict[str, Any] = {
            "name": name,
            "labels": leftovers.labels(
                self.key, self.run_dir, self._part, self.owner, directory.path
            ),
            "environment": {**dict(s.env), "APMBENCH_ADDRESS": ADDRESS_IN_CONTAINER},
            "mounts": [
                Mount(MOUNT, str(directory.path), type="bind", read_only=False),
                *(Mount(m.container, m.host, type="bind", read_only=m.read_only) for m in s.mounts),
                *frozen,
            ],
            "network_mode": s.network,
            "read_only": s.read_only_root,
            "tmpfs": tmpfs,
            "user": s.user,
            "cap_drop": ["ALL"],
            "cap_add": list(s.cap_add) or None,
            # The sandbox's filter too: no lock inspection, page-cache residency or file
            # events between two containers of one image (seccomp.py says why).
            "security_opt": [
                *(["no-new-privileges"] if s.no_new_privileges else []),
                f"seccomp={seccomp.docker_profile(network=s.ip_sockets)}",
            ],
            # docker-init as PID 1 forwards SIGTERM; without it the server
            # ignores it and every stop waits for the kill timeout.
            "init": True,
            "shm_size": s.shm_bytes,
            "log_config": log_config(self.max_log_bytes),
        }
        if s.memory_bytes is not None:
            options["mem_limit"] = s.memory_bytes
            options["memswap_limit"] = s.memory_bytes  # equal: no swap on top
        cpus = self._applied_cpus()
        if cpus is not None:
            # The engine refuses more CPUs than it has.
            options["nano_cpus"] = int(cpus * 1e9)
        if s.pids is not None:
            options["pids_limit"] = s.pids
        if s.gpus.wanted:
            request = (
                DeviceRequest(device_ids=list(s.gpus.device_ids), capabilities=[["gpu"]])
                if s.gpus.device_ids
                else DeviceRequest(count=s.gpus.count, capabilities=[["gpu"]])
            )
            options["device_requests"] = [request]
        return options

    def _create(self, name: str, guarded: bool = True) -> _Box:
        """A container created and started in a fresh socket directory, not waited for.
        Off the main thread (`guarded` False) no stop signal can cut it: the signal is
        raised in the main thread, whose stop() waits for this and removes what it made."""
        engine = self._engine
        assert engine is not None and self._image is not None
        self._remove_own(engine, name)
        uid, gid = _uid_gid(self.settings.user)
        box: list[Container] = []

        def overflowed(what: str) -> None:
            # The socket directory's watch (harness not root) found it over its bound.
            for container in box:
                with contextlib.suppress(docker.errors.APIError, requests.RequestException):
                    container.kill()

        # A stop signal between making the socket directory or the container and keeping
        # it would leak it.
        with uninterrupted() if guarded else contextlib.nullcontext():
            directory = SocketDir.create(uid, gid, on_overflow=overflowed)
            try:
                # By id, not tag: exactly the image recorded in the manifest, even
                # if the tag is moved while the run goes on.
                assert self._proc is not None
                container = masked.create(
                    engine,
                    self.image_id,
                    self._run_options(name, directory),
                    self._proc.docker_masked(),
                )
            except docker.errors.APIError as e:
                directory.remove()
                raise EngineError(
                    f"the engine refused to create a container of {self.image_ref}: "
                    f"{e.explanation or e}"
                ) from e
            except EngineError:
                directory.remove()  # the engine ignored the masks: nothing was kept
                raise
            box.append(container)
            try:
                container.start()
            except docker.errors.APIError as e:
                leftovers.remove(container)
                directory.remove()
                text = str(e.explanation or e)
                if NO_GPU_DRIVER in text:
                    raise EngineError(
                        f"--gpus {self.settings.gpus.describe()}: the Docker engine has no GPU "
                        f"runtime (it answered: {text}). Install the NVIDIA Container Toolkit and "
                        "configure it for Docker (`nvidia-ctk runtime configure --runtime=docker`, "
                        "then restart dockerd), or run a CPU image with --gpus none"
                    ) from e
                raise EngineError(f"the engine could not start {self.image_ref}: {text}") from e
            with self._count:
                self.starts += 1
                number = self.starts
            return _Box(name, directory, container, number, time.monotonic())

    def _launch(self, spare: _Box | None = None, asked: float | None = None) -> SystemClient:
        asked = time.monotonic() if asked is None else asked
        engine = self._engine
        assert engine is not None
        self._remove_dir()
        if spare is None:
            spare = self._create(leftovers.container_name(self.key, self._part))
        self._dir, self._container = spare.dir, spare.container
        name = spare.name
        container = spare.container
        # Its output reaches the log only now: a spare's start-up lines come with its promotion.
        retiring = self._retiring
        self._logs = LogStream(
            container,
            self.log_path,
            f"container {name} ({self.image_ref}) start #{spare.number}",
            self.max_log_bytes,
            deferred=retiring is not None,
        ).start()
        if retiring is not None:
            section = self._logs.section
            assert section is not None
            retiring.add_done_callback(lambda _: section.activate())
        launched = self._resumed.pop(spare.number, spare.launched)
        deadline = launched + self.startup_timeout_s
        try:
            pinned = self._dir.wait_socket(
                max(deadline - time.monotonic(), 1.0), alive=self._running
            )
        except SocketRefused as e:
            self._fail(f"was refused: {e}")
        except (ChildProcessError, TimeoutError) as e:
            self._fail(f"did not become ready: it {e}")
        client = _WatchedClient(pinned, self.deadlines, self._explain, shown_as=self.address)
        self._client = client
        try:
            wait_serving(client, max(deadline - time.monotonic(), 1.0), self._running)
        except errors.Unimplemented:
            self._fail(
                "does not serve the gRPC health service (grpc.health.v1.Health) that the "
                "harness waits on: serve the system with the SDK's serve(), which adds it"
            )
        except errors.Unavailable as e:
            self._fail(f"did not become ready: {e}")
        self._serve_in_cgroup(container)
        if self._first_load_s is None:
            self._first_load_s = time.monotonic() - spare.launched
        self.spares.served(spare.launched, asked, time.monotonic(), self._cpu_s)
        return client

    def _serve_in_cgroup(self, container: Container) -> None:
        """Before its first request: pages it makes resident from now on leave with it."""
        try:
            container.reload()
            pid = int(container.attrs["State"]["Pid"])
        except (docker.errors.APIError, requests.RequestException, KeyError, ValueError):
            pid = 0
        cgroup = in_container_cgroup(pid) if pid else None
        if cgroup is None:
            self._page_cache_why = "the container's memory cgroup is not writable here"
            return
        # Paused while its processes move: none is born behind the move.
        try:
            pause_retrying(container)
        except (docker.errors.APIError, requests.RequestException) as e:
            self._fail(f"could not be paused to enter its serve cgroup ({e})")
        try:
            cgroup.serving()
        except RuntimeStartError as e:
            self._fail(str(e))
        finally:
            with contextlib.suppress(docker.errors.APIError, requests.RequestException):
                container.unpause()
        if container.id:
            self._serving_in[container.id] = cgroup

    def _freeze_and_evict(self, container: Container) -> None:
        """A retiring container is stopped off the main thread while the next one serves:
        paused and its pages evicted first, so the next one reads nothing it set; killed
        while paused (a stop would thaw it for its grace period)."""
        cgroup = self._serving_in.get(container.id or "")
        if cgroup is None:
            return
        try:
            pause_retrying(container)
        except (docker.errors.APIError, requests.RequestException):
            # Gone already, or a freeze that never completed on a loaded machine: killed,
            # its processes read nothing more, and its pages are evicted all the same (the
            # serve cgroup outlives them until `_release_cgroup`).
            with contextlib.suppress(docker.errors.APIError, requests.RequestException):
                container.kill()
                container.wait(timeout=30)
            cgroup.evict()
            return
        cgroup.evict()
        with contextlib.suppress(docker.errors.APIError, requests.RequestException):
            container.kill()

    def _release_cgroup(self, container: Container) -> None:
        """After it stopped, before its removal: its pages evicted, the cgroup removed."""
        cgroup = self._serving_in.pop(container.id or "", None)
        if cgroup is not None:
            cgroup.release()

    def _cpu_s(self) -> float | None:
        """CPU the serving container has used, read from /proc through its init's pid as
        the engine reports it; None unless that pid is in the container's own cgroup here
        (an engine whose pids are not this kernel's, such as a VM's)."""
        container = self._container
        if container is None:
            return None
        pid = (container.attrs.get("State") or {}).get("Pid")
        if not isinstance(pid, int) or pid <= 0:
            return None
        try:
            cgroup = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            return None
        return tree_cpu_s(pid) if container.id and container.id in cgroup else None

    def _running(self) -> bool:
        container = self._container
        if container is None:
            return False
        try:
            container.reload()
        except docker.errors.NotFound:
            return False
        return container.status in ("created", "running")

    def _state(self, settle_s: float = 2.0) -> dict[str, Any]:
        """The container's state, waiting briefly for a dying one to be marked exited."""
        container = self._container
        if container is None:
            return {}
        deadline = time.monotonic() + settle_s
        while True:
            try:
                container.reload()
            except (docker.errors.APIError, requests.RequestException):
                return {}
            state: dict[str, Any] = container.attrs.get("State") or {}
            if not state.get("Running") or time.monotonic() >= deadline:
                return state
            time.sleep(0.05)

    def _what_happened(self, state: dict[str, Any]) -> str:
        container = self._container
        assert container is not None
        if self._dir is not None and self._dir.overflow is not None:
            return self._dir.overflow
        if not state:
            return f"container {container.name} is gone (removed from outside?)"
        if state.get("Running"):
            return f"container {container.name} is still running"
        code = state.get("ExitCode")
        text = f"container {container.name} exited with code {code}"
        if state.get("OOMKilled"):
            limit = self.settings.memory_bytes
            size = f"{limit / (1 << 20):.0f} MiB" if limit else "no"
            text += f" (killed for running out of memory at its {size} limit: raise --memory)"
        elif code == 137:
            text += " (SIGKILL: killed from outside, e.g. `docker kill`, or by the kernel)"
        elif code == 139:
            text += " (segmentation fault)"
        elif state.get("Error"):
            text += f" ({state['Error']})"
        return text

    def _explain(self, error: errors.ProtocolError) -> str | None:
        """What the container was doing when a call failed, for the error message."""
        if self._container is None:
            return None
        state = self._state()
        what = self._what_happened(state)
        if state.get("Running") and isinstance(error, errors.DeadlineExceeded):
            seconds, flag = self.deadlines.of(error.rpc or "")
            what += (
                f" but did not answer {error.rpc or 'the call'} within its {seconds:g} s: it "
                f"hangs or is too slow (raise {flag} if it needs longer); it is being stopped"
            )
        output = tail(self._container)
        if output:
            what += f"; its last output:\n{output}\n"
        return what + f"Its full log is in {self.log_path}"

    def _fail(self, what: str) -> NoReturn:
        """Raise RuntimeStartError with the container's fate and output, and remove it."""
        state = self._state(settle_s=0.5)
        message = f"image {self.image_ref} {what}."
        if not state.get("Running"):
            message += f" {self._what_happened(state)}."
        output = tail(self._container) if self._container is not None else ""
        message += f" Its last output:\n{output}\n" if output else " "
        message += f"Its full log is in {self.log_path}"
        self.stop()
        raise RuntimeStartError(message)

    def _remove_own(self, engine: docker.DockerClient, name: str) -> None:
        """A container of this harness with the same name (an earlier, failed start) goes first."""
        try:
            existing = engine.containers.get(name)
        except docker.errors.NotFound:
            return
        found = existing.labels or {}
        if found.get(leftovers.OWNER) == self.owner.label() and leftovers.proved(found):
            leftovers.remove(existing)

    def _remove_container(self) -> None:
        # A stop signal in the middle of the removal would leave the rest of it undone.
        with uninterrupted():
            self._remove_container_now()

    def _remove_container_now(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        container, self._container = self._container, None
        if container is not None:
            # Paused and its pages evicted before the engine stops it, as a retiring one is:
            # the engine removes the container's cgroup, the serve cgroup nested in it with
            # it, and the kernel hands the pages charged there to the parent, where no
            # eviction finds them (`_release_cgroup` then found no cgroup and reclaimed 0):
            # a red team recovered 7 of 13 sessions through `--image --no-spare`.
            self._freeze_and_evict(container)
            # Already gone or dead: the removal below still applies.
            with contextlib.suppress(docker.errors.APIError, requests.RequestException):
                container.stop(timeout=int(self.stop_timeout_s))
            self._release_cgroup(container)
            if self._logs is not None:
                self._logs.join()
            leftovers.remove(container)
        self._logs = None
        self._remove_dir()

    def _remove_dir(self) -> None:
        """The socket directory goes with its container: the next one starts empty."""
        found, self._dir = self._dir, None
        if found is not None:
            found.remove()


@dataclasses.dataclass(frozen=True)
class _Box:
    """A started container and its socket directory: its name, start number and when."""

    name: str
    dir: SocketDir
    container: Container
    number: int
    launched: float


def _box_running(box: _Box) -> bool:
    try:
        box.container.reload()
    except (docker.errors.APIError, requests.RequestException):
        return False
    return box.container.status in ("created", "running")
