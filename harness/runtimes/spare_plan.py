"""How many spares a restartable runtime keeps, and what its starts cost (`SparePlan`).

A spare is the next start, launched while the live system serves so that a restart need not
wait for a load (spare_freezer.py says how it is kept from running beside the live one). The
process runtime (process.py) and the container runtime (docker/runtime.py) both ask their
`SparePlan` how many to keep: enough to cover the measured start time over the measured time
between restarts, bounded by the memory budget (`--spare-memory`, else half the host's
available memory, lowered by what a system declares), by the cores a start keeps busy, by the
GPU's free memory for a system that holds one when no budget was given (gpu_memory.py), and
by `MAX`. What it measured is written beside the system's log (`STARTS_FILE`) when the
runtime stops.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path

import psutil

from apmbench.harness.errors import ConfigError
from apmbench.harness.runtimes.base import usable_cores
from apmbench.harness.runtimes.gpu_memory import gpu_spares, holds_gpu, nvidia_smi

STARTS_FILE = "starts.json"
"""Beside the system's log: how many starts there were and how long each was waited for."""
WAITED_S = 0.1
"""A start the harness waited longer than this for counts as waited for (a promoted spare
that was already serving answers its health check in milliseconds)."""


class SparePlan:
    """How many spares to keep, and what the starts cost: enough that the next restarts
    find a process that finished its start-up during the previous segments (the measured
    start time over the measured time between restarts, plus one), at most as many as
    the memory budget holds (the measured memory of a serving process tree, the model
    included), at most as many as the host's cores can start at once (`cpu_cap`), and
    never more than MAX."""

    MAX = 8
    FIRST_GAP_S = 1.0
    """The time between restarts assumed before two were seen: a run's first segments
    are often short forks, and a spare started late is waited for."""

    DECLARED = "spare_memory"
    """The Describe detail in which a system declares what its spares may hold together
    (a size: "24g", "0" for no spare). It can only lower the host's default, never raise
    it, and the user's --spare-memory overrides both."""

    def __init__(self, budget_bytes: int | None) -> None:
        self.budget_bytes = budget_bytes
        self.declared_bytes: int | None = None
        self.declared_error: str | None = None
        self.start_s: float | None = None
        self.gap_s: float | None = None
        self.per_start_bytes: int | None = None
        self._last_restart: float | None = None
        self._average_s: float | None = None
        self.waits: list[float] = []
        self.start_cpu_s: float | None = None
        self.cpu_share: float | None = None
        """The largest share of a cold start's wall time it spent on a core (its CPU
        seconds over its start time): near 1 for an interpreter importing its code, near 0
        for a start that waits on a device or a sleep."""

    def budget(self) -> int:
        if self.budget_bytes is not None:
            return self.budget_bytes
        # Half of what the host has free when the first start is measured: the rest is the
        # serving process's and the harness's.
        host = int(psutil.virtual_memory().available // 2)
        return host if self.declared_bytes is None else min(host, self.declared_bytes)

    @property
    def budget_source(self) -> str:
        if self.budget_bytes is not None:
            return "--spare-memory"
        return "host" if self.declared_bytes is None else f"system ({self.DECLARED})"

    def declare(self, details: Mapping[str, str]) -> None:
        """The budget the system declares in its Describe details, if any. A value that is
        not a size is not a budget: it is ignored and the record says why (a system's
        optional detail never stops a run)."""
        from apmbench.harness.runtimes.docker.settings import parse_size

        raw = details.get(self.DECLARED)
        if raw is None:
            return
        if raw.strip() == "0":  # for --memory, "0" is no limit; here it is no room
            self.declared_bytes = 0
            return
        try:
            size = parse_size(raw, f"the system's {self.DECLARED} detail")
        except ConfigError as e:
            self.declared_error = str(e)
            return
        if size is None:  # it can only lower the host's budget: "none" says nothing
            self.declared_error = f"{self.DECLARED} {raw!r}: give a size such as 24g, or 0"
            return
        self.declared_bytes = size

    def served(
        self, launched: float, asked: float, ready: float, cpu_s: Callable[[], float | None]
    ) -> None:
        """A start handed to the run: `launched` when it was started, `asked` when the run
        asked for it, `ready` when it served; `cpu_s` reads what it used of the CPU, asked
        only for a cold start."""
        self.waits.append(ready - asked)
        if launched < asked:
            return
        # A cold start: its whole start-up was waited for, and no spare was starting beside
        # it (there was none left), so its CPU share is its own.
        self.start_s = ready - launched
        used = cpu_s()
        if used is not None and self.start_s > 0:
            self.start_cpu_s = used
            share = used / self.start_s
            # The largest seen: a start measured on a host busy with other work looks
            # less CPU-bound than it is, and more spares would make that worse.
            self.cpu_share = share if self.cpu_share is None else max(self.cpu_share, share)

    def cpu_cap(self) -> int | None:
        """Spares the host's cores can start at once: the cores left beside the harness and
        the serving system, over the share of a core a start keeps busy. Spares past that
        make no start finish sooner (the cores are the bound), slow every start and take
        CPU from the system whose latency is being measured; on 2 cores a start that is
        all CPU gets 1 spare, one that sleeps through a model's transfer gets up to MAX.
        None before a cold start was measured."""
        if self.cpu_share is None:
            return None
        spare_cores = max(usable_cores() - 1, 1)
        return max(1, math.floor(spare_cores / max(self.cpu_share, 1 / self.MAX)))

    def restarted(self, now: float) -> None:
        if self._last_restart is not None:
            gap = now - self._last_restart
            # A moving average, but a run of short forks is answered at once: forks' short
            # segments and the main pass's long ones mix.
            average = gap if self._average_s is None else 0.7 * self._average_s + 0.3 * gap
            self._average_s = average
            self.gap_s = min(average, gap)
        self._last_restart = now

    def measure(self, pid: int, shared: bool = False) -> None:
        """The serving process tree's resident memory (its model included); and, if it holds
        a GPU, the cap its GPU memory sets (`gpu_cap`). `shared`: pages shared with other
        processes count by their share (PSS), as a template start's are."""
        try:
            root = psutil.Process(pid)
            tree = [root, *root.children(recursive=True)]
            total = 0
            for proc in tree:
                with contextlib.suppress(psutil.Error):
                    total += proc.memory_full_info().pss if shared else proc.memory_info().rss
        except psutil.Error:
            return
        self.per_start_bytes = max(total, 1)
        pids = {p.pid for p in tree}
        if any(holds_gpu(p) for p in pids):
            self.gpu_cap = gpu_spares(pids, nvidia_smi())

    gpu_cap: int | None = None
    """Spares the GPU holds beside the serving process (None: it holds no GPU). Without
    nvidia-smi to say, 0: a second copy of a model could run the GPU out of memory, unless
    the user gave a budget (`--spare-memory`), which then stands for the GPU's too."""

    def wanted(self, minimum: int) -> int:
        want = minimum
        if self.start_s is not None:
            gap = self.gap_s or self.FIRST_GAP_S
            want = max(want, math.ceil(self.start_s / max(gap, 0.05)) + 1)
        want = min(want, self.MAX)
        cpu_cap = self.cpu_cap()
        if cpu_cap is not None:
            want = min(want, cpu_cap)
        if self.gpu_cap is not None and self.budget_bytes is None:
            want = min(want, self.gpu_cap)
        if self.per_start_bytes is not None:
            want = min(want, self.budget() // self.per_start_bytes)
        return max(want, 0)

    def record(self, starts: int) -> dict[str, object]:
        return {
            "starts": starts,
            "served": len(self.waits),
            "waited": sum(1 for w in self.waits if w > WAITED_S),
            "waited_s": round(sum(self.waits), 3),
            "cold_start_s": None if self.start_s is None else round(self.start_s, 3),
            "cold_start_cpu_s": None if self.start_cpu_s is None else round(self.start_cpu_s, 3),
            "cpu_share": None if self.cpu_share is None else round(self.cpu_share, 3),
            "cpu_cap": self.cpu_cap(),
            "per_start_bytes": self.per_start_bytes,
            "gpu_cap": self.gpu_cap,
            "budget_from": self.budget_source,
            **({"declared_error": self.declared_error} if self.declared_error else {}),
        }

    def write(self, path: Path, starts: int) -> None:
        with contextlib.suppress(OSError):
            path.write_text(json.dumps(self.record(starts)) + "\n")
