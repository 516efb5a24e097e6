"""The seam every runtime implements: start a system, hand out a ready client.

A runtime is one class deriving from `Runtime` plus its registration (a line
in `runtimes/registry.py`, or an `apmbench_grpc.runtimes` entry point of an
installed distribution). The class says which settings it is built from
(`config_type`, a frozen dataclass deriving from `RuntimeConfig`) and how
(`from_spec`), which `--runtime-option KEY=VALUE` it takes (`options`), what
its manifest record holds (`describe`), what a resumed run must keep of it
(`resume_facts`) and what a report must say of its confinement
(`confinement_facts`). Whatever else the harness needs to know of a system's
runtime it asks the config (`RuntimeConfig`), so no code outside this package
tests which runtime it has.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Protocol, Required, TypedDict

from apmbench.adapters.sdk import errors
from apmbench.harness.protocol.client import Deadlines, SystemClient

if TYPE_CHECKING:
    from apmbench.harness.runtimes import RuntimeSpec


class RuntimeRecord(TypedDict):
    """manifest.json's `runtime`, as `Runtime.describe` returns it: the runtime's registered
    name, by which a finished run's readers find its class; each runtime's record adds its
    own facts."""

    kind: str


class Confinement(TypedDict, total=False):
    """report.json's `sandbox`: whether the harness confined the system, and how
    (`Runtime.confinement_facts`)."""

    confined: Required[bool]
    note: str
    """Why the numbers are not comparable (an unconfined process)."""
    tool: str
    network: str
    start: str
    """"template" for starts forked from the run's template; absent for fresh starts."""
    gpus: str
    """The `--gpus` request a confined process was given; absent without one."""
    host_paths: list[str]
    """Every host path bound read-only into the box beside the system directories."""


class RuntimeConfig:
    """One runtime's own settings, as the command line gave them: each runtime declares a
    frozen dataclass deriving from this (`Runtime.config_type`), and `RuntimeSpec` carries
    one. What the rest of the harness must know of a system's runtime it asks here, so no
    caller reads a runtime's fields or tests which runtime it is. The defaults are what a
    plugin's runtime gets: its registered name, nothing to refuse, spares as asked for, no
    identity beyond its manifest record."""

    @property
    def name(self) -> str | None:
        """What the harness calls the system (the progress log, the manifest's
        `system_name`, default run directories); None: the runtime's own name."""
        return None

    def check(self) -> None:
        """Refuse what cannot run before anything starts (a ConfigError says what to fix)."""

    def spares_allowed(self) -> bool:
        """Whether restarts may start spares beside the serving system with these
        settings: not where the two could share a network (or a GPU)."""
        return True

    def resume_identity(self, runtime: Runtime) -> str | None:
        """What `--resume` must find unchanged of the system (the manifest's `system_spec`),
        asked of the started `runtime`; None: nothing beyond the runtime's record."""
        return None

    def option_pairs(self) -> tuple[tuple[str, str], ...]:
        """The `--runtime-option KEY=VALUE` pairs given (only a runtime chosen by
        `--runtime NAME` takes them)."""
        return ()


@dataclass(frozen=True)
class PluginOptions(RuntimeConfig):
    """The settings of a runtime chosen by name (`--runtime NAME`): its
    `--runtime-option KEY=VALUE` pairs, each a key it declares (`Runtime.options`)."""

    options: tuple[tuple[str, str], ...] = ()

    def option_pairs(self) -> tuple[tuple[str, str], ...]:
        return self.options


@dataclass(frozen=True)
class Launch:
    """What every runtime is built with besides the command line's spec."""

    run_dir: Path
    """The run directory; the system's output goes under its logs/."""
    deadlines: Deadlines
    startup_timeout_s: float
    hidden: tuple[Path, ...] = ()
    """Host paths a confined system must not see (the dataset)."""


