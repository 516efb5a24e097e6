"""`--system NAME|module:Class`: a registered system or a class, served as a child process
of the harness (`ProcessRuntime`) on a Unix socket; it can restart it (for `restart`
persistence).

Each start runs `python -m apmbench.adapters SYSTEM --address unix:DIR/sock` in a fresh
socket directory (socket_dirs.py): in a bubblewrap sandbox (sandbox.py) unless
`--no-sandbox`, either in a fresh box or forked from the run's pre-imported template
(`--start template`: template.py, template_facts.py), in its own cgroups where the harness
may make them (start_cgroups.py). Its output is pumped into a bounded section of the
system's log (log_pump.py, logcap.py); the runtime waits until it serves and talks to it
only through a real socket. Spares, the next restarts' processes, are started while it
serves, as many as `SparePlan` says (spare_plan.py), and frozen once loaded
(spare_freezer.py).

Here too are the `--system` settings and record (`ProcessConfig`, `ProcessRecord`) and
`sandboxed_process`, which builds the runtime from the command line's options as `evaluate`
and `check` do. What a `--command` process shares with it is in local_config.py; its
runtime, `CommandRuntime` (command.py), extends `ProcessRuntime`.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import psutil

from apmbench.adapters.sdk import errors
from apmbench.harness.errors import ConfigError, RuntimeStartError
from apmbench.harness.protocol.client import Deadlines, SystemClient
from apmbench.harness.runtimes import owned_dirs
from apmbench.harness.runtimes.base import (
    Confinement,
    Launch,
    Runtime,
    RuntimeConfig,
    ServerProcess,
    descendants,
    reap_group,
    tree_cpu_s,
    wait_serving,
)
from apmbench.harness.runtimes.docker.settings import GpuRequest
from apmbench.harness.runtimes.inode_counters import scramble as scramble_inode_counters
from apmbench.harness.runtimes.local_config import (
    LocalConfig,
    LocalFacts,
    LocalRecord,
    gpu_passthrough,
)
from apmbench.harness.runtimes.log_pump import pump_log
from apmbench.harness.runtimes.logcap import DEFAULT_MAX_LOG_BYTES, LogSection
from apmbench.harness.runtimes.sandbox import UNCONFINED_NOTE, Sandbox, unconfined
from apmbench.harness.runtimes.socket_dirs import DIR_BASE, DIR_PREFIX, remove_dead_dirs
from apmbench.harness.runtimes.spare_freezer import spare_deadline_s
from apmbench.harness.runtimes.spare_plan import STARTS_FILE, SparePlan
from apmbench.harness.runtimes.start_cgroups import StartCgroups, StartGroup
from apmbench.harness.runtimes.template_facts import TEMPLATE_FACTS, TEMPLATE_LOG
from apmbench.harness.stopping import uninterrupted

START_MODES = ("fresh", "template")
"""How a sandboxed start begins (`--start`): a fresh bubblewrap box and interpreter, or a
fork of the run's pre-imported template (harness/runtimes/template.py)."""


if TYPE_CHECKING:
    from apmbench.harness.runtimes import RuntimeSpec
    from apmbench.harness.runtimes.template import Template


@dataclass(frozen=True, kw_only=True)
class ProcessConfig(LocalConfig):
    """`--system NAME|module:Class`: a registered system or a class, served as a process."""

    system: str
    """A registered system name or "module:Class", as given."""
    start: str = "fresh"
    """`--start`: how a sandboxed process starts: "fresh" (a new bubblewrap box and
    interpreter each time), "template" (a fork of the run's pre-imported template,
    confined further before the system loads; harness/runtimes/template.py) or "snapshot"
    (a restore of one pristine snapshot in gVisor; harness/runtimes/snapshot.py)."""

    @property
    def name(self) -> str:
        return self.system

    def check(self) -> None:
        if ":" in self.system:
            return
        from apmbench.adapters.systems import SYSTEM_REGISTRY, UnknownSystem

        try:
            SYSTEM_REGISTRY.entry(self.system)
        except UnknownSystem as e:
            raise ConfigError(str(e)) from e

    def resume_identity(self, runtime: Runtime) -> str:
        return self.system


class ProcessRecord(LocalRecord):
    """A `--system` process's: it names its system and the interpreter."""

    system: str
    python: str


