"""`--command 'node server.js {address}'`: any executable as a restartable, sandboxed server.

A method written in another language runs like a `--system` one: each start
gets a fresh socket directory, `{address}` in the command becomes
`unix:/that/dir/sock` (the form `serve` and the SDK accept), and the process
runs in the same bubblewrap sandbox (no network, an empty private /tmp, only
allowlisted environment). What it may read is bound read-only: the system
directories, the working directory the command is started from (the
template's directory, normally), the executable's directory, and any other
path named on the command line; the dataset, the run directory and the
synthetic cache stay masked even there. It can therefore be restarted for
`restart` persistence exactly as a Python system is.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from apmbench.harness.errors import ConfigError
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes import host_mounts
from apmbench.harness.runtimes.base import Launch, Runtime
from apmbench.harness.runtimes.local_config import LocalConfig, LocalRecord, gpu_passthrough
from apmbench.harness.runtimes.logcap import DEFAULT_MAX_LOG_BYTES
from apmbench.harness.runtimes.process import ProcessRuntime, refuse_snapshot_relaxations
from apmbench.harness.runtimes.sandbox import (
    SYSTEM_DIRS,
    TMP,
    Sandbox,
    SandboxPolicy,
    allowed_env,
    check_sandbox,
    harness_dirs,
    labelled_dirs,
    parse_env,
)
from apmbench.harness.runtimes.snapshot import SOCKET, SnapshotRuntime

if TYPE_CHECKING:
    from apmbench.harness.runtimes import RuntimeSpec
    from apmbench.harness.runtimes.docker.settings import GpuRequest

ADDRESS = "{address}"
"""Replaced in the command by the server's gRPC address, `unix:/path/to/sock`."""


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def parse_command(command: str, cwd: Path) -> tuple[list[str], Path]:
    """The command's words and its executable's absolute path; a ConfigError says what to fix."""
    try:
        words = shlex.split(command)
    except ValueError as e:
        raise ConfigError(f"--command {command!r}: {e}") from e
    if not words:
        raise ConfigError("--command is empty: give the server's command line, e.g. "
                          f"'node server.js {ADDRESS}'")  # fmt: skip
    if not any(ADDRESS in w for w in words):
        raise ConfigError(
            f"--command {command!r} has no {ADDRESS}: put {ADDRESS} where the server reads the "
            "address to listen on; the harness replaces it with unix:/path/to/sock"
        )
    exe = words[0]
    found = shutil.which(exe, path=str(cwd)) if "/" in exe else shutil.which(exe)
    if found is None and "/" in exe:
        candidate = (cwd / exe) if not os.path.isabs(exe) else Path(exe)
        found = str(candidate) if os.access(candidate, os.X_OK) else None
    if found is None:
        raise ConfigError(
            f"--command: {exe!r} is not an executable on PATH or under {cwd}: install it or "
            "give its path"
        )
    _refuse_shim(exe, Path(found))
    # Not resolved: a venv's python finds its packages only when started by its own path.
    return words, Path(os.path.abspath(found))


# How to ask an interpreter for its own executable's path (a shim's target).
_REAL_PATH_PROBE = {
    "python": ["-c", "import sys; print(sys.executable)"],
    "node": ["-e", "console.log(process.execPath)"],
    "ruby": ["-e", "puts RbConfig.ruby"],
}


def _refuse_shim(exe: str, found: Path) -> None:
    """An interpreter that is a script (pyenv's, rbenv's or nodenv's shim: a shell script
    that execs the interpreter it picks) runs that other program from a directory the box
    does not bind, and fails inside it with an error about a missing file. Refused here
    with the real interpreter's path, asked of the shim outside the box."""
    name = found.name
    if not _INTERPRETER.fullmatch(name) or name.startswith(("bash", "sh")):
        return
    try:
        with found.open("rb") as f:
            head = f.read(2)
    except OSError:
        return
    if head != b"#!":
        return
    language = next((k for k in _REAL_PATH_PROBE if name.startswith(k)), None)
    real = ""
    if language is not None:
        try:
            done = subprocess.run(
                [str(found), *_REAL_PATH_PROBE[language]],
                capture_output=True,
                text=True,
                timeout=30,
            )
            real = done.stdout.strip() if done.returncode == 0 else ""
        except (OSError, subprocess.TimeoutExpired):
            real = ""
    fix = (
        f"give the interpreter it runs, {real}, as the command's first word"
        if real and real != str(found)
        else "give the real interpreter's path as the command's first word"
    )
    raise ConfigError(
        f"--command: {exe!r} is {found}, a script (a version manager's shim?) that starts "
        f"another program the sandbox would not bind: {fix}"
    )


