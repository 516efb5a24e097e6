"""A bubblewrap sandbox for systems the harness starts as processes.

The benchmark's numbers mean something only if the memory a system carries
across a session gap is the state it exported, and if no answer can be read
off the disk. A process started with the harness's environment and file
system can do both: stash its memory in /tmp or $HOME for its successor, or
glob the dataset for `candidates/*.json`. `Sandbox` turns a command into a
`bwrap` command line that runs it with

- a read-only view of only what it needs (system libraries, the Python
  installation, the import path of the system's module), with the dataset,
  the synthetic cache and the run directory masked by empty tmpfs wherever
  they lie under one of those paths;
- its own network, IPC, PID and UTS namespaces (no network at all);
- an empty, size-bounded tmpfs as /tmp (HOME lies in it) and a private
  /dev/shm, all gone when the process ends, so every start begins with an
  empty writable area;
- an environment holding only an allowlist, never the harness's own;
- a /proc whose host-wide counters (meminfo, stat, loadavg and the rest: procview.py) are
  frozen copies taken before any system started, bound read-only over the live files;
- an unprivileged uid (65534) with every capability dropped (bounding set too),
  no_new_privs, no further user namespaces, and the seccomp filter of seccomp.py,
  whatever user the harness runs as. Started by root, bwrap would otherwise leave the
  system root with full capabilities in its own user namespace, where the mounts bwrap
  made are not locked: it could remount every read-only bind read-write and unmount
  the masks. Its host uid stays the harness's (bwrap maps the sandbox uid onto the
  caller's), so files the harness made for it (a model directory, a module in a
  private temporary directory) stay readable, and the read-only binds keep them
  unchangeable.

It is runtime-agnostic: `wrap` takes any argv plus the fresh directories a
start may write, so a command runtime can reuse it. A socket's directory is
`bounded`: a size-limited tmpfs mounted over the host directory's path inside
the box, never the host directory itself, so what a system writes beside its
socket lives in bounded memory that dies with the box; the harness reaches the
socket through the box's root (`/proc/PID/root`).
"""

from __future__ import annotations

import functools
import importlib.machinery
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apmbench.harness.errors import ConfigError
from apmbench.harness.runtimes import gpu as gpus
from apmbench.harness.runtimes import host_mounts, procview, seccomp

BWRAP_ENV = "APMBENCH_BWRAP"
"""Path of the bwrap binary to use instead of the one on PATH."""
INSTALL_COMMAND = "apt-get install -y bubblewrap"
UNCONFINED_NOTE = "unconfined: numbers not comparable"
"""What every report of a run made with `--no-sandbox` prints."""

