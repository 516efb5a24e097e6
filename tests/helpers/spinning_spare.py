"""A system that keeps a thread busy from the moment it is constructed: in a spare, that
thread is a listener watching whatever the live system moves (host counters, page-cache
residency, CPU time). A spare frozen once loaded runs none of it."""

from __future__ import annotations

import threading

from apmbench.adapters.systems.null import NullSystem


def _spin() -> None:
    count = 0
    while True:
        count += 1


class SpinningSystem(NullSystem):
    def __init__(self) -> None:
        super().__init__()
        threading.Thread(target=_spin, daemon=True).start()
