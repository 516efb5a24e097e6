"""`python -m apmbench.adapters.template`: the pre-imported template a `--start template`
run forks each system start from (see harness/runtimes/template.py for the harness side).

It runs inside the same bubblewrap box a fresh start gets, has imported only what
`python -m apmbench.adapters` imports before it loads a system (grpc, the SDK, the
system registry) and waits on its control socket. No system code ever runs in
it: each start is a double fork, and the start process never returns. Before it loads
the system, the start process

- drops every descriptor but the log pipe (stdout, stderr) and its status socket (no
  stdin, as a fresh start, whose bwrap closes the seccomp pipe it read from stdin);
- enters new mount, PID, IPC, UTS and cgroup namespaces (CAP_SYS_ADMIN in the box's
  user namespace is the template's capability for this), so siblings share no SysV or
  POSIX IPC object and cannot name each other's pids;
- as the new PID namespace's init, mounts its own /proc (the box's read-only covers
  copied, and the frozen copies of the host-wide counters the request names bound over
  it again), a fresh size-bounded /tmp (HOME in it, read-only binds under /tmp bound
  again), its socket directory as a bounded tmpfs, a fresh /dev/shm and /dev/pts, and
  makes the box's shared /dev read-only;
- enters a new user namespace (uid 65534 on the template's, no further user namespaces),
  a network namespace of its own (loopback only, up, as bwrap's; no abstract socket
  shared) and a new mount namespace owned by it, so every mount is locked; checks that
  nothing writable is left but what it mounted itself;
- drops every capability (bounding and ambient sets too), sets no_new_privs and installs
  the harness's seccomp filter (the bytes a fresh start's bwrap gets), and checks
  /proc/self/status says so;
- forks the server process (pid 2, as under bwrap's init), which takes the fresh start's
  command line (argv and /proc/self/cmdline) and runs `apmbench.adapters` as __main__.

The template never learns anything from a start: it does not reap the start process
(the intermediate fork exits at once; the box's init reaps the orphan), reads nothing
from it, and the status goes straight to the harness over a socket the harness made.
"""

from __future__ import annotations

# What `python -m apmbench.adapters` imports before it loads a system, and what
# grpc.server() imports lazily: imported here once, so a start skips them. Nothing else
# (no system module) is imported.
import concurrent.futures.thread  # noqa: F401
import contextlib
import ctypes
import fcntl
import json
import os
import runpy
import signal
import socket
import stat
import struct
import sys
from typing import Any

import grpc._server  # noqa: F401

import apmbench.adapters.sdk.errors
import apmbench.adapters.sdk.server
import apmbench.adapters.systems

# The installed distributions' system entry points, read once here: `load_system` reads
# them before it resolves any name (a plugin may not shadow a built-in), and reading
# them (importlib.metadata and every dist-info directory) was half of a null start's
# CPU. Reading metadata imports nothing of those distributions, and the box is the same
# read-only tree a start sees, so a start finds exactly what it would have read itself.
apmbench.adapters.systems.SYSTEM_REGISTRY.names()

CONTROL_FD = -1
"""The control socket's descriptor (`--control FD`)."""
LIBC = ctypes.CDLL(None, use_errno=True)

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND = 0x20, 0x400, 0x800, 0x1000
MS_REC, MS_PRIVATE, MS_RELATIME = 0x4000, 0x40000, 0x200000
_ST_TO_MS = ((0x1, MS_RDONLY), (0x2, MS_NOSUID), (0x4, MS_NODEV), (0x8, MS_NOEXEC),
             (0x400, MS_NOATIME), (0x800, MS_NODIRATIME), (0x1000, MS_RELATIME))  # fmt: skip

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_SECCOMP = 1, 4, 22
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL, SECCOMP_MODE_FILTER = 4, 2
CAP_VERSION_3 = 0x20080522
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class SetupError(Exception):
    """A step of a start's confinement failed: the start ends before any system code."""


def _check(ret: int, what: str) -> None:
    if ret != 0:
        code = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(code)}")


def _unshare(flags: int, what: str) -> None:
    _check(LIBC.unshare(ctypes.c_int(flags)), f"unshare({what})")


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None
) -> None:
    _check(
        LIBC.mount(
            source.encode() if source is not None else None,
            target.encode(),
            fstype.encode() if fstype is not None else None,
            ctypes.c_ulong(flags),
            data.encode() if data is not None else None,
        ),
        f"mount {fstype or 'bind'} on {target}",
    )


def _prctl(option: int, arg: int, what: str) -> None:
    _check(
        LIBC.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0),
                   ctypes.c_ulong(0), ctypes.c_ulong(0)),
        what,
    )  # fmt: skip


def _remount_ro(path: str) -> None:
    """Read-only, keeping the flags the mount has (a locked one refuses to lose them)."""
    have = os.statvfs(path).f_flag
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY
    for st, ms in _ST_TO_MS:
        if have & st:
            flags |= ms
    _mount(None, path, None, flags, None)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _mountinfo() -> list[tuple[str, str, str]]:
    """(mount point, per-mount options, file system type) of every mount, in order."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields = left.split()
            point = fields[4].encode().decode("unicode_escape")
            out.append((point, fields[5], right.split()[0]))
    return out


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _map_ids(inside: int, uid: int, gid: int) -> None:
    """The start's uid and gid (a fresh start's: 65534) onto the template's own."""
    _write("/proc/self/uid_map", f"{inside} {uid} 1\n")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/gid_map", f"{inside} {gid} 1\n")