class ProcessRuntime(Runtime):
    """Runs SPEC (as `apmbench-grpc serve` would) in a subprocess; output goes to `log_path`.

    With a `sandbox`, the process runs inside it; every start gets a fresh socket
    directory (the only host path it may write), removed when the process stops, so
    nothing but ImportState reaches the next process.
    """

    kind = "process"
    config_type: ClassVar[type[RuntimeConfig]] = ProcessConfig
    bound_socket_dir = True
    """False only in tests that show what the bound stops: the sandbox then binds the host's
    socket directory read-write, unbounded, as it once did."""

    @classmethod
    def from_spec(cls, spec: RuntimeSpec, launch: Launch) -> Runtime:
        config = spec.config_as(ProcessConfig)
        return sandboxed_process(
            served_target(config.system),
            launch.run_dir / "logs" / "system.log",
            launch.deadlines,
            launch.startup_timeout_s,
            sandbox=config.sandbox,
            env=config.env,
            hidden=(*launch.hidden, launch.run_dir),
            share_net=config.sandbox_net,
            max_log_bytes=spec.max_log_bytes,
            spare=spec.wants_spare,
            spare_budget_bytes=spec.spare_budget,
            start=config.start,
            gpus=config.gpus,
        )

    @classmethod
    def resume_facts(cls, recorded: Mapping[str, object]) -> dict[str, object]:
        sandbox = recorded.get("sandbox")
        box = sandbox if isinstance(sandbox, Mapping) else {}
        out: dict[str, object] = {
            "kind": recorded.get("kind"),
            "max_log_bytes": recorded.get("max_log_bytes"),
            "sandbox": {k: box.get(k) for k in ("confined", "tool", "network", "tmp_size_bytes")},
        }
        if recorded.get("start") in ("template", "snapshot"):  # fresh starts record as before
            out["start"] = str(recorded["start"])
        return out

    @classmethod
    def confinement_facts(cls, recorded: Mapping[str, object]) -> Confinement | None:
        sandbox = recorded.get("sandbox")
        if not isinstance(sandbox, Mapping) or not sandbox.get("confined"):
            # A process run from before the sandbox existed was unconfined too.
            return {"confined": False, "note": UNCONFINED_NOTE}
        facts: Confinement = {
            "confined": True,
            "tool": sandbox.get("tool", "bubblewrap"),
            "network": sandbox.get("network", "none"),
        }
        if recorded.get("start") in ("template", "snapshot"):  # a fresh start's stays as it was
            facts["start"] = str(recorded["start"])
        gpu = sandbox.get("gpu")
        if isinstance(gpu, dict) and gpu.get("request"):  # a CPU run's report stays as it was
            facts["gpus"] = gpu["request"]
        bound = sandbox.get("read_only")
        if isinstance(bound, list) and bound:
            facts["host_paths"] = [str(p) for p in bound]
        return facts

    def __init__(
        self,
        system: str,
        log_path: Path,
        deadlines: Deadlines,
        startup_timeout_s: float = 60.0,
        env: dict[str, str] | None = None,
        sandbox: Sandbox | None = None,
        max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
        spare: bool = False,
        spare_budget_bytes: int | None = None,
        start: str = "fresh",
    ) -> None:
        if start not in START_MODES:
            raise ValueError(f"start mode {start!r}: one of {', '.join(START_MODES)}")
        if start == "template" and sandbox is None:
            raise ValueError("template starts need the sandbox")
        self.start_mode = start
        self._template: Template | None = None
        self.system = system
        self.max_log_bytes = max_log_bytes
        self.log_path = log_path
        self.deadlines = deadlines
        self.startup_timeout_s = startup_timeout_s
        self.env = env
        self.sandbox = sandbox
        self.starts = 0
        self._dir: Path | None = None
        self._root: int | None = None
        """A descriptor of the sandboxed system's root: the socket lies in the box's own
        bounded tmpfs, reached through it (held open, so a reused pid cannot redirect it)."""
        self._proc: ServerProcess | None = None
        self._client: SystemClient | None = None
        self._log: LogSection | None = None
        self._pump: threading.Thread | None = None
        self.spare = spare
        self._spares: collections.deque[_Launch] = collections.deque()
        self.spares = SparePlan(spare_budget_bytes)
        self._serving = 0
        # Every directory and process this runtime made, recorded in the same
        # uninterrupted step that made it: a stop signal landing after that step but
        # before the launch is kept (start's bookkeeping, a spare's append) would leak
        # them otherwise; stop() removes whatever is still here.
        self._made: list[tuple[Path, ServerProcess | None]] = []
        self._groups = StartCgroups() if sandbox is not None else None
        """Each confined start's own cgroups (start_cgroups.py): page-cache reset, frozen
        spares, a bound on its tasks."""
        self._group: StartGroup | None = None
        self._spare_lock = threading.Lock()
        self._watcher: threading.Thread | None = None
        self._stopping = threading.Event()
        self._first_load_s: float | None = None

    @property
    def can_restart(self) -> bool:
        return True

    @property
    def address(self) -> str:
        if self._dir is None:
            raise RuntimeStartError("process runtime not started: no address yet")
        return f"unix:{self._dir / 'sock'}"

    @property
    def client_address(self) -> str:
        """Where the harness dials: the address itself, or for a sandboxed system the same
        path inside the box, through its root."""
        return f"unix:{self._host_sock()}"

    def _host_sock(self) -> Path:
        assert self._dir is not None
        if self._root is None:
            return self._dir / "sock"
        return Path(f"/proc/self/fd/{self._root}{self._dir}/sock")

    def _alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> SystemClient:
        if self._proc is not None:
            raise RuntimeStartError("process runtime already started: use restart()")
        asked = time.monotonic()
        # Before the start reads anything (a spare is thawed below): what the one before
        # left in the host's inode-number counters is gone (inode_counters.py).
        scramble_inode_counters()
        launch: _Launch | None = None
        while launch is None and self._spares:
            with self._spare_lock:
                launch = self._spares.popleft()
                if launch.group is not None:
                    launch.group.thaw()  # the live one has stopped
            if launch.proc.poll() is not None:
                launch.discard()  # it died while waiting: the next one, or a new one
                launch = None
        fresh = launch is None
        launch = launch or self._launch(spare=False)
        # Its section reaches the log only now that the previous start's is closed.
        launch.log.activate()
        self._dir, self._proc, self._serving = launch.dir, launch.proc, launch.number
        self._log, self._pump = launch.log, launch.pump
        deadline = time.monotonic() + self.startup_timeout_s
        self._wait_socket(deadline)
        client = SystemClient(self.client_address, self.deadlines)

        def dialable() -> bool:
            # A link put in the socket's place resolves, through the box's root, against
            # the harness's own root: nothing to wait for, and the refusal below says why.
            return self._alive() and not os.path.islink(self._host_sock())

        try:
            wait_serving(client, max(deadline - time.monotonic(), 1.0), dialable)
        except errors.Unavailable as e:
            client.close()
            if os.path.islink(self._host_sock()):
                self._check_socket()
            code = self._proc.poll()
            self._kill()
            raise RuntimeStartError(
                f"system {self.system!r} did not start"
                + (f" (exit code {code})" if code is not None else "")
                + f": {e}. The end of its output ({self.log_path}):\n"
                + (self.log_tail() or "(no output)")
                + self._sandbox_hint()
            ) from e
        self._check_socket()
        if fresh and self._first_load_s is None:
            self._first_load_s = time.monotonic() - launch.launched
        self._group = launch.group
        if launch.group is not None:
            # Before the first request: what it reads from now on leaves with it.
            try:
                launch.group.serving()
            except RuntimeStartError:
                client.close()
                self._kill()
                raise
        self._client = client
        pid = launch.proc.pid
        self.spares.served(launch.launched, asked, time.monotonic(), lambda: tree_cpu_s(pid))
        return client

    def _sandbox_hint(self) -> str:
        """What the sandbox let the server see, for a server that died before SERVING: the
        usual cause is a file or variable it expected and the box did not pass."""
        if self.sandbox is None:
            return ""
        policy = self.sandbox.policy
        readable = ", ".join(str(p) for p in policy.read_only) or "(none)"
        passed = ", ".join(sorted(policy.env)) or "(none)"
        masked = ", ".join(str(p) for p in self.sandbox.masked()) or "(none)"
        return (
            f"\nIn its sandbox it could read only the system directories and: {readable}; "
            f"masked: {masked}; environment variables passed: {passed}. Its /tmp is a fresh "
            "empty one: of the host's /tmp it sees only the paths listed here. To pass more, name "
            "the path on the command line (its directory becomes readable) and add "
            "--env NAME=VALUE or --env NAME for a variable; --no-sandbox runs it unconfined "
            "(the report then says so)."
            + (
                f" It was forked from the start template (--start template; the template's "
                f"own output is in {self.log_path.parent / TEMPLATE_LOG}): --start fresh "
                "starts it in a fresh box instead."
                if self.start_mode == "template"
                else ""
            )
        )

    def _launch(self, spare: bool) -> _Launch:
        """A fresh process in a fresh socket directory, not waited for. A spare's output is
        held back until it is promoted, so two live processes never share a log section."""
        self.starts += 1
        if self.starts == 1:  # leftovers of killed harnesses: once, not on every restart
            remove_dead_dirs()
        self._made = [(d, p) for d, p in self._made if d.exists() or (p and p.poll() is None)]
        # Unix socket paths are limited to 107 bytes: keep the directory short. The
        # harness's pid in the name (which the system cannot change) lets a later harness
        # remove it when this one was killed before it could.
        with uninterrupted():
            directory = Path(
                tempfile.mkdtemp(prefix=owned_dirs.name_prefix(DIR_PREFIX), dir=DIR_BASE)
            )
            self._made.append((directory, None))
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("PYTHONUNBUFFERED", "1")
        current, self._dir = self._dir, directory
        try:
            cmd = self.argv()  # overridable; it reads `address`, i.e. this launch's directory
        finally:
            self._dir = current
        group = self._groups.for_start(self.starts) if self._groups is not None else None
        if self.start_mode == "template":
            return self._fork_launch(cmd, directory, spare, group)
        if self.sandbox is not None:
            cmd = (
                self.sandbox.wrap(cmd, bounded=[directory])
                if self.bound_socket_dir
                else self.sandbox.wrap(cmd, writable=[directory])
            )
        if group is not None:
            cmd = group.enter_argv(cmd)  # born in its cgroups: nothing of it runs outside
        log = LogSection(
            self.log_path,
            f"start #{self.starts}: serve {self.system}",
            self.max_log_bytes,
            deferred=spare,
        )
        # Through a pipe the harness reads, not straight into the file, so the output is
        # bounded; it keeps being read past the bound, so a flooding system never blocks.
        stdin = self.sandbox.stdin() if self.sandbox is not None else subprocess.DEVNULL
        with uninterrupted():  # a stop signal now would orphan the child
            try:
                proc = subprocess.Popen(
                    cmd,
                    stdin=stdin,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                    cwd=self.cwd,
                )
            finally:
                if stdin != subprocess.DEVNULL:
                    os.close(stdin)
            self._made.append((directory, proc))
            assert proc.stdout is not None
            pump = threading.Thread(
                target=pump_log, args=(proc.stdout, log), name="system-log", daemon=True
            )
            pump.start()
        return _Launch(self.starts, directory, proc, log, pump, time.monotonic(), group)

    def _fork_launch(
        self, cmd: list[str], directory: Path, spare: bool, group: StartGroup | None = None
    ) -> _Launch:
        """A start forked from the run's template (started with the first start)."""
        from apmbench.harness.runtimes.template import Template

        assert self.sandbox is not None
        if cmd[1:3] != ["-m", "apmbench.adapters"]:
            raise ConfigError(
                f"--start template runs `python -m apmbench.adapters SYSTEM ...` only, not "
                f"{' '.join(cmd[:3])} ...: use --start fresh"
            )
        log = LogSection(
            self.log_path,
            f"start #{self.starts}: serve {self.system}",
            self.max_log_bytes,
            deferred=spare,
        )
        with uninterrupted():  # a stop signal now would orphan the child
            if self._template is None:
                self._template = Template(self.sandbox, self.log_path.parent / TEMPLATE_LOG)
            proc = self._template.launch(cmd, directory, group.place if group else None)
            self._made.append((directory, proc))
            pump = threading.Thread(
                target=pump_log, args=(proc.stdout, log), name="system-log", daemon=True
            )
            pump.start()
        return _Launch(self.starts, directory, proc, log, pump, time.monotonic(), group)

    SPARES = 2
    """Spares kept ready at least: a fork that stops at its question can end before one
    spare has started, so the next restart would still wait; two start during two
    segments. More when a start takes longer than the segments, fewer when the host's cores
    cannot start two at once (`SparePlan`)."""

    SOCKET_POLL_S = 0.002

    def _wait_socket(self, deadline: float) -> None:
        """Return once the socket file exists (or the process died, or time is up; the
        health wait then reports which). A gRPC channel dialled before the server listens
        backs off exponentially between attempts, which cost about 150 ms per start, more
        than the null system's whole start-up; a stat every 2 ms costs nothing, and the
        first dial then meets a listening socket."""
        assert self._dir is not None and self._proc is not None
        self._close_root()
        while time.monotonic() < deadline and self._alive():
            if self.sandbox is None or not self.bound_socket_dir:
                if os.path.lexists(self._dir / "sock"):
                    return
            elif self._found_root(self._proc.pid):
                return
            time.sleep(self.SOCKET_POLL_S)

    def _found_root(self, bwrap_pid: int) -> bool:
        """Whether the box's socket exists; if so, its root is now held in `_root`. Any
        process in the box's mount namespace will do (bwrap's child, or one further down
        when bwrap itself is wrapped); its root is the box's only once bwrap has set the
        box up, and the socket appears only after. The host directory stays empty, so a
        process outside the box never shows a socket there."""
        assert self._dir is not None
        for child in descendants(bwrap_pid):
            root = f"/proc/{child}/root"
            if not os.path.lexists(f"{root}{self._dir}/sock"):
                continue
            try:
                fd = os.open(root, os.O_PATH | os.O_DIRECTORY)
            except OSError:
                continue
            self._root = fd
            if os.path.lexists(self._host_sock()):  # still the box: not a reused pid
                return True
            self._close_root()
        return False

    def _close_root(self) -> None:
        fd, self._root = self._root, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    cwd: Path | None = None
    """Where the server process starts (unsandboxed; a sandbox sets its own)."""

    def argv(self) -> list[str]:
        """The server's command line for the current start (its address is fresh each time)."""
        return [
            sys.executable,
            "-m",
            "apmbench.adapters",
            self.system,
            "--address",
            self.address,
            "--exit-with-parent",
        ]

    def _check_socket(self) -> None:
        """The harness connects only to a real socket in the directory it made: a system
        that planted a symlink there could point the harness at another host socket."""
        assert self._dir is not None
        sock = self._host_sock()
        try:
            mode = os.lstat(sock).st_mode
        except OSError:
            mode = 0
        if not stat.S_ISSOCK(mode):
            self._kill()
            raise RuntimeStartError(
                f"system {self.system!r}: {sock} is not a Unix socket (a symlink or other file "
                "was put in its place); the harness refuses to talk to it"
            )

    def _kill(self) -> None:
        # A stop signal in the middle of the removal would leave the rest of it undone.
        with uninterrupted():
            self._remove()

    def _remove(self) -> None:
        proc, self._proc = self._proc, None
        if self._client is not None:
            self._client.close()
            self._client = None
        if proc is not None:
            _terminate(proc)
        group, self._group = self._group, None
        if group is not None:
            group.release()
        pump, self._pump = self._pump, None
        if pump is not None:
            pump.join(5.0)
        if self._log is not None:
            # A descendant that still holds the pipe cannot write into the next start's section.
            self._log.close(
                "output after the stop is dropped (a child of the system kept writing)"
                if pump is not None and pump.is_alive()
                else None
            )
            self._log = None
        # Whatever the process left beside its socket dies with it.
        self._close_root()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def restart(self) -> SystemClient:
        self._kill()
        self.spares.restarted(time.monotonic())
        client = self.start()
        self._top_up()
        return client

    def system_described(self, details: Mapping[str, str]) -> None:
        self.spares.declare(details)

    def expect_restarts(self) -> None:
        self._top_up()

    def _top_up(self) -> None:
        if self.spare and self.spares.per_start_bytes is None and self._proc is not None:
            # A template start shares most of its pages with the template and its siblings:
            # counted by proportional share, or three copies of the template would count.
            self.spares.measure(self._proc.pid, shared=self.start_mode == "template")
        while self.spare and len(self._spares) < self.spares.wanted(self.SPARES):
            # The next restarts' processes start now, while this one works: their
            # interpreter, imports and server set-up overlap with the sessions instead of
            # delaying the restarts. Each is a new process in its own sandbox and socket
            # directory, gets no request before it is promoted, and serves one start only.
            launched = self._launch(spare=True)
            with self._spare_lock:  # the freezer's thread walks the deque
                self._spares.append(launched)
        if self._groups is not None and self._groups.available() and self._watcher is None:
            self._watcher = threading.Thread(
                target=self._freeze_loaded, name="spare-freezer", daemon=True
            )
            self._watcher.start()

    def _freeze_loaded(self) -> None:
        """Freeze each spare once its socket appears, or once its load took too long."""
        while not self._stopping.wait(0.02):
            deadline = spare_deadline_s(self._first_load_s, 15.0)
            with self._spare_lock:
                for launch in list(self._spares):
                    group = launch.group
                    if group is None or group.frozen or launch.proc.poll() is not None:
                        continue
                    if self._loaded(launch) or time.monotonic() - launch.launched > deadline:
                        group.freeze()

    def _loaded(self, launch: _Launch) -> bool:
        if self.sandbox is None or not self.bound_socket_dir:
            return os.path.lexists(launch.dir / "sock")
        return any(
            os.path.lexists(f"/proc/{child}/root{launch.dir}/sock")
            for child in descendants(launch.proc.pid)
        )

    def stop(self) -> None:
        self._kill()
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join(5.0)
            self._watcher = None
        with uninterrupted():
            while self._spares:
                with self._spare_lock:
                    spare = self._spares.popleft()
                spare.discard()
            made, self._made = self._made, []
            for directory, proc in made:
                if proc is not None and proc.poll() is None:
                    _terminate(proc)
                shutil.rmtree(directory, ignore_errors=True)
            template, self._template = self._template, None
            if template is not None:
                template.stop()
            if self._groups is not None:
                self._groups.close()
        if self.starts:
            self.spares.write(self.log_path.parent / STARTS_FILE, self.starts)

    def describe(self) -> LocalRecord:
        record: ProcessRecord = {
            "kind": self.kind,
            "system": self.system,
            "python": sys.executable,
            **self.local_facts(),
        }
        return record

    def local_facts(self) -> LocalFacts:
        """The facts a `--command` process records too."""
        facts: LocalFacts = {
            "sandbox": self.sandbox.describe() if self.sandbox is not None else unconfined(),
            "max_log_bytes": self.max_log_bytes,
            "spare": self.spare,
            "start": self.start_mode,
        }
        if self._groups is not None:
            facts["page_cache"] = self._groups.describe()
            if self.spare:
                facts["spares"] = {"frozen_once_loaded": self._groups.available()}
        if self.start_mode == "template":
            facts["template"] = TEMPLATE_FACTS
        return facts

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        starts = [i for i, line in enumerate(text) if line.startswith("--- start")]
        last = text[starts[-1] + 1 :] if starts else text  # this start's output only
        return "\n".join(last[-lines:])