PASSED_PREFIXES = ("APMBENCH_VLM_", "APMBENCH_SIM_")
"""Environment variables a system reads its own settings from, passed on by name."""
PASSED_NAMES = ("LANG", "LC_ALL", "TZ", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS")
SANDBOX_HOME = "/tmp/home"
SANDBOX_UID = 65534
"""The uid and gid a sandboxed system runs as (nobody): not 0, so no execve can hand it
capabilities in its user namespace."""
TMP_SIZE_BYTES = 2 << 30
"""The sandbox's /tmp lives in memory: bounded so a system cannot exhaust the host's."""
SOCKET_DIR_BYTES = 1 << 20
"""A bounded directory (the socket's) is a tmpfs of this size inside the box: a socket
takes no data blocks, so a system needs none of it to serve, and writing past it gets
ENOSPC instead of filling the host's /tmp."""

# What the dynamic loader and Python read from /etc; the rest of /etc stays hidden.
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


STANDARD_NODES = tuple(
    Path("/dev") / name for name in ("null", "zero", "full", "random", "urandom", "tty")
)
"""The nodes bwrap's `--dev` binds from the host (each start gets copies of its own)."""


class SandboxUnavailable(ConfigError):
    """bwrap is missing or cannot create namespaces here; the message says what to do."""


def find_bwrap() -> str | None:
    """The bwrap to use: $APMBENCH_BWRAP when set (even if it does not exist), else PATH's."""
    configured = os.environ.get(BWRAP_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("bwrap")


def require_bwrap() -> str:
    path = find_bwrap()
    if path is None:
        where = os.environ.get(BWRAP_ENV) or "PATH"
        raise SandboxUnavailable(
            f"the sandbox tool bubblewrap (bwrap) is not installed (looked in {where}): install "
            f"it with `{INSTALL_COMMAND}`, or pass --no-sandbox to run the system unconfined "
            f"(the report then says '{UNCONFINED_NOTE}')"
        )
    return path


def parse_env(entries: Iterable[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """`--env NAME=VALUE` sets a value; `--env NAME` passes the harness's own value on."""
    source = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for entry in entries:
        name, sep, value = entry.partition("=")
        if not name or not name.replace("_", "a").isalnum() or name[0].isdigit():
            raise ConfigError(f"--env {entry!r}: give NAME=VALUE or NAME (letters, digits, _)")
        if sep:
            out[name] = value
        elif name in source:
            out[name] = source[name]
        else:
            raise ConfigError(f"--env {name}: {name} is not set here; give --env {name}=VALUE")
    return out


def allowed_env(
    extra: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The allowlisted part of the harness's environment, then what the user passed."""
    source = os.environ if environ is None else environ
    env = {k: v for k, v in source.items() if k in PASSED_NAMES or k.startswith(PASSED_PREFIXES)}
    env.update(extra)
    return env


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(path))


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


TMP = Path("/tmp")


SCAN_SKIP = frozenset({".git", "node_modules", "__pycache__", "site-packages", "dist-packages"})
SCAN_LIMIT = 50_000
"""Directories looked at under a sandbox's bound paths before the harness gives up."""


def labelled_dirs(roots: Iterable[Path]) -> list[Path]:
    """Directories under `roots` that hold answers, wherever they lie: runs (manifest.json
    beside instances.jsonl or trajectories/, which carry labels and judge references),
    datasets (dataset.json) and judge caches (a judge-cache/ directory). A sandbox masks
    each one, so a run kept under the directory a command starts from (the default --out)
    cannot feed a later run's server. Virtual environments are not searched."""
    found: list[Path] = []
    stack = [Path(r) for r in roots if Path(r).is_dir()]
    seen = 0
    while stack:
        folder = stack.pop()
        seen += 1
        if seen > SCAN_LIMIT:
            raise ConfigError(
                f"the sandbox would make a tree of more than {SCAN_LIMIT} directories readable "
                f"(under {', '.join(str(r) for r in roots)}), too many to check for runs and "
                "datasets to hide: start the server from its own directory and name only the "
                "paths it needs"
            )
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        names = {e.name for e in entries}
        labelled = (
            folder.name == "judge-cache"
            or "dataset.json" in names
            or ("manifest.json" in names and bool(names & {"instances.jsonl", "trajectories"}))
        )
        if labelled:
            found.append(folder)
        elif "pyvenv.cfg" not in names:
            stack += [
                Path(e.path)
                for e in entries
                if e.name not in SCAN_SKIP and e.is_dir(follow_symlinks=False)
            ]
    return sorted(found)


@dataclass(frozen=True)
class SandboxPolicy:
    """What a sandboxed command sees. Paths are resolved when the policy is made."""

    read_only: tuple[Path, ...]
    """Host paths bound read-only at the same place."""
    hidden: tuple[Path, ...] = ()
    """Paths never visible: masked by an empty tmpfs where they lie under a bound path."""
    env: Mapping[str, str] = field(default_factory=dict)
    """The whole environment of the command, besides HOME, TMPDIR and PATH."""
    path: str = "/usr/local/bin:/usr/bin:/bin"
    cwd: Path | None = None
    tmp_size_bytes: int = TMP_SIZE_BYTES
    share_net: bool = False
    """`--sandbox-net`: the host's network (for a system that calls a model endpoint);
    a recorded relaxation, printed in every report."""
    gpu: gpus.GpuPassthrough | None = None
    """`--gpus`: the NVIDIA device nodes and driver libraries the box gets (gpu.py); None:
    no /dev/nvidia* node at all."""


class Sandbox:
    """Wraps a command in bwrap according to a policy."""

    def __init__(
        self,
        policy: SandboxPolicy,
        bwrap: str | None = None,
        harden: bool = True,
        proc_view: bool = True,
    ) -> None:
        self.policy = policy
        self.bwrap = bwrap or require_bwrap()
        self.harden = harden
        """False only in tests that show what the hardening (uid, capabilities, seccomp) stops."""
        self.proc_view = procview.current() if proc_view else None
        """The frozen /proc counters bound over the live ones; None only in tests that show
        what they stop."""
        self._allowed = seccomp.NETWORK if policy.share_net else frozenset()
        self._filter = seccomp.compile_filter(allow=self._allowed)
        self.device_copies = gpus.DeviceCopies() if gpus.DeviceCopies.possible() else None
        """Fresh copies of the device nodes a box holds (bwrap's standard ones, the GPU's) for
        every start: as root, the box's uid maps onto the host's root, which owns the host's
        nodes, so a start could chmod or touch /dev/null itself and leave the next start
        bits in its mode and times (or break it for the host). None (not root): the host's
        nodes are bound, which the box's uid does not own."""

    @property
    def filter(self) -> bytes:
        """The seccomp program a system runs under (a template's start installs it itself)."""
        return self._filter

    def stdin(self, template: bool = False) -> int:
        """A fresh descriptor of the seccomp filter, for the wrapped command's stdin: bwrap
        reads the filter from fd 0 (`--seccomp 0`) before it starts the command, which then
        finds its stdin at end of file. The caller closes it once the process started."""
        program = (
            seccomp.compile_filter(allow=seccomp.TEMPLATE_NEEDS | self._allowed)
            if template
            else self._filter
        )
        read, write = os.pipe()
        if len(program) > 65536:  # a pipe's buffer: writing more would block here
            raise ConfigError("the seccomp filter is larger than a pipe holds")
        os.write(write, program)
        os.close(write)
        return read

    def run(
        self,
        argv: Sequence[str],
        writable: Sequence[Path] = (),
        timeout: float = 60,
        bounded: Sequence[Path] = (),
    ) -> subprocess.CompletedProcess[str]:
        """Run `argv` in the sandbox to completion, its output captured as text."""
        stdin = self.stdin()
        try:
            return subprocess.run(
                self.wrap(argv, writable, bounded),
                stdin=stdin,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        finally:
            os.close(stdin)

    def wrap(
        self,
        argv: Sequence[str],
        writable: Sequence[Path] = (),
        bounded: Sequence[Path] = (),
        template: bool = False,
    ) -> list[str]:
        """The bwrap argv that runs `argv`; `writable` dirs are bound read-write, `bounded`
        ones (the socket's) become an empty tmpfs of SOCKET_DIR_BYTES at the same path.
        Run it with `stdin=self.stdin()`: that is where bwrap reads the seccomp filter.
        `template`: the box of a start template (apmbench.adapters.template), which keeps
        CAP_SYS_ADMIN in its user namespace and may make namespaces (its filter is
        `stdin(template=True)`'s) so that each start can confine itself further; every start
        drops both and installs this box's full filter before any system code runs."""
        p = self.policy
        gpu_devices: list[str] = []
        gpu_libraries: list[str] = []
        standard = [] if template else [n for n in STANDARD_NODES if n.exists()]
        copies = (
            self.device_copies.fresh([*standard, *(p.gpu.nodes if p.gpu is not None else [])])
            if self.device_copies is not None and not template
            else None
        )
        if p.gpu is not None:
            if template:
                raise ConfigError("--gpus: not with --start template; use --start fresh")
            sources = copies[len(standard) :] if copies is not None else list(p.gpu.nodes)
            visible = [*(Path(d) for d in SYSTEM_DIRS), *p.read_only]
            gpu_devices, gpu_libraries = gpus.bwrap_args(p.gpu, sources, visible)
        if copies is not None:
            # Over bwrap's binds of the host's own nodes (a template's box makes its starts
            # in a user namespace of their own, where the host's root owns nothing).
            for source, node in zip(copies, standard, strict=False):
                gpu_devices = ["--dev-bind", str(source), str(node), *gpu_devices]
        args = [
            self.bwrap,
            "--unshare-all",
            *(["--share-net"] if p.share_net else []),
            *(self._template_hardening() if template else self._hardening() if self.harden else []),
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            "--proc",
            "/proc",
            *(self.proc_view.bwrap_args() if self.proc_view else []),
            "--dev",
            "/dev",
            *gpu_devices,
        ]
        for name in SYSTEM_DIRS:
            host = Path(name)
            if host.is_symlink():
                # Merged-/usr systems: /bin -> usr/bin; a bind would copy a directory
                # where programs expect a link.
                args += ["--symlink", os.readlink(host), name]
            elif host.is_dir():
                args += ["--ro-bind", name, name]
        for name in ETC_FILES:
            args += ["--ro-bind-try", name, name]
        in_tmp = [q for q in p.read_only if q != TMP and _under(q, TMP)]
        for path in p.read_only:
            if path not in in_tmp:
                args += ["--ro-bind", str(path), str(path)]
        args += gpu_libraries  # read-only, over whatever lay at their paths
        # Mounted after the binds so that nothing bound can shadow the empty /tmp; what
        # lives under /tmp (a model directory, a test's package) is bound into it after.
        args += ["--size", str(p.tmp_size_bytes), "--tmpfs", "/tmp", "--dir", SANDBOX_HOME]
        for path in in_tmp:
            args += ["--ro-bind", str(path), str(path)]
        for path in writable:
            args += ["--bind", str(path), str(path)]
        for path in bounded:
            args += ["--size", str(SOCKET_DIR_BYTES), "--tmpfs", str(path)]
        for path in self.masked():
            # Empty and read-only: a mask must not become unbounded writable memory.
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        # The mount points bwrap made live on its own root tmpfs, which would be writable.
        args += ["--remount-ro", "/"]
        env = {**p.env, "HOME": SANDBOX_HOME, "TMPDIR": "/tmp", "PATH": p.path}
        for name, value in sorted(env.items()):
            args += ["--setenv", name, value]
        args += ["--chdir", str(p.cwd or SANDBOX_HOME), "--", *argv]
        return args

    def _hardening(self) -> list[str]:
        return [
            "--unshare-user",
            "--uid",
            str(SANDBOX_UID),
            "--gid",
            str(SANDBOX_UID),
            *(["--disable-userns"] if _bwrap_can("--disable-userns", self.bwrap) else []),
            "--cap-drop",
            "ALL",
            "--seccomp",
            "0",
        ]

    def _template_hardening(self) -> list[str]:
        # Uid 0 of its own user namespace (the harness's uid outside): bwrap then makes one
        # user namespace, which owns the box's mounts, so a start's own mount namespace may
        # mount its own /proc over them. A start maps SANDBOX_UID onto it before it drops
        # every capability.
        return [
            "--unshare-user",
            "--uid",
            "0",
            "--gid",
            "0",
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SYS_ADMIN",
            "--cap-add",
            "CAP_SETFCAP",  # a start maps its uid onto uid 0: the kernel wants this for it
            "--seccomp",
            "0",
        ]

    def tmp_binds(self) -> list[Path]:
        """The read-only binds that lie under /tmp (bound again into each fresh /tmp)."""
        return [q for q in self.policy.read_only if q != TMP and _under(q, TMP)]

    def proc_covers(self) -> list[str]:
        """The /proc paths covered by a frozen copy (a template start binds them again over
        the /proc it mounts)."""
        return self.proc_view.paths() if self.proc_view else []

    def masked(self) -> list[Path]:
        """Hidden paths that lie under a bound path (others are not visible anyway)."""
        bound = [*self.policy.read_only, *(Path(d) for d in SYSTEM_DIRS)]
        return [h for h in self.policy.hidden if h.is_dir() and any(_under(h, b) for b in bound)]

    def describe(self) -> dict[str, object]:
        """The sandbox's facts for the manifest (environment values are not recorded)."""
        return {
            "confined": True,
            "tool": "bubblewrap",
            "network": "host" if self.policy.share_net else "none",
            "bwrap": self.bwrap,
            "uid": SANDBOX_UID,
            "capabilities": "none",
            "no_new_privs": True,
            "seccomp": seccomp.describe(),
            "read_only": [str(p) for p in self.policy.read_only],
            "masked": [str(p) for p in self.masked()],
            "hidden": [str(p) for p in self.policy.hidden],
            "env": sorted(self.policy.env),
            "tmp_size_bytes": self.policy.tmp_size_bytes,
            "socket_dir_bytes": SOCKET_DIR_BYTES,
            **({"proc_view": self.proc_view.describe()} if self.proc_view else {}),
            **(
                {"gpu": self.policy.gpu.describe(self.device_copies is not None)}
                if self.policy.gpu is not None
                else {}
            ),
        }


@functools.cache
def _bwrap_can(option: str, bwrap: str) -> bool:
    """Whether this bwrap knows `option` (--disable-userns came with 0.8; the seccomp
    filter refuses new user namespaces with or without it)."""
    try:
        shown = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return option in shown.stdout + shown.stderr


NODE_NEEDS = (
    "bubblewrap needs, where the harness runs: unprivileged user namespaces "
    "(user.max_user_namespaces > 0; on Ubuntu 23.10 and later also "
    "kernel.apparmor_restrict_unprivileged_userns=0), a seccomp profile that lets it create "
    "namespaces and mount (not Docker's or the container runtime's default), no AppArmor "
    "profile that denies mounts, and a /proc that is not masked (it mounts the sandbox's own). "
    "In a Kubernetes pod: hostUsers: false, procMount: Unmasked, seccompProfile Localhost "
    "apmbench-harness.json (or Unconfined), appArmorProfile Unconfined (deploy/README.md "
    "lists what the nodes must allow); with docker run: --security-opt "
    "seccomp=deploy/k8s/seccomp/apmbench-harness.json --security-opt systempaths=unconfined "
    "--security-opt apparmor=unconfined"
)
"""What the refusal names when bwrap is installed but cannot build the sandbox here."""

_CAUSES = (
    ("mount proc", "/proc is masked (a container's default): the sandbox cannot mount its own"),
    ("namespace", "creating a user namespace is refused (seccomp, AppArmor or a sysctl)"),
    ("uid map", "writing the user namespace's uid map is refused (AppArmor's userns "
     "restriction or seccomp)"),
    ("make / slave", "mounts are refused (an AppArmor profile, or seccomp)"),
    ("Operation not permitted", "a system call bwrap needs is refused (seccomp or a sysctl)"),
)  # fmt: skip

_checked: set[str] = set()


def check_sandbox(bwrap: str) -> None:
    """Refuse (SandboxUnavailable: exit 2) where bwrap is installed but cannot build the
    sandbox, as in a container or pod with default settings: every start would fail the
    same way, and a run that went on unconfined would not be comparable. Runs `true` in a
    sandbox with the same hardening and filter as a system's; once per bwrap that worked."""
    if bwrap in _checked:
        return
    probe = Sandbox(SandboxPolicy(read_only=()), bwrap)
    try:
        done = probe.run(["true"], timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SandboxUnavailable(f"the sandbox cannot start here: {bwrap} failed ({e}). "
                                 f"{NODE_NEEDS}") from e  # fmt: skip
    if done.returncode == 0:
        _checked.add(bwrap)
        return
    lines = done.stderr.strip().splitlines()
    said = lines[-1].removeprefix("bwrap: ") if lines else f"exit code {done.returncode}"
    cause = next((why for key, why in _CAUSES if key in said), "bwrap refused")
    raise SandboxUnavailable(
        f"the sandbox cannot start here: {cause} (bwrap: {said}). {NODE_NEEDS}. Or pass "
        f"--no-sandbox to run the system unconfined (the report then says '{UNCONFINED_NOTE}'; "
        "a cluster's numbers are then not comparable)"
    )


def unconfined() -> dict[str, Any]:
    """The manifest's record of a process run without a sandbox (`--no-sandbox`)."""
    return {"confined": False, "note": UNCONFINED_NOTE}


def _module_roots(spec: str, search: Sequence[str]) -> tuple[list[Path], Path | None]:
    """For `package.module:Class`: the top-level package's directory (or module file) and
    the directory it is imported from, found as `python -m` in the harness's cwd would."""
    if ":" not in spec:
        return [], None
    top = spec.split(":", 1)[0].split(".", 1)[0]
    found = importlib.machinery.PathFinder.find_spec(top, list(search))
    if found is None:
        return [], None  # the server reports the import error itself
    if found.submodule_search_locations:
        dirs = [_real(d) for d in found.submodule_search_locations]
    elif found.origin:
        dirs = [_real(found.origin)]
    else:
        return [], None
    return dirs, dirs[0].parent


def _package_dirs() -> list[Path]:
    """Where the SDK's packages load from (an editable install maps them into the repo):
    what a server needs, and nothing of the harness."""
    import apmbench.adapters
    import apmbench.v1

    return [_real(d) for m in (apmbench.adapters, apmbench.v1) for d in m.__path__]


def harness_dirs() -> list[Path]:
    import apmbench.harness

    return [_real(d) for d in apmbench.harness.__path__]


def python_policy(
    system: str,
    hidden: Iterable[Path],
    env: Mapping[str, str],
    environ: Mapping[str, str] | None = None,
) -> SandboxPolicy:
    """The policy for `python -m apmbench.adapters SYSTEM`: the interpreter, the apmbench
    packages, the system's top-level package (for module:Class) and a model directory
    named by $APMBENCH_VLM_MODEL."""
    source = os.environ if environ is None else environ
    pythonpath = [p for p in source.get("PYTHONPATH", "").split(os.pathsep) if p]
    module_dirs, import_root = _module_roots(system, [os.getcwd(), *pythonpath, *sys.path[1:]])
    roots = {_real(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    roots |= {_real(p) for p in site.getsitepackages() if Path(p).is_dir()}
    roots.add(_real(sys.executable).parent)
    roots.update(_package_dirs())
    roots.update(module_dirs)
    named = dict.fromkeys(roots, "the Python installation the harness runs on")
    named.update(dict.fromkeys(module_dirs, f"--system {system}"))
    model = env.get("APMBENCH_VLM_MODEL")
    if model and Path(model).exists():
        roots.add(_real(model))
        named[_real(model)] = "APMBENCH_VLM_MODEL"
    # A nested root is bound with its parent already; binding it again is harmless but noisy.
    kept = sorted(r for r in roots if not any(o != r and _under(r, o) for o in roots))
    kept = [r for r in kept if not any(_under(r, Path(d)) for d in SYSTEM_DIRS)]
    host_mounts.refuse_pseudo_filesystems({r: named[r] for r in kept})
    run_env = {**env, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    if import_root is not None:
        run_env["PYTHONPATH"] = str(import_root)
    bin_dir = str(Path(sys.executable).parent)
    # Nothing of the harness in the box: its generator would rebuild a synthetic benchmark's
    # labels, and an installed (non-editable) harness lies inside the bound site-packages.
    masked = {_real(h) for h in hidden} | set(harness_dirs())
    masked |= set(labelled_dirs([*module_dirs, *([_real(model)] if model else [])]))
    return SandboxPolicy(
        read_only=tuple(kept),
        hidden=tuple(sorted(masked)),
        env=run_env,
        path=f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        cwd=import_root,
    )