def _drop_capabilities() -> None:
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        _prctl(PR_CAPBSET_DROP, cap, f"drop capability {cap} from the bounding set")
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, "clear the ambient capabilities")
    header = struct.pack("Ii", CAP_VERSION_3, 0)
    data = bytes(24)  # two __user_cap_data_struct: effective, permitted, inheritable
    hbuf = ctypes.create_string_buffer(header, len(header))
    dbuf = ctypes.create_string_buffer(data, len(data))
    _check(LIBC.capset(hbuf, dbuf), "capset (drop every capability)")


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _install_filter(program: bytes) -> None:
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
    _check(
        LIBC.prctl(ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(SECCOMP_MODE_FILTER),
                   ctypes.byref(fprog), ctypes.c_ulong(0), ctypes.c_ulong(0)),
        "install the seccomp filter",
    )  # fmt: skip


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


def _status() -> dict[str, str]:
    with open("/proc/self/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def _confine(req: dict[str, Any], program: bytes) -> None:
    """Everything between the fork and the system: see the module docstring."""
    covers = [p for p, _, _ in _mountinfo() if _under(p, "/proc") and p != "/proc"]
    # The box's frozen copies of /proc's host-wide counters (the harness's procview.py),
    # held by a descriptor each: the fresh /proc is live again until they are bound on it.
    frozen = [(path, os.open(path, os.O_PATH)) for path in req.get("proc_covers", [])]
    # The read-only binds under /tmp (a model's directory, a module in a temp dir), held
    # by a descriptor each: the fresh /tmp hides their paths.
    held = [(path, os.open(path, os.O_PATH)) for path in req["tmp_binds"]]
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    for path, fd in frozen:
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND, None)
        _remount_ro(path)
        os.close(fd)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={req['tmp_size']},mode=755")
    os.mkdir(req["home"], 0o755)
    for path, fd in held:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.makedirs(path, exist_ok=True)
        else:  # a single-file module (`module.py:Class`): its mount point is an empty file
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, None)
        _remount_ro(path)
        os.close(fd)
    os.makedirs(req["dir"], exist_ok=True)
    _mount("tmpfs", req["dir"], "tmpfs", MS_NOSUID | MS_NODEV,
           f"size={req['dir_size']},mode=755")  # fmt: skip
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755")
    _mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
           "newinstance,ptmxmode=0666,mode=620")  # fmt: skip
    # The box's /dev (and the device nodes bound into it) is the template's, shared by
    # every start: read-only here (a device node still reads and writes).
    for point, _, _ in _mountinfo():
        if (
            _under(point, "/dev")
            and not _under(point, "/dev/shm")
            and not _under(point, "/dev/pts")
        ):
            _remount_ro(point)
    # A user namespace of its own, in which no further one can be made, and a mount
    # namespace it owns: every mount above is now locked (cannot be unmounted or made
    # writable again, even with the capabilities the new namespace grants for a moment).
    uid, gid = os.getuid(), os.getgid()
    _unshare(CLONE_NEWUSER, "user")
    _map_ids(req["uid"], uid, gid)
    _write("/proc/sys/user/max_user_namespaces", "0")
    # Its network namespace, owned by the new user namespace, so that it may bring the
    # loopback up as bwrap does in a fresh box (no other interface: no network).
    _unshare(CLONE_NEWNET, "network")
    _loopback_up()
    _unshare(CLONE_NEWNS, "mount")
    for path in covers:  # as bwrap covers the box's /proc
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND | MS_REC, None)
            _remount_ro(path)
    allowed = {"/proc", "/tmp", req["dir"], "/dev/shm", "/dev/pts"}
    top: dict[str, tuple[str, str]] = {}
    for point, options, fstype in _mountinfo():
        top[point] = (options, fstype)  # a later entry at the same point lies over it
    writable = sorted(p for p, (o, _) in top.items() if "rw" in o.split(",") and p not in allowed)
    if writable:
        raise SetupError(f"writable mounts left: {', '.join(writable)}")
    os.chdir(req["cwd"])
    _drop_capabilities()
    _prctl(PR_SET_NO_NEW_PRIVS, 1, "set no_new_privs")
    _install_filter(program)
    status = _status()
    zero = "0000000000000000"
    caps = {k: status.get(k) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")}
    if any(v != zero for v in caps.values()) or status.get("NoNewPrivs") != "1":
        raise SetupError(f"capabilities left: {caps}, NoNewPrivs {status.get('NoNewPrivs')}")
    if status.get("Seccomp") != "2":
        raise SetupError("the seccomp filter is not in force")


def _set_cmdline(argv: list[str]) -> None:
    """/proc/self/cmdline as a fresh start's: the template's own command line left room."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48, 49)
    text = b"\0".join(a.encode() for a in argv) + b"\0"
    if len(text) > end - start:
        raise SetupError("the command line is longer than the template's room for it")
    ctypes.memmove(start, text + bytes(end - start - len(text)), end - start)


def _forward(pid: int) -> None:
    def handle(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)

    for sig in FORWARDED:
        signal.signal(sig, handle)


def _wait_for(pid: int, reap_all: bool) -> int:
    """Wait for `pid` (an init reaps every orphan meanwhile); its exit status as a code."""
    while True:
        try:
            got, status = os.waitpid(-1 if reap_all else pid, 0)
        except ChildProcessError:
            return 1
        if got == pid:
            return os.waitstatus_to_exitcode(status)


def _server(argv: list[str]) -> None:
    """The system's process: what `python -m apmbench.adapters ...` would run."""
    _set_cmdline(argv)
    for sig in FORWARDED:  # as a new interpreter has them
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.argv = ["-m", *argv[3:]]  # runpy puts the module's path first, as python -m does
    sys.orig_argv = list(argv)
    runpy.run_module("apmbench.adapters", run_name="__main__", alter_sys=True)


def _init(req: dict[str, Any], program: bytes) -> int:
    """Pid 1 of the start's PID namespace: confine, then fork the server and wait."""
    os.close(4)  # the status socket stays with the start process
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "die with the start process")
    os.setsid()
    _confine(req, program)
    pid = os.fork()
    if pid == 0:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "die with init")
        try:
            _server(req["argv"])
        except SystemExit as e:
            os._exit(e.code if isinstance(e.code, int) else 1)
        except BaseException as e:  # the system's own failure, as python would show it
            import traceback

            traceback.print_exception(e)
            os._exit(1)
        os._exit(0)
    _forward(pid)
    return _wait_for(pid, reap_all=True)