def _program_dirs(path: Path) -> set[Path]:
    """The directories a program file needs: its own; for a file in a virtual environment's
    bin/ (its interpreter, a console script), the environment's root (packages in ../lib)
    and the Python installation it was made from (`home` in pyvenv.cfg: the standard
    library)."""
    parent = Path(os.path.realpath(path.parent))
    venv = parent.parent
    config = venv / "pyvenv.cfg"
    if parent.name == "bin" and not config.is_file() and (venv / "lib").is_dir():
        # An installation prefix outside the system directories (/opt/python3.12,
        # ~/.pyenv/versions/3.12.1, ~/.nvm/versions/node/v20): its lib/ holds the standard
        # library or the bundled modules.
        return {venv}
    if parent.name != "bin" or not config.is_file():
        return {parent}
    dirs = {venv}
    for line in config.read_text(errors="replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            dirs.add(Path(os.path.realpath(value.strip())).parent)
    return dirs


# Executables that run a script named by their first argument: the script names the system.
_INTERPRETER = re.compile(
    r"(python|pypy|node|nodejs|deno|bun|ruby|perl|php|lua|Rscript|julia|bash|sh)[0-9.]*"
)


def command_name(command: str, cwd: Path) -> str:
    """What the harness calls a `--command` system (progress log, default run directory).

    The rule: the executable's basename (`go-memory --no-batches {address}` -> go-memory,
    `./bin/server {address}` -> server). When the executable is an interpreter (python,
    node, ruby, bash, ... with any version suffix) and its first argument is a path to an
    existing file (relative to `cwd`), the script names it instead, by its stem
    (`node server.js {address}` -> server, `python3 x.py {address}` -> x); otherwise the
    interpreter's name stays (`python -m pkg.server {address}` -> python). Flags and the
    word holding {address} are never a name. Bad quoting falls back to splitting on
    spaces: parse_command refuses such a command with the fix when it starts."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if not words:
        return "command"
    name = os.path.basename(words[0]) or "command"
    if _INTERPRETER.fullmatch(name) and len(words) > 1:
        script = words[1]
        if ADDRESS not in script and not script.startswith("-"):
            path = Path(script) if os.path.isabs(script) else cwd / script
            if path.is_file():
                return path.stem or name
    return name


def command_policy(
    words: list[str],
    executable: Path,
    cwd: Path,
    hidden: Iterable[Path],
    env: Mapping[str, str],
) -> SandboxPolicy:
    """Read-only: the working directory, the executable's directory (a virtual
    environment's whole root when the executable is its interpreter) and, for every
    existing path the command names, that directory or the directory the file sits in,
    so an interpreted server also finds its sibling modules and packages (node_modules,
    a venv) from any working directory. Hidden paths are masked wherever they lie under
    those."""
    real_exe = Path(os.path.realpath(executable))
    named = {Path(os.path.realpath(cwd)): "--command's working directory"}
    named.update(
        dict.fromkeys(
            {real_exe.parent, *_program_dirs(executable)}, f"--command's executable {words[0]}"
        )
    )
    for word in words[1:]:
        if ADDRESS in word or word.startswith("-"):
            continue
        path = Path(word) if os.path.isabs(word) else cwd / word
        if path.exists():
            dirs = _program_dirs(path) if path.is_file() else {Path(os.path.realpath(path))}
            named.update(dict.fromkeys(dirs - named.keys(), f"--command's path {word!r}"))
    roots = set(named)
    # The box's /tmp is its own empty tmpfs: the host's /tmp is never bound whole (other
    # runs, other users' files), so a command started from /tmp reads only the paths under
    # it that it names, each bound into the fresh /tmp.
    roots.discard(TMP)
    if Path("/") in roots:
        raise ConfigError(
            "--command would need / bound into the sandbox: start it from the server's own "
            "directory (its working directory is what the sandbox can read)"
        )
    kept = sorted(r for r in roots if not any(o != r and _under(r, o) for o in roots))
    kept = [r for r in kept if not any(_under(r, Path(d)) for d in SYSTEM_DIRS)]
    host_mounts.refuse_pseudo_filesystems({r: named[r] for r in kept})
    bin_dir = str(executable.parent)
    masked = {Path(os.path.realpath(h)) for h in hidden} | set(harness_dirs())
    masked |= set(labelled_dirs(kept))
    return SandboxPolicy(
        read_only=tuple(kept),
        hidden=tuple(sorted(masked)),
        env=dict(env),
        path=f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        cwd=Path(os.path.realpath(cwd)),
    )


@dataclass(frozen=True, kw_only=True)
class CommandConfig(LocalConfig):
    """`--command 'CMD {address}'`: any server command line, run as a process from the
    current directory."""

    command: str
    """The command line as given, with `{address}` in it."""
    start: str = "fresh"
    """`--start`: "fresh" (a new bubblewrap box each time) or "snapshot" (each start a
    restore of one snapshot in gVisor, taken where the server marks its loaded point)."""

    @property
    def name(self) -> str:
        return command_name(self.command, Path.cwd())

    def resume_identity(self, runtime: Runtime) -> str:
        return self.command


class CommandRecord(LocalRecord):
    """A `--command` process's: its command line, executable and directory (the command
    names its own interpreter)."""

    command: str
    executable: str
    cwd: str


class CommandRuntime(ProcessRuntime):
    """Runs an arbitrary server command; restartable like `--system` processes."""

    kind = "command"
    config_type = CommandConfig

    @classmethod
    def from_spec(cls, spec: RuntimeSpec, launch: Launch) -> Runtime:
        config = spec.config_as(CommandConfig)
        return command_process(
            config.command,
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
            gpus=config.gpus,
            start=config.start,
        )

    def __init__(
        self,
        command: str,
        log_path: Path,
        deadlines: Deadlines,
        startup_timeout_s: float = 60.0,
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        sandbox: Sandbox | None = None,
        max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
        spare: bool = False,
        spare_budget_bytes: int | None = None,
    ) -> None:
        super().__init__(
            command,
            log_path,
            deadlines,
            startup_timeout_s,
            env=env,
            sandbox=sandbox,
            max_log_bytes=max_log_bytes,
            spare=spare,
            spare_budget_bytes=spare_budget_bytes,
        )
        self.command = command
        self.cwd = Path(os.path.realpath(cwd or Path.cwd()))
        self.words, self.executable = parse_command(command, self.cwd)

    def argv(self) -> list[str]:
        return [
            self.executable.as_posix(),
            *(w.replace(ADDRESS, self.address) for w in self.words[1:]),
        ]

    def describe(self) -> CommandRecord:
        return {
            "kind": self.kind,
            **self.local_facts(),
            "command": self.command,
            "executable": str(self.executable),
            "cwd": str(self.cwd),
        }


def command_process(
    command: str,
    log_path: Path,
    deadlines: Deadlines,
    startup_timeout_s: float,
    *,
    sandbox: bool,
    env: tuple[str, ...] = (),
    hidden: tuple[Path, ...] = (),
    cwd: Path | None = None,
    share_net: bool = False,
    max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
    spare: bool = False,
    spare_budget_bytes: int | None = None,
    gpus: GpuRequest | None = None,
    start: str = "fresh",
) -> Runtime:
    """`--command` as `evaluate` and `check` start it: sandboxed like `--system` (see
    `sandboxed_process`, also for `gpus`), or unconfined with `--no-sandbox`, which every
    report then says. `start` "snapshot": the same policy applied by gVisor, every start a
    restore of one snapshot (`CommandSnapshotRuntime`)."""
    from apmbench.harness.paths import cache_root

    where = Path(os.path.realpath(cwd or Path.cwd()))
    extra = parse_env(env)
    if start == "snapshot":
        refuse_snapshot_relaxations(sandbox=sandbox, share_net=share_net, gpus=gpus)
        words, executable = parse_command(command, where)
        hide = (*hidden, cache_root())
        policy = command_policy(words, executable, where, hide, allowed_env(extra))
        return CommandSnapshotRuntime(
            command, words, executable, where, log_path, deadlines, startup_timeout_s,
            policy, max_log_bytes,
        )  # fmt: skip
    gpu = gpu_passthrough(gpus, sandbox)
    if not sandbox:
        return CommandRuntime(
            command, log_path, deadlines, startup_timeout_s, cwd=where,
            env={**os.environ, **extra}, max_log_bytes=max_log_bytes, spare=spare,
            spare_budget_bytes=spare_budget_bytes,
        )  # fmt: skip
    words, executable = parse_command(command, where)
    policy = command_policy(words, executable, where, (*hidden, cache_root()), allowed_env(extra))
    policy = dataclasses.replace(policy, share_net=share_net, gpu=gpu)
    box = Sandbox(policy)
    check_sandbox(box.bwrap)
    return CommandRuntime(
        command, log_path, deadlines, startup_timeout_s, cwd=where, sandbox=box,
        max_log_bytes=max_log_bytes, spare=spare, spare_budget_bytes=spare_budget_bytes,
    )  # fmt: skip


class CommandSnapshotRuntime(SnapshotRuntime):
    """`--command ... --start snapshot`: a server in any language, each start a restore of
    the snapshot taken where it marked its loaded point (docs/PROTOCOL.md), in gVisor; one
    that never marks it gets a full start in gVisor every time."""

    kind = "command"
    config_type = CommandConfig

    def __init__(
        self,
        command: str,
        words: list[str],
        executable: Path,
        cwd: Path,
        log_path: Path,
        deadlines: Deadlines,
        startup_timeout_s: float,
        policy: SandboxPolicy,
        max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
    ) -> None:
        self.command, self.executable, self.cwd = command, executable, cwd
        args = [str(executable), *(w.replace(ADDRESS, f"unix:{SOCKET}") for w in words[1:])]
        name = command_name(command, cwd)
        super().__init__(
            name, log_path, deadlines, startup_timeout_s, policy, max_log_bytes, argv=args
        )

    def describe(self) -> CommandRecord:
        record = dict(super().describe())
        record.pop("python", None)
        record.update(
            kind=self.kind, command=self.command, executable=str(self.executable),
            cwd=str(self.cwd),
        )  # fmt: skip
        return record  # type: ignore[return-value]