def _terminate(proc: ServerProcess) -> None:
    """Stop a server process and everything it started."""
    family: list[psutil.Process] = []
    if proc.poll() is None:
        # Taken before the stop: once the sandbox's monitor is gone, what it forked is
        # no longer findable as ours. A child that had not yet tied its life to the
        # monitor's (a stop right after the start) would otherwise live on.
        for pid in descendants(proc.pid):
            with contextlib.suppress(psutil.Error):  # gone meanwhile
                family.append(psutil.Process(pid))
        proc.send_signal(signal.SIGTERM)
    reap_group(proc)
    for member in family:
        with contextlib.suppress(psutil.Error):
            member.kill()


@dataclasses.dataclass(frozen=True)
class _Launch:
    """A started server process: its start number, socket directory, process and log."""

    number: int
    dir: Path
    proc: ServerProcess
    log: LogSection
    pump: threading.Thread
    launched: float
    """time.monotonic() when its process was started."""
    group: StartGroup | None = None
    """Its own cgroups (start_cgroups.py), where the harness may make them."""

    def discard(self) -> None:
        """Stop it, never used: its held-back output is dropped with its directory."""
        if self.group is not None:
            self.group.thaw()  # a frozen process dies only once thawed
        _terminate(self.proc)
        if self.group is not None:
            self.group.release()
        self.pump.join(5.0)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def served_target(system: str) -> str:
    """What the process is told to serve: a built-in name or a "module:Class" as given, a
    plugin's registered name as its "module:Class". The sandbox binds the plugin's package
    (as for any "module:Class") but not its distribution's metadata, which names it."""
    from apmbench.adapters.systems import SYSTEM_REGISTRY, SYSTEMS

    if ":" in system or system in SYSTEMS:
        return system
    return SYSTEM_REGISTRY.entry(system).target


