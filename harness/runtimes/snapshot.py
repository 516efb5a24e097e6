"""`--system NAME --start snapshot`: every start restores one pristine snapshot in gVisor.

The boundary of a start is an application kernel of its own (gVisor's `runsc`, ptrace
platform: its KVM platform hung on the machines this was built on). The system's /proc,
/sys, cgroups, page cache, inode numbers, sockets and pids belong to that kernel, so the
host-kernel channels a shared-kernel box must filter one by one (docs/guarantees.md) are
not there to filter. Its root holds only what the bubblewrap box would bind (the system
directories, the interpreter, the packages, a model directory), read-only; /tmp is a
tmpfs of its own; it has no network; its control directory is the one host path it can
write, and the only place it may create a socket (`--host-uds=create`).

The loaded point (docs/PROTOCOL.md#the-loaded-point): the harness starts the system once
with `APMBENCH_LOADED_POINT` naming its control directory. A server that supports it
loads (imports, model, weights) with no session data in reach, writes `loaded` there and
waits for `go` before it listens; the harness then checkpoints it (`runsc checkpoint`).
Every start from then on, the first included, is `runsc restore` of that one image into
a fresh control directory, then `go`: the same bytes every time, so nothing of an earlier
start can be in it, and no spare runs beside a live start. gVisor cannot checkpoint a
socket bound on the host, which is why a server listens only after `go`. A server that
never marks the point (it listens at once) gets no snapshot: each start is a full start,
still in gVisor.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, ClassVar, NoReturn

from apmbench.adapters.sdk import errors
from apmbench.adapters.sdk.loaded_point import ADDRESS_FILE, GO_FILE, LOADED_FILE, LOADED_POINT_ENV
from apmbench.harness.errors import ConfigError, RuntimeStartError
from apmbench.harness.protocol.client import Deadlines, SystemClient
from apmbench.harness.runtimes.base import Runtime, RuntimeConfig, wait_serving
from apmbench.harness.runtimes.local_config import LocalFacts, LocalRecord
from apmbench.harness.runtimes.log_pump import pump_log
from apmbench.harness.runtimes.logcap import DEFAULT_MAX_LOG_BYTES, LogSection
from apmbench.harness.runtimes.sandbox import (
    ETC_FILES,
    SANDBOX_HOME,
    SYSTEM_DIRS,
    TMP_SIZE_BYTES,
    SandboxPolicy,
)
from apmbench.harness.runtimes.spare_plan import STARTS_FILE
from apmbench.harness.runtimes.start_cgroups import StartCgroups, StartGroup

RUNSC_ENV = "APMBENCH_RUNSC"
PLATFORM = "ptrace"
CONTROL = "/run/apmbench"
"""The control directory's path inside the box (a fresh host directory per start)."""
SOCKET = f"{CONTROL}/sock"
BOX_FS_BYTES = 16 << 20
"""The box's own tmpfs: its root skeleton, copies of small files, the control directory
(all a start can write outside its own /tmp)."""
BOX_FS_INODES = 16384
"""Files and directories the box's tmpfs holds at most (and a tmpfs's inode count is then
this, not a share of the host's memory)."""
COPIED_FILE_BYTES = 1 << 20
"""A read-only file at most this size is copied onto the box's tmpfs rather than bound."""
LOADED_TIMEOUT_NOTE = "raise --startup-timeout if loading takes longer"


def find_runsc() -> str:
    """The runsc to use: $APMBENCH_RUNSC, else PATH's; refused with what to install."""
    given = os.environ.get(RUNSC_ENV)
    found = given if given and os.access(given, os.X_OK) else shutil.which("runsc")
    if found is None:
        raise ConfigError(
            "--start snapshot runs each start in gVisor: install runsc (as root: "
            "`apt-get install -y runsc`), or set APMBENCH_RUNSC to its path"
        )
    if os.geteuid() != 0:
        raise ConfigError("--start snapshot: runsc runs its sandboxes as root; run as root")
    return found


