"""Systems that probe what a start can reach of its siblings, its template and its host.

Each prints one `probe: {json}` line to its log at start-up (before it serves), then
serves as the null system does. Two of them alive at once stand for a serving system and
its spare: each first looks for what another left (a /tmp and a /dev/shm file, a SysV
shared memory segment and message queue, an abstract Unix socket), then leaves the same
for the next one. `$APMBENCH_CHEAT_TAG` names them; `$APMBENCH_VLM_MODEL` names a
weights directory it tries to write into.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import socket
import sys
import zlib
from pathlib import Path
from typing import Any

from helpers.cheaters import _Base, _tag

IPC_CREAT = 0o1000
STATUS_KEYS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")
MS_REMOUNT, MS_BIND = 0x20, 0x1000


def sysv_key(tag: str) -> int:
    return zlib.crc32(f"apm-probe-{tag}".encode()) & 0x7FFFFFFF


def _errname() -> str:
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


def _try_write(path: Path) -> str:
    try:
        path.write_text("planted")
    except OSError as e:
        return errno.errorcode.get(e.errno or 0, str(e))
    return "written"


def _status() -> dict[str, str]:
    with open("/proc/self/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def _fd_targets() -> dict[int, str]:
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            out[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
    return out


class SiblingProbe(_Base):
    name = "sibling-probe"

    def __init__(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        tag = _tag()
        key = sysv_key(tag)
        files = [Path(p, f"apm-probe-{tag}") for p in ("/tmp", "/dev/shm")]
        found: dict[str, Any] = {str(p): p.exists() for p in files}
        found["sysv_shm"] = libc.shmget(key, 0, 0) >= 0
        found["sysv_msg"] = libc.msgget(key, 0) >= 0
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(f"\0apm-probe-{tag}")
            found["abstract_socket"] = True
        except OSError:
            found["abstract_socket"] = False
        probe.close()
        # Leave the same for the next one.
        for p in files:
            p.write_text(tag)
        libc.shmget(key, 4096, IPC_CREAT | 0o600)
        libc.msgget(key, IPC_CREAT | 0o600)
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(f"\0apm-probe-{tag}")
            self._listener.listen(1)
        except OSError:
            pass
        status = _status()
        try:
            with socket.socket() as server, socket.socket() as client:
                server.bind(("127.0.0.1", 0))
                server.listen(1)
                client.connect(server.getsockname())
            loopback = "ok"
        except OSError as e:
            loopback = errno.errorcode.get(e.errno or 0, str(e))
        pids = sorted(int(x) for x in os.listdir("/proc") if x.isdigit())
        try:
            os.kill(-1, 0)  # every process it may signal but init and itself
            signalled = "some"
        except OSError as e:
            signalled = errno.errorcode.get(e.errno or 0, str(e))
        ptrace = libc.ptrace(16, ctypes.c_long(1), None, None)  # PTRACE_ATTACH to pid 1
        out: dict[str, Any] = {
            "found": found,
            "pids": pids,
            "pid": os.getpid(),
            "kill_all": signalled,
            "ptrace": "ok" if ptrace == 0 else _errname(),
            "uid": os.getuid(),
            "loopback": loopback,
            "interfaces": sorted(name for _, name in socket.if_nameindex()),
            "status": {k: status.get(k) for k in STATUS_KEYS},
            "fds": sorted(int(x) for x in os.listdir("/proc/self/fd")),
            "fd_targets": _fd_targets(),
            "cmdline": Path("/proc/self/cmdline").read_bytes().split(b"\0")[:7],
            "dev_write": _try_write(Path("/dev/apm-probe")),
            "unshare_user": "ok" if libc.unshare(0x10000000) == 0 else _errname(),
        }
        out["cmdline"] = [a.decode() for a in out["cmdline"]]
        model = os.environ.get("APMBENCH_VLM_MODEL")
        if model:
            out["weights_write"] = _try_write(Path(model) / "weights.bin")
            out["weights_new"] = _try_write(Path(model) / "new-file")
            flags = ctypes.c_ulong(MS_REMOUNT | MS_BIND)
            out["weights_remount"] = (
                "ok" if libc.mount(None, model.encode(), None, flags, None) == 0 else _errname()
            )
        print("probe: " + json.dumps(out), flush=True)


class _RunCode(_Base):
    """Runs the Python code in $APMBENCH_PROBE_<ROLE> as a script with the arguments in
    $APMBENCH_PROBE_<ROLE>_ARGS (a JSON list), at start-up, then serves (if it returns): the
    probes a test runs in a bare sandbox, run in a start instead."""

    role = ""

    def __init__(self) -> None:
        code = os.environ[f"APMBENCH_PROBE_{self.role}"]
        args = json.loads(os.environ.get(f"APMBENCH_PROBE_{self.role}_ARGS", "[]"))
        saved, sys.argv = sys.argv, ["probe", *args]
        try:
            exec(compile(code, f"probe-{self.role.lower()}", "exec"), {"__name__": "__main__"})
        finally:
            sys.argv = saved


class RunProbe(_RunCode):
    role = "CODE"


class RunSender(_RunCode):
    role = "SENDER"


class RunReceiver(_RunCode):
    role = "RECEIVER"


MARK_NS = 123456789 * 10**9


class DevNodeMarker(_Base):
    """Reads whether a start before it marked /dev/full (its times), then marks it: a mark
    that a later start reads is a store across restarts (only times: a mode would break the
    host's node when the mark lands there)."""

    name = "dev-node-marker"

    def __init__(self) -> None:
        seen = os.stat("/dev/full")
        found = {"marked": seen.st_mtime_ns == MARK_NS}
        try:
            os.utime("/dev/full", ns=(MARK_NS, MARK_NS))
            found["marking"] = "ok"
        except OSError as e:
            found["marking"] = errno.errorcode.get(e.errno or 0, str(e.errno))
        print("probe: " + json.dumps(found), flush=True)