def sandboxed_process(
    system: str,
    log_path: Path,
    deadlines: Deadlines,
    startup_timeout_s: float,
    *,
    sandbox: bool,
    env: tuple[str, ...] = (),
    hidden: tuple[Path, ...] = (),
    share_net: bool = False,
    max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
    spare: bool = False,
    spare_budget_bytes: int | None = None,
    start: str = "fresh",
    gpus: GpuRequest | None = None,
) -> Runtime:
    """`--system SPEC` as `evaluate` and `check` start it: in a bubblewrap sandbox that sees
    none of `hidden` (plus the synthetic cache), with only the allowlisted environment and
    `--env`; or, with `sandbox=False` (`--no-sandbox`), unconfined with the harness's
    environment, which the manifest and every report then say. `gpus` (`--gpus`): the box
    gets those NVIDIA device nodes and the driver's libraries (gpu_passthrough). `start`
    "snapshot": the same policy in gVisor, every start a restore (`snapshot_process`)."""
    from apmbench.harness.paths import cache_root
    from apmbench.harness.runtimes.sandbox import (
        Sandbox,
        allowed_env,
        check_sandbox,
        parse_env,
        python_policy,
    )

    if start == "snapshot":  # gVisor's restores (snapshot.py) under the same policy
        return snapshot_process(
            system, log_path, deadlines, startup_timeout_s, sandbox=sandbox, env=env,
            hidden=hidden, share_net=share_net, max_log_bytes=max_log_bytes, gpus=gpus,
        )  # fmt: skip
    extra = parse_env(env)
    gpu = gpu_passthrough(gpus, sandbox, start)
    if start == "template" and not sandbox:
        raise ConfigError("--start template: a template start is sandboxed; not with --no-sandbox")
    if start == "template" and share_net:
        raise ConfigError(
            "--start template: each start gets its own network namespace; not with --sandbox-net"
        )
    if not sandbox:
        return ProcessRuntime(
            system,
            log_path,
            deadlines,
            startup_timeout_s,
            env={**os.environ, **extra},
            max_log_bytes=max_log_bytes,
            spare=spare,
            spare_budget_bytes=spare_budget_bytes,
        )
    policy = python_policy(system, (*hidden, cache_root()), allowed_env(extra))
    policy = dataclasses.replace(policy, share_net=share_net, gpu=gpu)
    box = Sandbox(policy)
    check_sandbox(box.bwrap)
    return ProcessRuntime(
        system,
        log_path,
        deadlines,
        startup_timeout_s,
        sandbox=box,
        max_log_bytes=max_log_bytes,
        spare=spare,
        spare_budget_bytes=spare_budget_bytes,
        start=start,
    )