class SnapshotRuntime(Runtime):
    """A `--system` (or, as `CommandSnapshotRuntime`, a `--command`) whose every start is
    a restore of one snapshot, inside gVisor."""

    kind = "process"  # a --system process: ProcessRuntime reads its records (by kind)
    config_type: ClassVar[type[RuntimeConfig]] = RuntimeConfig
    reclaims_pages: ClassVar[bool] = True
    """False only in the test that shows what the reclaim stops: the host's page cache
    behind gVisor's file proxy then carries bits from one restore to the next."""
    noatime_binds: ClassVar[bool] = True
    """False only in the test that shows what the host-level read-only, noatime binds stop:
    each read through gVisor's file proxy then sets the host file's access time, which a
    later start reads with stat()."""
    private_statfs: ClassVar[bool] = True
    """False only in the test that shows what the box's own file systems stop: statfs() of
    any path in the box then reports the host disk's free blocks, which what a start
    writes (its output, kept in the run's log) moves, and a later start reads."""

    def __init__(
        self,
        system: str,
        log_path: Path,
        deadlines: Deadlines,
        startup_timeout_s: float,
        policy: SandboxPolicy,
        max_log_bytes: int | None = DEFAULT_MAX_LOG_BYTES,
        argv: list[str] | None = None,
    ) -> None:
        self.system = system
        self.args = argv or [sys.executable, "-m", "apmbench.adapters", system,
                             "--address", f"unix:{SOCKET}"]  # fmt: skip
        """The server's command line inside the box (a `--command`'s, its {address} given)."""
        self.log_path = log_path
        self.deadlines = deadlines
        self.startup_timeout_s = startup_timeout_s
        self.policy = policy
        self.max_log_bytes = max_log_bytes
        self.runsc = find_runsc()
        self.work = Path(tempfile.mkdtemp(prefix="apmgv-"))
        self.box = self.work / "box"
        """The root skeleton, the small files the box binds and every start's control
        directory: a tmpfs of the runtime's own (see `_mount_box`)."""
        self._box_mounted = False
        self._mount_box()
        self.root = self.box / "root"
        self.image = self.work / "image"
        self.starts = 0
        self.restores = 0
        self.snapshot: bool | None = None
        """True once the image is made, False for a server that never marked its loaded
        point (every start is then a full one), None before the first start."""
        self.load_s: float | None = None
        self.checkpoint_s: float | None = None
        self.restore_s: list[float] = []
        self.image_bytes = 0
        self._live: str | None = None
        self._control: Path | None = None
        self._client: SystemClient | None = None
        self._log: LogSection | None = None
        self._pump: threading.Thread | None = None
        self._control_fd: int | None = None
        self._sock_fd: int | None = None
        self._pids: dict[str, int] = {}
        # The host's page cache is behind gVisor's file proxy: a page of a bound file that a
        # start reads (sentry or gofer, host processes) stays resident after it, and a later
        # start can time its reads of such pages (red team 12: ~2,800 bits in under a
        # second between two runsc starts). Each start is born in cgroups of its own, and
        # what it makes resident once it serves is reclaimed when it stops (page_cache.py).
        self._groups = StartCgroups() if self.reclaims_pages else None
        self._group: StartGroup | None = None
        self.reclaimed_bytes = 0
        self._make_root()
        self._make_binds()

    # -- the box -------------------------------------------------------------------------

    def _runsc(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        """`runsc ARGS... NAME`: the last argument names the start (its state directory)."""
        try:
            with self._stdin() as stdin:
                return subprocess.run(
                    self._argv(args[-1], *args),
                    stdin=stdin, capture_output=True, text=True, timeout=timeout,
                )  # fmt: skip
        except subprocess.TimeoutExpired as e:
            raise RuntimeStartError(f"runsc {args[0]} did not return in {timeout:.0f} s") from e

    def _state(self, name: str) -> Path:
        """runsc's record of one start: a directory of its own, so that a start whose
        processes are all gone is forgotten by removing it (see `_remove`)."""
        return self.work / "state" / name

    def _argv(self, name: str, *args: str) -> list[str]:
        """runsc with the start's state directory and the box's settings."""
        # --ignore-cgroups: runsc would otherwise put the sandbox and its gofer in cgroups
        # of its own at each hierarchy's root, out of the start's (their page-cache reset).
        return [self.runsc, "--root", str(self._state(name)), f"--platform={PLATFORM}",
                "--network=none", "--host-uds=create", "--ignore-cgroups", *args]  # fmt: skip

    def _stdin(self) -> IO[bytes]:
        """An empty file of this runtime's own, open for runsc's stdin. runsc, as root,
        hands its stdio to the sandbox and chowns each to the sandbox's user (65534):
        given /dev/null (subprocess.DEVNULL, or an inherited one) it changed the owner of
        the host's /dev/null, and every later bubblewrap box then copied a node it could
        not touch (the device-node test's "zero and random touched: True", others EPERM)."""
        empty = self.work / "stdin"
        empty.touch()
        return empty.open("rb")

    def _make_root(self) -> None:
        """An empty read-only root with a mount point for every bind and the merged-/usr
        links (a bind over a link would put a directory where programs expect the link)."""
        self.root.mkdir()
        for name in SYSTEM_DIRS:
            host = Path(name)
            if host.is_symlink():
                (self.root / name.lstrip("/")).symlink_to(os.readlink(host))
        for dest in self._bind_sources():
            target = self.root / str(dest).lstrip("/")
            if target.exists() or target.is_symlink():
                continue
            if dest.is_dir():
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.touch()
        for path in (*self.policy.hidden, Path(CONTROL), Path("/tmp"), Path("/proc")):
            (self.root / str(path).lstrip("/")).mkdir(parents=True, exist_ok=True)

    def _bind_sources(self) -> list[Path]:
        system = [Path(d) for d in SYSTEM_DIRS if Path(d).is_dir() and not Path(d).is_symlink()]
        etc = [Path(f) for f in ETC_FILES if Path(f).exists()]
        return [*system, *etc, *self.policy.read_only]

    def _mount_box(self) -> None:
        """A tmpfs for `self.box`. statfs() in gVisor reports the host file system a path
        is on, free blocks included, and what a start writes (its output, which the run's
        log keeps) moves the host disk's count for the next start to read (red team 14:
        10-12 bits a restart). Every path in the box is therefore on a file system of the
        box's own: this tmpfs (the root, the control directory, copies of small files) or
        an overlay whose statfs is a fresh tmpfs's (`_host_mounts`). A start can fill the
        control directory to BOX_FS_BYTES at most, and its directory is removed before the
        next start, so the next start finds the same counts."""
        self.box.mkdir()
        if not self.private_statfs:
            return
        # noatime: a read of a copied file would set its access time on this tmpfs, which
        # outlives every start (red team 15: /etc's copies as write-once cells).
        atime = ",noatime" if self.noatime_binds else ""
        opts = f"size={BOX_FS_BYTES},nr_inodes={BOX_FS_INODES},mode=0755,nosuid,nodev{atime}"
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "apmbench-box", str(self.box)],
                              capture_output=True, text=True)  # fmt: skip
        if done.returncode != 0:
            shutil.rmtree(self.work, ignore_errors=True)
            raise RuntimeStartError(
                f"--start snapshot could not mount the box's tmpfs at {self.box}: "
                f"{done.stderr.strip() or done.returncode} (it needs root and a kernel with tmpfs)"
            )
        self._box_mounted = True

    def _unmount_box(self) -> None:
        if self._box_mounted:
            subprocess.run(["umount", "--lazy", str(self.box)], capture_output=True)
            self._box_mounted = False

    @functools.cached_property
    def _binds(self) -> list[tuple[Path, Path]]:
        """Each bind's host path and the path runsc binds it from: a copy on the box's
        tmpfs (a small file, with `private_statfs`), a read-only, noatime mount of it in
        the start's mount namespace (`_host_mounts`), or, with both switched off, the path
        itself. Decided once: the spec of every start and the copies made at the start of
        the run must agree."""
        sources = self._bind_sources()
        if not (self.noatime_binds or self.private_statfs):
            return [(src, src) for src in sources]
        return [(src, self._staging(i, src)) for i, src in enumerate(sources)]

    def _staging(self, i: int, src: Path) -> Path:
        if self._copied(src):
            return self.box / "files" / str(i)
        return self.work / "binds" / str(i)

    def _copied(self, src: Path) -> bool:
        return self.private_statfs and src.is_file() and src.stat().st_size <= COPIED_FILE_BYTES

    def _make_binds(self) -> None:
        for i, (src, staged) in enumerate(self._binds):
            if staged == src:
                continue
            staged.parent.mkdir(parents=True, exist_ok=True)
            if staged.parent == self.box / "files":  # a copy: /etc does not change in a run
                shutil.copyfile(src, staged)
                staged.chmod(src.stat().st_mode & 0o755)
                continue
            if src.is_dir():
                staged.mkdir()
            else:
                staged.touch()
            if self.private_statfs:
                (self.work / "lower" / str(i)).mkdir(parents=True)
                if not src.is_dir():
                    (self.work / "files" / str(i)).mkdir(parents=True)

    def _host_mounts(self, argv: list[str]) -> list[str]:
        """`argv` (runsc run or restore) in a mount namespace of its own where every bind
        source is mounted read-only and noatime at host level, under an overlay of the
        start's own. runsc's file proxy (the gofer) binds the spec's sources with the
        kernel's default flags whatever the spec says (`rw,relatime` in its mountinfo:
        only gVisor's kernel enforced `ro`), so each read in the box set the host file's
        access time, a store on the disk that no restore or reclaim undoes (red team 13:
        49,272 bits a restart, text-log's whole score at 40 B/hr). A bind of a read-only,
        noatime mount keeps those flags. The overlay (read-only, its upper layer on a
        tmpfs of the namespace's own) gives every bound path a file system whose statfs()
        is that empty tmpfs's, not the host disk's (`_mount_box`). The namespace (private
        propagation) ends with the start's last process."""
        if self._mount_script is None:
            return argv
        return ["unshare", "--mount", "--propagation", "private", "--",
                "/bin/sh", "-c", self._mount_script, "sh", *argv]  # fmt: skip

    @functools.cached_property
    def _mount_script(self) -> str | None:
        """`_host_mounts`' shell script, the same for every start (built once: it stats
        every source and reads the host's mount table)."""
        if not (self.noatime_binds or self.private_statfs):
            return None
        steps = []
        upper = self.work / "upper"
        if self.private_statfs:
            upper.mkdir(exist_ok=True)
            opts = "size=1m,nr_inodes=1024,mode=0700"
            steps.append(f"mount -t tmpfs -o {opts} apmbench-upper {_q(upper)}")
        for i, (src, staged) in enumerate(self._binds):
            if staged.parent == self.box / "files":  # a copy, on the box's tmpfs
                continue
            if not self.private_statfs:
                steps += self._read_only(src, staged)
                continue
            lower = self.work / "lower" / str(i)
            tree = src if src.is_dir() else src.parent
            steps += self._read_only(tree, lower)
            top = staged if src.is_dir() else self.work / "files" / str(i)
            for j, below in enumerate([tree, *_mounts_below(tree)]):
                rel = below.relative_to(tree)
                steps.append(self._overlay(below, lower / rel, top / rel, upper / f"{i}-{j}"))
            if not src.is_dir():
                steps.append(f"mount --bind {_q(top / src.name)} {_q(staged)}")
        return " && ".join([*steps, 'exec "$@"']) + " || exit 125"

    def _read_only(self, src: Path, target: Path) -> list[str]:
        """Shell steps: `src` (and every mount below it) bound at `target`, read-only and,
        with `noatime_binds`, noatime."""
        steps = [f"mount --rbind {_q(src)} {_q(target)}"]
        if not self.noatime_binds:
            return steps
        flags = "remount,bind,ro,noatime,nosuid,nodev"
        for below in [src, *_mounts_below(src)]:
            steps.append(f"mount -o {flags} {_q(target / below.relative_to(src))}")
        return steps

    def _overlay(self, host: Path, lower: Path, target: Path, upper: Path) -> str:
        """A shell step: a read-only overlay of `lower` (where `host` is bound in the
        namespace) at `target`, with an upper layer of its own under `upper`; for a file
        mounted below a tree, or a path overlayfs cannot take as an option, a bind."""
        if not host.is_dir() or any(c in str(lower) for c in ",:"):
            return f"mount --bind {_q(lower)} {_q(target)}"
        atime = "noatime" if self.noatime_binds else "relatime"
        opts = f"ro,{atime},lowerdir={lower},upperdir={upper}/u,workdir={upper}/w"
        return (f"mkdir -p {_q(upper / 'u')} {_q(upper / 'w')} && "
                f"mount -t overlay apmbench-ro -o {_q(opts)} {_q(target)}")  # fmt: skip

    def _spec(self, control: Path, loaded_point: bool) -> dict[str, object]:
        p = self.policy
        env = {**p.env, "HOME": SANDBOX_HOME, "TMPDIR": "/tmp", "PATH": p.path}
        if loaded_point:
            env[LOADED_POINT_ENV] = CONTROL
        ro = ["rbind", "ro", "nosuid", "nodev"]
        mounts: list[dict[str, object]] = [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "nodev", f"size={TMP_SIZE_BYTES}"]},
        ]  # fmt: skip
        mounts += [
            {"destination": str(src), "type": "bind", "source": str(staged), "options": ro}
            for src, staged in self._binds
        ]
        mounts += [
            {"destination": str(h), "type": "tmpfs", "source": "tmpfs", "options": ["ro"]}
            for h in p.hidden
            if any(h == r or r in h.parents for r in p.read_only)
        ]
        mounts.append(
            {"destination": CONTROL, "type": "bind", "source": str(control),
             "options": ["rbind", "rw", "nosuid", "nodev", "noexec"]}
        )  # fmt: skip
        return {
            "ociVersion": "1.0.0",
            "process": {
                "terminal": False,
                "user": {"uid": 0, "gid": 0},
                "args": self.args,
                "env": [f"{k}={v}" for k, v in sorted(env.items())],
                "cwd": str(p.cwd or "/tmp"),
                "capabilities": {k: [] for k in ("bounding", "effective", "inheritable",
                                                 "permitted", "ambient")},
                "noNewPrivileges": True,
            },
            "root": {"path": str(self.root), "readonly": True},
            "hostname": "box",
            "mounts": mounts,
            "linux": {
                "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")]
            },
        }  # fmt: skip

    def _bundle(self, name: str, control: Path, loaded_point: bool) -> Path:
        bundle = self.work / "bundles" / name
        bundle.mkdir(parents=True)
        (bundle / "config.json").write_text(json.dumps(self._spec(control, loaded_point)))
        return bundle

    def _new_start(self) -> tuple[str, Path, LogSection]:
        """A start's name, control directory (held open: the harness reaches what is in it
        through that descriptor, never following a link the box made) and log section."""
        self.starts += 1
        name = f"start-{os.getpid()}-{self.starts}"
        control = self.box / "control" / str(self.starts)
        control.mkdir(parents=True)
        control.chmod(0o777)
        self._control_fd = os.open(control, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        log = LogSection(self.log_path, f"start #{self.starts} (gVisor) ---", self.max_log_bytes)
        if self._groups is not None and self._groups.available():
            self._group = self._groups.for_start(self.starts)
        return name, control, log

    # -- starts --------------------------------------------------------------------------

    @property
    def can_restart(self) -> bool:
        return True

    def start(self) -> SystemClient:
        if self._client is not None:
            raise RuntimeStartError("snapshot runtime already started: use restart()")
        if self.snapshot is None:
            return self._first()
        return self._restore()

    def restart(self) -> SystemClient:
        self._retire()
        return self.start()

    def _first(self) -> SystemClient:
        """The first start: load to the loaded point and checkpoint it (then restore it,
        as every start is), or serve at once for a server that never marks the point."""
        name, control, log = self._new_start()
        bundle = self._bundle(name, control, loaded_point=True)
        started = time.monotonic()
        self._runsc_detached(["run", "--detach", "--bundle", str(bundle), name], log)
        self._live, self._control = name, control
        deadline = started + self.startup_timeout_s
        while time.monotonic() < deadline:
            if (control / LOADED_FILE).exists():
                break
            if (control / "sock").exists() or not self._running(name):
                break
            time.sleep(0.02)
        if (control / LOADED_FILE).exists():
            self.load_s = time.monotonic() - started
            self._checkpoint(name)
            self.snapshot = True
            self._retire()  # the loading start's log and control directory
            return self._restore()
        if not self._running(name):
            self._fail("exited before it was ready")
        self.snapshot = False  # it listened without marking the point: a full start each time
        self.load_s = time.monotonic() - started
        return self._serve(control, deadline)

    def _checkpoint(self, name: str) -> None:
        started = time.monotonic()
        done = self._runsc("checkpoint", "--image-path", str(self.image), name, timeout=300)
        self._live = None
        if done.returncode != 0:
            self._remove(name)
            raise RuntimeStartError(
                f"runsc could not checkpoint {self.system!r} at its loaded point: "
                f"{_runsc_error(done.stderr)}. A server must not listen, or hold a socket on "
                "the host, before its loaded point (docs/PROTOCOL.md#the-loaded-point)"
            )
        self._remove(name)
        self.checkpoint_s = time.monotonic() - started
        self.image_bytes = sum(f.stat().st_size for f in self.image.rglob("*") if f.is_file())

    def _restore(self) -> SystemClient:
        if not self.snapshot:
            name, control, log = self._new_start()
            bundle = self._bundle(name, control, loaded_point=False)
            self._runsc_detached(["run", "--detach", "--bundle", str(bundle), name], log)
            self._live, self._control = name, control
            return self._serve(control, time.monotonic() + self.startup_timeout_s)
        name, control, log = self._new_start()
        bundle = self._bundle(name, control, loaded_point=True)
        started = time.monotonic()
        args = ["restore", "--detach", "--image-path", str(self.image), "--bundle", str(bundle)]
        # Written before the box runs: once it does, it may plant a link at any name in its
        # control directory, and a write by this (root) process would follow it to any
        # host path (red team 16: 53 of 100 restores won that race).
        self._write_control(ADDRESS_FILE, f"unix:{SOCKET}\n")
        self._write_control(GO_FILE, "")
        self._runsc_detached([*args, name], log)
        self._live, self._control = name, control
        self.restores += 1
        client = self._serve(control, time.monotonic() + self.startup_timeout_s)
        self.restore_s.append(time.monotonic() - started)
        return client

    def _write_control(self, name: str, text: str) -> None:
        """A new file in the start's control directory, made through its descriptor with
        O_EXCL and O_NOFOLLOW, so never through a link."""
        assert self._control_fd is not None
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(name, flags, 0o644, dir_fd=self._control_fd)
        with os.fdopen(fd, "w") as out:
            out.write(text)

    def _runsc_detached(self, args: list[str], log: LogSection) -> None:
        """`runsc run|restore --detach`: the box's stdout and stderr (donated on a restore
        too) and runsc's own complaints go into a pipe that a thread copies into the
        start's log section, bounded by `--max-log-size` as it is written (red team 16:
        a start printing 1 GiB into a file took the harness to 1.2 GB of memory when the
        file was kept). runsc returns once the box runs; the box holds the pipe's write
        end until its last process ends, and the thread with it."""
        argv = self._host_mounts(self._argv(args[-1], *args))
        if self._group is not None:  # born in the start's cgroups: sandbox and gofer alike
            argv = self._group.enter_argv(argv)
        read, write = os.pipe()
        self._log = log
        self._pump = threading.Thread(
            target=pump_log, args=(os.fdopen(read, "rb"), log), name="gvisor-log", daemon=True
        )
        self._pump.start()
        try:
            with self._stdin() as stdin:
                done = subprocess.run(
                    argv,
                    stdin=stdin, stdout=write, stderr=write,
                    timeout=max(self.startup_timeout_s, 60.0),
                )  # fmt: skip
        except subprocess.TimeoutExpired as e:
            raise RuntimeStartError(
                f"runsc {args[0]} of {self.system!r} did not return in {e.timeout:.0f} s "
                f"({LOADED_TIMEOUT_NOTE})"
            ) from e
        finally:
            os.close(write)
        if done.returncode != 0:
            self._pump.join(timeout=5)
            said = _runsc_error(self.log_tail(lines=40))
            raise RuntimeStartError(f"runsc could not {args[0]} {self.system!r}: {said}")

    def _serve(self, control: Path, deadline: float) -> SystemClient:
        assert self._live is not None
        name = self._live
        sock = control / "sock"
        while not os.path.lexists(sock) and time.monotonic() < deadline and self._running(name):
            time.sleep(0.01)
        client = SystemClient(self._socket_address(), self.deadlines)
        try:
            wait_serving(client, max(deadline - time.monotonic(), 1.0), lambda: self._running(name))
        except errors.Unavailable as e:
            client.close()
            self._fail(str(e))
        if self._group is not None:
            try:  # before its first request: what it reads from now on is reclaimed
                self._group.serving()
            except RuntimeStartError as e:
                client.close()
                self._fail(str(e))
        self._client = client
        return client

    def _socket_address(self) -> str:
        """The address of the start's socket, pinned to the socket file itself: opened
        without following links, and refused unless it is a socket in the control
        directory's file system (a link the box planted could name any host socket)."""
        assert self._control_fd is not None
        try:
            fd = os.open("sock", os.O_PATH | os.O_NOFOLLOW, dir_fd=self._control_fd)
        except FileNotFoundError:
            self._fail("it made no socket")
        found = os.fstat(fd)
        problem = None
        if stat.S_ISLNK(found.st_mode):
            problem = "is a symbolic link"
        elif not stat.S_ISSOCK(found.st_mode):
            problem = f"is not a socket (mode {stat.filemode(found.st_mode)})"
        elif found.st_dev != os.fstat(self._control_fd).st_dev:
            problem = "is not on its control directory's file system"
        if problem is not None:
            os.close(fd)
            self._fail(f"its control directory's `sock` {problem}; the harness connects only "
                       "to the socket the server made there, and follows no link")  # fmt: skip
        self._sock_fd = fd
        return f"unix:/proc/self/fd/{fd}"

    def _running(self, name: str) -> bool:
        """Whether the start's sandbox still runs: its pid from `runsc state` once, then
        /proc (a `runsc state` every look would cost a process each 50 ms)."""
        pid = self._pids.get(name)
        if pid is None:
            done = self._runsc("state", name, timeout=30)
            if done.returncode != 0:
                return False
            with contextlib.suppress(ValueError, TypeError):
                state = json.loads(done.stdout)
                if state.get("status") in ("running", "created") and int(state.get("pid", 0)) > 0:
                    pid = self._pids[name] = int(state["pid"])
            if pid is None:
                return False
        try:
            fields = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        return fields.rsplit(")", 1)[-1].split()[0] != "Z"  # a zombie has ended

    def _fail(self, why: str) -> NoReturn:
        tail = self.log_tail()
        self._retire()
        raise RuntimeStartError(
            f"system {self.system!r} did not start in gVisor: {why}. The end of its output "
            f"({self.log_path}):\n{tail or '(no output)'}"
        )

    def _retire(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._live is not None:
            self._remove(self._live)
            self._live = None
        self._release_group()
        self._keep_log()
        for fd in (self._sock_fd, self._control_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._sock_fd = self._control_fd = None
        if self._control is not None:
            _remove_tree(self._control)
            self._control = None

    def _remove(self, name: str) -> None:
        """Kill the start's sandbox, then every process left in its cgroups (the sentry,
        the gofer: reclaiming what they made resident), then forget it. `runsc delete
        --force` spent 1.5 s a start here, alive or dead, of a 2.0 s restart; with every
        process of the start gone, and runsc keeping no cgroup (`--ignore-cgroups`) and no
        host mount, its state directory is all that is left of it."""
        self._pids.pop(name, None)
        self._runsc("kill", name, str(int(signal.SIGKILL)), timeout=30)
        if self._group is not None:
            self._release_group()
            shutil.rmtree(self._state(name), ignore_errors=True)
            return
        self._runsc("delete", "--force", name, timeout=60)
        shutil.rmtree(self._state(name), ignore_errors=True)

    def _release_group(self) -> None:
        """The start's cgroups, once its sandbox is gone: what it left is killed, the pages it
        made resident while serving are reclaimed, the cgroups removed."""
        if self._group is not None:
            self.reclaimed_bytes += self._group.release()
            self._group = None

    def _keep_log(self) -> None:
        """End the start's log section once its processes are gone (the pipe's end)."""
        if self._pump is not None:
            self._pump.join(timeout=5)
            self._pump = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self) -> None:
        try:
            self._retire()
            if self.starts:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                (self.log_path.parent / STARTS_FILE).write_text(
                    json.dumps(self.measured(), indent=1)
                )
        finally:  # whatever a start left, nothing of the runtime stays on the host
            try:
                for state in sorted((self.work / "state").glob("*")):
                    self._runsc("delete", "--force", state.name, timeout=60)
                if self._groups is not None:
                    self._groups.close()
            finally:
                self._unmount_box()  # what the starts wrote there goes with it
                _remove_tree(self.work)

    def later_start_s(self, first_start_s: float) -> float | None:
        # The first start loaded and checkpointed; every later one is a restore like the
        # one that ended it (or a full start again, for a server that never marks the point).
        return self.restore_s[-1] if self.snapshot and self.restore_s else None

    # -- records -------------------------------------------------------------------------

    def measured(self) -> dict[str, object]:
        """What the starts cost: logs/starts.json."""
        restores = sorted(self.restore_s)
        return {
            "boundary": "gvisor",
            "snapshot": bool(self.snapshot),
            "starts": self.starts,
            "restores": self.restores,
            "load_s": self.load_s,
            "checkpoint_s": self.checkpoint_s,
            "image_bytes": self.image_bytes,
            "page_cache_reclaimed_bytes": self.reclaimed_bytes,
            "restore_s": {
                "median": restores[len(restores) // 2] if restores else None,
                "max": restores[-1] if restores else None,
            },
        }

    def sandbox_facts(self) -> dict[str, object]:
        return {
            "confined": True,
            "tool": "gvisor",
            "boundary": "gVisor (runsc, its own application kernel)",
            "runsc": self.runsc,
            "platform": PLATFORM,
            "network": "none",
            "read_only": [str(p) for p in self.policy.read_only],
            "hidden": [str(p) for p in self.policy.hidden],
            "env": sorted(self.policy.env),
            "tmp_size_bytes": TMP_SIZE_BYTES,
        }

    def describe(self) -> LocalRecord:
        facts: LocalFacts = {
            "sandbox": self.sandbox_facts(),
            "max_log_bytes": self.max_log_bytes,
            "spare": False,
            "start": "snapshot",
            "page_cache": self._page_cache_facts(),
        }
        record = {
            "kind": self.kind,
            "system": self.system,
            "python": sys.executable,
            **facts,
            "snapshot": {
                "made": bool(self.snapshot),
                "load_s": self.load_s,
                "checkpoint_s": self.checkpoint_s,
                "image_bytes": self.image_bytes,
                "starts": self.starts,
                "restores": self.restores,
            },
        }
        return record  # type: ignore[return-value]

    def _page_cache_facts(self) -> dict[str, object]:
        if self._groups is None:
            return {"reset": False, "why_not": "switched off (a test's positive control)"}
        return self._groups.describe()

    def log_tail(self, lines: int = 15) -> str:
        """The end of system.log (the live start's section is its last)."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(max(log.seek(0, os.SEEK_END) - 64_000, 0))
                text = log.read().decode(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


def _mounts_below(path: Path) -> list[Path]:
    """Mount points strictly below `path` on this host (an rbind carries them along, each
    with its own flags), shallowest first."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    found = set()
    for line in lines:
        point = Path(line.split()[4].encode().decode("unicode_escape"))
        if path in point.parents:
            found.add(point)
    return sorted(found, key=lambda p: len(p.parts))


def _remove_tree(path: Path) -> None:
    """`rm -rf path`: a start may leave a tree in its control directory deeper than
    shutil.rmtree can recurse (red team 15: 1,200 levels raised RecursionError, which
    `ignore_errors` does not cover, and the run died with the box's tmpfs still mounted)."""
    if path.exists() or path.is_symlink():
        subprocess.run(["rm", "-rf", "--one-file-system", "--", str(path)], capture_output=True)


def _q(path: Path | str) -> str:
    return shlex.quote(str(path))


def _runsc_error(stderr: str) -> str:
    """runsc's first line of complaint, without the Go stack that follows it."""
    lines = [line for line in stderr.splitlines() if line and not line[0].isspace()]
    first = next((line for line in lines if "goroutine" not in line), stderr.strip())
    return first[:600]
