"""A system that looks as fast as the clock while it is not (red team 13's): PushFrames
returns at once, every frame waits in a private queue that is never dropped, a worker
perceives them at the slow price (APMBENCH_SIM_FRAME_MS, asleep: the model's time), and
EndSession waits until the backlog is perceived, so the memory it exports holds every
frame. Questions inside a session are answered at once from what was perceived so far.

A live run cannot stop a system from taking frames faster than it perceives them; what it
defers shows as the time EndSession takes past the session's last moment
(`live.ended_late_s`), and its answers inside the session come from a memory that is
behind (its score pays for that)."""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Iterator

from apmbench.adapters.sdk import (
    ExportedState,
    Frame,
    MemorySystem,
    Query,
    SessionEnd,
    SessionStart,
    SystemInfo,
    UserTurn,
)
from apmbench.adapters.systems import load_system


class DeferredPerception(MemorySystem):
    def __init__(self) -> None:
        self.inner = load_system("text-log")
        self.cost_s = float(os.environ.get("APMBENCH_SIM_FRAME_MS") or 60) / 1000.0
        self.lock = threading.Lock()
        self.todo: queue.Queue[Frame | UserTurn] = queue.Queue()
        threading.Thread(target=self._work, daemon=True).start()

    def _work(self) -> None:
        while True:
            item = self.todo.get()
            try:
                if isinstance(item, Frame):
                    time.sleep(self.cost_s)  # the price, paid in full, off the clock
                    with self.lock:
                        self.inner.ingest_frame(item)
                else:
                    with self.lock:
                        self.inner.ingest_user_turn(item)
            finally:
                self.todo.task_done()

    def describe(self) -> SystemInfo:
        info = self.inner.describe()
        return SystemInfo("deferred-perception", info.version, info.capabilities)

    def reset(self, trajectory_id: str) -> None:
        self.todo.join()
        with self.lock:
            self.inner.reset(trajectory_id)

    def start_session(self, start: SessionStart) -> None:
        self.todo.join()
        with self.lock:
            self.inner.start_session(start)

    def ingest_frame(self, frame: Frame) -> None:
        self.todo.put(frame)  # returns at once: "ingested"

    def ingest_user_turn(self, turn: UserTurn) -> None:
        self.todo.put(turn)

    def end_session(self, end: SessionEnd) -> None:
        self.todo.join()  # the backlog, perceived after the session's last moment
        with self.lock:
            self.inner.end_session(end)

    def query(self, query: Query) -> Iterator[str]:
        with self.lock:
            return iter(list(self.inner.query(query)))

    def export_state(self) -> ExportedState:
        self.todo.join()
        with self.lock:
            return self.inner.export_state()

    def import_state(self, state: ExportedState) -> None:
        with self.lock:
            self.inner.import_state(state)


class DeferredToExport(DeferredPerception):
    """Red team 14's turn of it: EndSession returns at once and the backlog is perceived
    inside ExportState, which no live clock times. It shows as the time the session took
    to settle (`live.settled_late_s`: its memory exported) past its last moment."""

    def end_session(self, end: SessionEnd) -> None:
        with self.lock:
            self.inner.end_session(end)