class Runtime(ABC):
    """Starts a system and hands out a connected, ready client."""

    kind: str = ""
    config_type: ClassVar[type[RuntimeConfig]] = PluginOptions
    """The settings this runtime is built from (`RuntimeSpec.config`). A runtime chosen by
    `--runtime NAME` is given its `--runtime-option` pairs (`PluginOptions`)."""
    options: ClassVar[Mapping[str, str]] = {}
    """The `--runtime-option KEY=VALUE` keys this runtime takes, each with its help text.
    The built-in runtimes have their own flags (--image, --endpoint, --command, --system)."""

    @classmethod
    def from_spec(cls, spec: RuntimeSpec, launch: Launch) -> Runtime:
        """The runtime the command line asked for (`make_runtime` calls this), built from
        `spec.config` and the settings every runtime shares."""
        raise NotImplementedError(f"{cls.__name__} does not say how it is built: add from_spec")

    @classmethod
    def confinement_facts(cls, recorded: Mapping[str, object]) -> Confinement | None:
        """report.json's `sandbox` entry from this runtime's manifest record (its
        `describe()`): whether the harness confined the system, and how. None when the
        harness does not confine it this way (a server someone else runs; a container,
        whose limits the manifest records under `container`)."""
        return None

    @classmethod
    def resume_facts(cls, recorded: Mapping[str, object]) -> dict[str, object]:
        """What a resumed run must find unchanged of this runtime's manifest record (its
        `describe()`): how the system is confined and bounded, without facts that may
        change between two starts of one run (image creation times, engine versions,
        paths of the harness's own files). Here: a server the harness does not start."""
        return {
            "kind": recorded.get("kind"),
            "max_log_bytes": recorded.get("max_log_bytes"),
            "address": recorded.get("address"),
        }

    @property
    @abstractmethod
    def can_restart(self) -> bool: ...

    @abstractmethod
    def start(self) -> SystemClient:
        """Start (or connect to) the system; return once health says SERVING."""

    def start_for_check(self) -> SystemClient:
        """Start the system for `check`, which judges its health service as one of its
        checks: as `start` here, which waits for SERVING to know the server is up; a server
        someone else started may be connected to without that service (its check fails)."""
        return self.start()

    @abstractmethod
    def restart(self) -> SystemClient:
        """A fresh system with empty memory; the old client must not be used again."""

    @abstractmethod
    def stop(self) -> None: ...

    @abstractmethod
    def describe(self) -> RuntimeRecord:
        """Facts about the runtime for manifest.json."""

    def log_tail(self, lines: int = 15) -> str:
        """The end of the system's output since its last start ("" when there is none)."""
        return ""

    def later_start_s(self, first_start_s: float) -> float | None:
        """What each start after the first is expected to cost, for the projected cost; None
        when it costs what the first did (a runtime whose first start also made what later
        ones restore says what a restore took)."""
        return None

    def begin_trajectory(self, trajectory_id: str) -> None:  # noqa: B027 - optional hook
        """Called before each trajectory; a runtime may name what it starts after it
        (the Docker runtime names containers per run and trajectory)."""

    def system_described(self, details: Mapping[str, str]) -> None:  # noqa: B027 - optional
        """Called with the first start's Describe details, before `expect_restarts`: a
        runtime with spares reads the budget the system declares (`spare_memory`)."""

    def expect_restarts(self) -> None:  # noqa: B027 - optional hook
        """Called once the run knows it restarts the system (`restart` persistence): a
        runtime with spares may start them now, before the first restart asks."""

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ServerProcess(Protocol):
    """What the runtime uses of a started server: a `subprocess.Popen`, or a
    `TemplateChild` for a start forked from the template."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...

    def kill(self) -> None: ...


_CHILDREN_FILES = os.path.exists(f"/proc/self/task/{os.getpid()}/children")
"""Whether the kernel lists each task's children (CONFIG_PROC_CHILDREN, on in every common
distribution kernel); without it `descendants` scans the whole process table."""


def descendants(pid: int) -> list[int]:
    """The pids `pid` forked, and theirs, down the tree (parents before children; [] once
    `pid` is gone). Read from each task's /proc children list: a runtime asks this every
    2 ms while a start comes up, and psutil's `children()` reads every process's stat
    file each time, which cost the harness 7 % of its CPU in a paper dry run."""
    if not _CHILDREN_FILES:
        import psutil

        try:
            return [p.pid for p in psutil.Process(pid).children(recursive=True)]
        except psutil.Error:
            return []
    found: list[int] = []
    queue = [pid]
    while queue:
        parent = queue.pop(0)
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue  # gone meanwhile
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            found.extend(kids)
            queue.extend(kids)
    return found


_TICKS = os.sysconf("SC_CLK_TCK")


def usable_cores() -> int:
    """The cores this harness may run on (its affinity, as a container's cpuset sets it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def tree_cpu_s(pid: int) -> float | None:
    """CPU seconds `pid` and what it forked have used, reaped children included (None when
    `pid` is gone or its /proc cannot be read, as for a container on another host's
    engine). What a start cost the host's cores, for `SparePlan`'s CPU cap.

    A live task's own time comes from its schedstat, in nanoseconds: /proc/PID/stat counts
    clock ticks, and the three processes of a template start each run for less than one
    (they read 0 there, which made a template start look free). Reaped children have only
    their parents' tick counts."""
    total = 0.0
    for member in (pid, *descendants(pid)):
        try:
            with open(f"/proc/{member}/stat") as f:
                stat = f.read()
        except OSError:
            if member == pid:
                return None
            continue  # a child gone meanwhile: its parent's cutime has it once reaped
        # After the command name (which may hold spaces and parentheses): state is field 3,
        # utime, stime, cutime and cstime are fields 14-17.
        fields = stat[stat.rindex(")") + 2 :].split()
        own = _run_ns(member)
        ticks = fields[13:15] if own is not None else fields[11:15]
        total += sum(int(v) for v in ticks) / _TICKS + (own or 0) / 1e9
    return total


def _run_ns(pid: int) -> int | None:
    """Nanoseconds every thread of `pid` has run (None without schedstat)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    total = 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            if task == str(pid):
                return None
    return total


def reap_group(proc: ServerProcess, timeout_s: float = 5.0) -> None:
    """Wait up to `timeout_s` for a stopping server (killed after that), then SIGKILL its
    process group: it started its own session (group = its pid), so whatever it forked
    and left behind goes with it. 5 s is as long as a container gets
    (DockerRuntime.stop_timeout_s): a system that hangs in a call ignores the graceful
    stop, and every fault would cost more."""
    if proc.poll() is None:
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def wait_serving(client: SystemClient, timeout_s: float, alive: Callable[[], bool]) -> None:
    """`client.wait_serving`, but giving up as soon as `alive` says the server's process
    is gone (an exited process never reports SERVING)."""
    deadline = time.monotonic() + timeout_s
    last: str | None = "no answer"
    while time.monotonic() < deadline:
        if not alive():
            raise errors.Unavailable(f"server at {client.address} exited before it was ready")
        last = client.not_serving()
        if last is None:
            return
        time.sleep(0.05)
    raise client.never_served(timeout_s, last)
