"""Frames produced in worker processes, beside the harness's own interpreter.

Producing a session's frames (rendering or decoding them, then JPEG coding) took
about two thirds of the harness's interpreter time in a paper-scale dry run, in a
thread that shared one GIL with the thread pushing frames and driving the
system. A worker process does the same work on another core: `decode_session`
runs there unchanged, so the frames are the same bytes, and the harness only
reads them from a pipe (a read that releases the GIL).

One `FrameWorkers` pool per evaluate run: a worker is started on the first
session asked for (`python -m apmbench.harness.media.frame_worker`, the same
interpreter and import path), serves one session at a time and goes back to the
pool when the session's last frame is read. A replay that stops reading before
the end (the frame cache closing) kills its worker rather than draining it. The
pool's workers are stopped when the run ends; a worker whose harness is gone
sees its stdin close and exits.

The pipes carry only what the harness itself asks for and computes: the worker
is the harness's code, never the system's, and reaches no system.

Wire (big-endian): a request is a 4-byte length and a pickle of (Session,
FrameSettings, times): times None for the whole session (`decode_session`), else the
sampling times wanted (`frames_at`, a report's thumbnails); each reply record is a
header (`_HEADER`: kind, time_ms, encoding, width, height, data length) and its data.
Kinds: a frame, the end of the session, or an error (its data a pickle of the
exception, raised again in the harness).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import IO

from apmbench.adapters.sdk.types import Frame, FrameEncoding
from apmbench.harness.errors import FrameWorkerError, VideoError
from apmbench.harness.media.frames import FrameSettings
from apmbench.harness.media.timeline import Session

_HEADER = struct.Struct("!BqBIII")
_LENGTH = struct.Struct("!I")
_FRAME, _END, _ERROR = 0, 1, 2
_ENCODINGS = list(FrameEncoding)

DISABLE_ENV = "APMBENCH_FRAME_WORKERS"
"""Set to 0 to produce frames in the harness's own threads (as before the workers)."""


def enabled() -> bool:
    return os.environ.get(DISABLE_ENV, "1").strip() not in ("0", "false", "no")


class _Worker:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "apmbench.harness.media.frame_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Its warnings (a damaged video's decoder messages) reach the user's stderr.
            stderr=None,
            close_fds=True,
            # Not in the harness's process group: a Ctrl-C is the harness's to handle, and
            # the worker ends when the harness closes (or loses) its request pipe.
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.requests: IO[bytes] = self.proc.stdin
        self.replies: IO[bytes] = self.proc.stdout

    def ask(self, session: Session, settings: FrameSettings, times: list[int] | None) -> None:
        request = pickle.dumps((session, settings, times))
        self.requests.write(_LENGTH.pack(len(request)) + request)
        self.requests.flush()

    def read(self, size: int) -> bytes:
        data = self.replies.read(size)
        if len(data) != size:
            code = self.proc.poll()
            raise FrameWorkerError(
                "the frame worker process ended mid-session"
                + (f" (exit code {code})" if code is not None else "")
                + f"; set {DISABLE_ENV}=0 to produce frames in the harness instead"
            )
        return data

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.requests.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        with contextlib.suppress(OSError):
            self.replies.close()


class FrameWorkers:
    """A pool of frame worker processes for one run; a context manager. `produce` has the
    signature and the output of `frames.decode_session(session, settings)`, and with
    `times` those of `frames.frames_at(session, settings, times)`."""

    def __init__(self) -> None:
        self._idle: list[_Worker] = []
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False

    def _take(self) -> _Worker:
        with self._lock:
            if self._closed:
                raise FrameWorkerError("the frame workers are stopped")
            if self._idle:
                return self._idle.pop()
            worker = _Worker()
            self._all.append(worker)
            return worker

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if self._closed:
                worker.stop()
            else:
                self._idle.append(worker)

    def _drop(self, worker: _Worker) -> None:
        worker.stop()
        with self._lock, contextlib.suppress(ValueError):
            self._all.remove(worker)

    def produce(
        self, session: Session, settings: FrameSettings, times: Sequence[int] | None = None
    ) -> Iterator[Frame]:
        worker = self._take()
        finished = False
        try:
            worker.ask(session, settings, None if times is None else list(times))
            while True:
                kind, time_ms, encoding, width, height, size = _HEADER.unpack(
                    worker.read(_HEADER.size)
                )
                data = worker.read(size) if size else b""
                if kind == _FRAME:
                    yield Frame(time_ms, _ENCODINGS[encoding], width, height, data)
                elif kind == _END:
                    finished = True
                    return
                else:
                    finished = True  # the worker is still sound: its session failed
                    raise _unpickled(data)
        finally:
            if finished:
                self._give_back(worker)
            else:  # abandoned mid-session (or the worker died): never reused
                self._drop(worker)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers, self._all, self._idle = self._all, [], []
        for worker in workers:
            worker.stop()

    def __enter__(self) -> FrameWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _unpickled(data: bytes) -> BaseException:
    try:
        error = pickle.loads(data)
    except Exception as e:  # an exception class that does not pickle round
        return VideoError(f"frame worker: {data[:200]!r} ({e})")
    return error if isinstance(error, BaseException) else VideoError(repr(error))


def _serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    from apmbench.harness.media.frames import decode_session, frames_at

    while True:
        head = requests.read(_LENGTH.size)
        if len(head) < _LENGTH.size:
            return  # the harness closed the pipe: the run is over
        session, settings, times = pickle.loads(requests.read(_LENGTH.unpack(head)[0]))
        try:
            produced = (
                decode_session(session, settings)
                if times is None
                else frames_at(session, settings, times)
            )
            for f in produced:
                header = _HEADER.pack(
                    _FRAME, f.time_ms, _ENCODINGS.index(f.encoding), f.width, f.height,
                    len(f.data),
                )  # fmt: skip
                replies.write(header)
                replies.write(f.data)
                replies.flush()
        except Exception as e:
            try:
                data = pickle.dumps(e)
            except Exception:
                data = pickle.dumps(VideoError(f"{type(e).__name__}: {e}"))
            replies.write(_HEADER.pack(_ERROR, 0, 0, 0, 0, len(data)) + data)
        else:
            replies.write(_HEADER.pack(_END, 0, 0, 0, 0, 0))
        replies.flush()


def main() -> int:
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    # Nothing else may write to the reply pipe: a stray print would corrupt it.
    sys.stdout = sys.stderr
    with contextlib.suppress(BrokenPipeError):  # the harness is gone: it reads no more
        _serve(requests, replies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
