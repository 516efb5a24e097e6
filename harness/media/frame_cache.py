"""Each session's frames produced once per trajectory run, for every replay of it.

A trajectory's plan replays the same sessions many times: the main pass, a
fork per candidate, the replays of past sessions. Decoding (or rendering) and
encoding a session's frames again for each replay costs far more than pushing
them, so the first replay that needs a session starts one background producer
for the whole session, and every replay, the first included, reads the
encoded frames from here as they appear. A replay that stops early (a fork
ends at its question) leaves the producer running: the main pass needs the
rest of the session later anyway.

Memory is bounded: once `memory_bytes` of encoded frames are held, further
frames go to one spill file per session in `spill_dir` (the trajectory's work
directory, removed with it), read back by offset.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from apmbench.adapters.sdk.types import Frame, FrameEncoding
from apmbench.harness.media import frames as frames_module
from apmbench.harness.media.frames import FrameSettings
from apmbench.harness.media.timeline import Session

DEFAULT_MEMORY_BYTES = 256 * 1024 * 1024
"""Encoded frames held in memory per trajectory run before spilling to disk (a paper-shaped
trajectory's 3,900 frames at 448 px JPEG weigh about 150 MB)."""

Produce = Callable[[Session, FrameSettings], Iterator[Frame]]


@dataclass(frozen=True)
class _Spilled:
    offset: int
    length: int


@dataclass(frozen=True)
class _Entry:
    time_ms: int
    encoding: FrameEncoding
    width: int
    height: int
    data: bytes | _Spilled


class _Session:
    """One session's frames so far, filled by a background thread."""

    def __init__(self, cache: SessionFrames, index: int, session: Session) -> None:
        self.cache = cache
        self.entries: list[_Entry] = []
        self.done = False
        self.error: BaseException | None = None
        self.changed = threading.Condition()
        self.spill_path = cache.spill_dir / f"session-{index}.frames"
        self._spill: int | None = None
        self._spilled_bytes = 0
        self._thread = threading.Thread(
            target=self._produce, args=(session,), daemon=True, name=f"frames-{index}"
        )
        self._thread.start()

    def _store(self, frame: Frame) -> _Entry:
        data: bytes | _Spilled = frame.data
        if not self.cache.reserve(len(frame.data)):
            if self._spill is None:
                self.cache.spill_dir.mkdir(parents=True, exist_ok=True)
                self._spill = os.open(self.spill_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
            os.pwrite(self._spill, frame.data, self._spilled_bytes)
            data = _Spilled(self._spilled_bytes, len(frame.data))
            self._spilled_bytes += len(frame.data)
        return _Entry(frame.time_ms, frame.encoding, frame.width, frame.height, data)

    def _produce(self, session: Session) -> None:
        try:
            for frame in self.cache.produce(session, self.cache.settings):
                if self.cache.stopping.is_set():
                    return
                entry = self._store(frame)
                with self.changed:
                    self.entries.append(entry)
                    self.changed.notify_all()
        except BaseException as e:  # handed to the replays, which re-raise it
            with self.changed:
                self.error = e
                self.changed.notify_all()
            return
        with self.changed:
            self.done = True
            self.changed.notify_all()

    def frame(self, entry: _Entry) -> Frame:
        data = entry.data
        if isinstance(data, _Spilled):
            assert self._spill is not None
            data = os.pread(self._spill, data.length, data.offset)
        return Frame(entry.time_ms, entry.encoding, entry.width, entry.height, data)

    def read(self, until_ms: int | None) -> Generator[Frame]:
        k = 0
        while True:
            with self.changed:
                while k >= len(self.entries) and not self.done and self.error is None:
                    self.changed.wait()
                if k < len(self.entries):
                    entry = self.entries[k]
                elif self.error is not None:
                    raise self.error
                else:
                    return
            if until_ms is not None and entry.time_ms > until_ms:
                return
            yield self.frame(entry)
            k += 1

    def wait_done(self) -> None:
        with self.changed:
            while not self.done and self.error is None and not self.cache.stopping.is_set():
                self.changed.wait(0.5)

    def close(self) -> None:
        self._thread.join(timeout=10)
        if self._spill is not None:
            os.close(self._spill)
            self._spill = None
        self.spill_path.unlink(missing_ok=True)


class SessionFrames:
    """The frames of a trajectory's sessions, each produced once; a context manager.

    `frames(index, session, until_ms)` gives the same frames, in the same order,
    as `decode_session(session, settings, until_ms)`, whichever replay asks first.
    """

    def __init__(
        self,
        settings: FrameSettings,
        spill_dir: Path,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
        produce: Produce | None = None,
    ) -> None:
        self.settings = settings
        self.spill_dir = spill_dir
        self.memory_bytes = memory_bytes
        # Looked up per call, not bound here, so that a test can count productions.
        self.produce: Produce = produce or (lambda s, f: frames_module.decode_session(s, f))
        self.stopping = threading.Event()
        self._sessions: dict[int, _Session] = {}
        self._lock = threading.Lock()
        self._held = 0
        self.productions = 0
        """Sessions produced (each once): what a test counts."""
        self._prefetcher: threading.Thread | None = None

    def reserve(self, size: int) -> bool:
        """Whether `size` more bytes may stay in memory (False: spill them)."""
        with self._lock:
            if self._held + size > self.memory_bytes:
                return False
            self._held += size
            return True

    @property
    def held_bytes(self) -> int:
        return self._held

    def frames(self, index: int, session: Session, until_ms: int | None = None) -> Generator[Frame]:
        return self._entry(index, session).read(until_ms)

    def ready(self, index: int, session: Session) -> None:
        """Wait until every frame of the session is produced (starting it if need be), so
        that a replay's pushes never wait on production: such waits fell where a replay
        reached frames no earlier replay had, which is near its question when replays run
        in the order of their questions, so their wall-clock gaps announced it."""
        entry = self._entry(index, session)
        entry.wait_done()
        if entry.error is not None:
            raise entry.error

    def _entry(self, index: int, session: Session) -> _Session:
        with self._lock:
            if self.stopping.is_set():
                raise RuntimeError("the frame cache is closed")
            entry = self._sessions.get(index)
            if entry is None:
                entry = self._sessions[index] = _Session(self, index, session)
                self.productions += 1
        return entry

    def prefetch(self, sessions: Sequence[tuple[int, Session]]) -> None:
        """Produce these sessions ahead of their first replay, one after another, in the
        background: the harness waits on every system start, and a session produced
        then is not produced while frames are pushed. The frames are those the replays
        would have produced (the same producer, once per session)."""

        def run() -> None:
            for index, session in sessions:
                if self.stopping.is_set():
                    return
                try:
                    entry = self._entry(index, session)
                except RuntimeError:
                    return
                entry.wait_done()

        self._prefetcher = threading.Thread(target=run, daemon=True, name="frames-prefetch")
        self._prefetcher.start()

    def close(self) -> None:
        self.stopping.set()
        if self._prefetcher is not None:
            self._prefetcher.join(timeout=10)
        for entry in self._sessions.values():
            entry.close()
        self._sessions.clear()
        self._held = 0

    def __enter__(self) -> SessionFrames:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
