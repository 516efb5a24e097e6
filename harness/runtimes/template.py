"""Template starts (`--start template`): a system start forked from a pre-imported process.

A fresh sandboxed start pays for bubblewrap, a new interpreter, `import grpc` and the SDK
every time (about 95 ms of CPU, 32-37 times per trajectory in `restart` mode). A
`Template` is one bubblewrap box per run, with the same policy as a fresh start's, in
which `python -m apmbench.adapters.template` has imported those modules and waits on a
control socket; no system code ever runs in it. Each start is a fork of it that confines
itself further before it loads the system (apmbench/adapters/template.py says how: own
namespaces but the box's user namespace, then an own user namespace too; fresh /proc,
/tmp, /dev/shm, /dev/pts and socket directory; every capability dropped, no_new_privs,
the same seccomp filter as a fresh start's; every inherited descriptor closed), and ends
with no more than a fresh sandboxed process has.

The template sees nothing of a start: the harness hands each start its own log pipe and
status socket over the control socket, and the start's status comes back to the harness
over that socket (the template does not even reap it). `TemplateChild` is the harness's
handle on one start, shaped like the `subprocess.Popen` of a fresh one.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from apmbench.harness.errors import RuntimeStartError
from apmbench.harness.runtimes.base import reap_group
from apmbench.harness.runtimes.sandbox import (
    SANDBOX_HOME,
    SANDBOX_UID,
    SOCKET_DIR_BYTES,
    Sandbox,
)

ROOM = 4096
"""Bytes of padding on the template's command line: a start writes its own (a fresh
start's `python -m apmbench.adapters SYSTEM --address ...`) over it."""
READY_TIMEOUT_S = 60.0
SETUP_FAILED = 125
"""A start's exit code when its confinement failed (before any system code ran)."""


def template_argv(control_fd: int) -> list[str]:
    return [sys.executable, "-m", "apmbench.adapters.template", "--control", str(control_fd),
            "--room", "-" * ROOM]  # fmt: skip


class TemplateChild:
    """One start forked from the template: the `Popen` methods the process runtime uses."""

    def __init__(
        self,
        status: socket.socket,
        stdout: IO[bytes],
        argv: list[str],
        place: Callable[[int], None] | None = None,
    ) -> None:
        self._status = status
        self.stdout = stdout
        self.args = argv
        self.returncode: int | None = None
        self.pid = 0
        self._lock = threading.Lock()
        # The start's first message comes from its start process, before it confines
        # itself: the kernel stamps it with that process's pid as the harness sees it.
        got = self._receive(READY_TIMEOUT_S)
        if got is not None and got[0] == b"up":
            self.pid = got[1]
            # It waits for "go": placed in its cgroups before it forks anything, every
            # process it makes is born there (start_cgroups.py).
            try:
                if place is not None:
                    place(self.pid)
                self._status.send(b"go")
            except OSError:
                self.returncode = SETUP_FAILED
        elif self.returncode is None:
            self.returncode = SETUP_FAILED

    def _receive(self, timeout: float | None) -> tuple[bytes, int] | None:
        ready, _, _ = select.select([self._status], [], [], timeout)
        if not ready:
            return None
        size = struct.calcsize("iII")
        try:
            data, ancillary, _, _ = self._status.recvmsg(64, socket.CMSG_SPACE(size))
        except OSError:
            data, ancillary = b"", []
        if not data:  # the start process is gone without a word: killed
            self.returncode = -signal.SIGKILL if self.returncode is None else self.returncode
            return None
        pid = 0
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                pid = struct.unpack("iII", payload[:size])[0]
        if data.startswith(b"exit "):
            self.returncode = int(data.split()[1])
        return data, pid

    def poll(self) -> int | None:
        with self._lock:
            while self.returncode is None and self._receive(0) is not None:
                pass
            return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                if self.returncode is not None:
                    return self.returncode
                left = None if end is None else max(end - time.monotonic(), 0.0)
                got = self._receive(left)
            timed_out = end is not None and time.monotonic() >= end
            if got is None and self.returncode is None and timed_out:
                raise subprocess.TimeoutExpired(self.args, timeout or 0.0)

    def send_signal(self, sig: int) -> None:
        """To the start process, which passes it on to its init and the server."""
        if self.pid and self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        # Its init and server die with it (parent-death signals, then the PID namespace).
        self.send_signal(signal.SIGKILL)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._status.close()


class Template:
    """The template box of one run; `launch` forks a start from it."""

    def __init__(self, sandbox: Sandbox, log_path: Path) -> None:
        self.sandbox = sandbox
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._lock = threading.Lock()
        self.started_s: float | None = None

    def _start(self) -> None:
        began = time.monotonic()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        argv = self.sandbox.wrap(template_argv(theirs.fileno()), template=True)
        stdin = self.sandbox.stdin(template=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the template's own output only
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=stdin,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        finally:
            os.close(stdin)
            log.close()
            theirs.close()
        self._control = ours
        ours.send(json.dumps({"seccomp": self.sandbox.filter.hex()}).encode())
        ready, _, _ = select.select([ours], [], [], READY_TIMEOUT_S)
        if not ready or ours.recv(64) != b"ready":
            self.stop()
            raise RuntimeStartError(
                f"the start template did not come up; its output is in {self.log_path}"
            )
        self.started_s = time.monotonic() - began

    def launch(
        self,
        argv: list[str],
        directory: Path,
        place: Callable[[int], None] | None = None,
    ) -> TemplateChild:
        """Fork a start that serves `argv` (a fresh start's command line) in `directory`."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            assert self._control is not None
            read, write = os.pipe()
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            policy = self.sandbox.policy
            request = {
                "argv": argv,
                "dir": str(directory),
                "dir_size": SOCKET_DIR_BYTES,
                "tmp_size": policy.tmp_size_bytes,
                "home": SANDBOX_HOME,
                "uid": SANDBOX_UID,
                "cwd": str(policy.cwd or SANDBOX_HOME),
                "tmp_binds": [str(p) for p in self.sandbox.tmp_binds()],
                "proc_covers": self.sandbox.proc_covers(),
            }
            fds = struct.pack("2i", write, theirs.fileno())
            try:
                self._control.sendmsg(
                    [json.dumps(request).encode()],
                    [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)],
                )
            finally:
                os.close(write)
                theirs.close()
        return TemplateChild(ours, open(read, "rb"), argv, place)

    def stop(self) -> None:
        control, self._control = self._control, None
        if control is not None:
            control.close()  # the template exits at end of file
        proc, self._proc = self._proc, None
        if proc is not None:
            reap_group(proc)