def _start(req: dict[str, Any], program: bytes, status_fd: int) -> int:
    """The start process: own namespaces (but its user namespace), then its init."""
    # No parent-death signal here: its parent is the intermediate fork, which exits at
    # once. It dies with the template's box (the box's PID namespace) or with the harness's
    # kill; its init and server die with it (their parent-death signals).
    _unshare(
        CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP,
        "mount, pid, ipc, uts, cgroup",
    )
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None)  # nothing propagates back
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(_init(req, program))
        except SetupError as e:
            print(f"template start: {e}", file=sys.stderr, flush=True)
            os._exit(125)
    _forward(pid)
    code = _wait_for(pid, reap_all=False)
    os.write(status_fd, f"exit {code}".encode())
    return code


def _spawn(req: dict[str, Any], program: bytes, log_fd: int, status_fd: int) -> None:
    """In the intermediate fork: fork the start process and exit, so the template never
    reaps it (nothing a start does, its exit status included, reaches the template)."""
    if os.fork() != 0:
        os._exit(0)
    try:
        os.setsid()
        # Out of the way first: either may sit where the other goes. Then stdout and
        # stderr are the log pipe, 4 the status socket, and every other descriptor is
        # closed, the control socket's and stdin among them: a fresh start's bwrap closes
        # the seccomp pipe it read from stdin, so its system starts without one too.
        log_fd = fcntl.fcntl(log_fd, fcntl.F_DUPFD, 64)
        status_fd = fcntl.fcntl(status_fd, fcntl.F_DUPFD, 64)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.dup2(status_fd, 4)
        os.closerange(0, 1)
        os.closerange(3, 4)
        os.closerange(5, os.sysconf("SC_OPEN_MAX"))
        os.write(4, b"up")  # the harness reads this start's host pid off the credentials
        # ...and puts this process in the start's cgroups before it forks anything: nothing
        # of the start may be born outside them (the harness's start_cgroups.py).
        if os.read(4, 16) != b"go":
            os._exit(125)
        os._exit(_start(req, program, 4))
    except SetupError as e:
        print(f"template start: {e}", file=sys.stderr, flush=True)
    except BaseException as e:
        import traceback

        print(f"template start: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        traceback.print_exception(e)
        sys.stderr.flush()
    os._exit(125)


def main(argv: list[str]) -> int:
    """`--control FD [--room PADDING]`: FD is the control socket the harness passed on; the
    padding only makes room for a start's command line (`_set_cmdline`)."""
    global CONTROL_FD
    CONTROL_FD = int(argv[argv.index("--control") + 1])
    control = socket.socket(fileno=CONTROL_FD)
    first, _, _, _ = control.recvmsg(1 << 16)
    program = bytes.fromhex(json.loads(first)["seccomp"])
    control.send(b"ready")
    fd_size = struct.calcsize("i")
    while True:
        message, ancillary, _, _ = control.recvmsg(1 << 16, socket.CMSG_SPACE(2 * fd_size))
        if not message:
            return 0  # the harness is gone
        fds: list[int] = []
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds += list(struct.unpack(f"{len(data) // fd_size}i", data))
        req = json.loads(message)
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        log_fd, status_fd = fds
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            control.detach()
            _spawn(req, program, log_fd, status_fd)
        os.close(log_fd)
        os.close(status_fd)
        os.waitpid(pid, 0)  # the intermediate fork: exits at once, with nothing to say


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