def snapshot_process(
    system: str,
    log_path: Path,
    deadlines: Deadlines,
    startup_timeout_s: float,
    *,
    sandbox: bool,
    env: tuple[str, ...] = (),
    hidden: tuple[Path, ...] = (),
    share_net: bool = False,
    max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
    gpus: GpuRequest | None = None,
) -> Runtime:
    """`--system SPEC --start snapshot`: the bubblewrap box's policy (what it may read, the
    environment it gets), applied by gVisor, every start a restore of one snapshot."""
    from apmbench.harness.paths import cache_root
    from apmbench.harness.runtimes.sandbox import allowed_env, parse_env, python_policy
    from apmbench.harness.runtimes.snapshot import SnapshotRuntime

    refuse_snapshot_relaxations(sandbox=sandbox, share_net=share_net, gpus=gpus)
    policy = python_policy(system, (*hidden, cache_root()), allowed_env(parse_env(env)))
    return SnapshotRuntime(system, log_path, deadlines, startup_timeout_s, policy, max_log_bytes)


def refuse_snapshot_relaxations(*, sandbox: bool, share_net: bool, gpus: GpuRequest | None) -> None:
    """What `--start snapshot` cannot be combined with, for `--system` and `--command`."""
    if not sandbox:
        raise ConfigError(
            "--start snapshot: each start is confined by gVisor; not with --no-sandbox"
        )
    if share_net:
        raise ConfigError("--start snapshot: a start has no network; not with --sandbox-net")
    if gpus is not None and gpus.wanted:
        raise ConfigError(
            f"--gpus {gpus.describe()}: --start snapshot has no GPU passthrough yet (gVisor's "
            "nvproxy); use --start fresh for a GPU method"
        )
