"""Spares frozen once loaded: no code of a spare runs while the live system serves.

A spare is the next start, launched while the live system serves so that a restart need
not wait for a load. Both running at once is a channel: whatever the live system moves
(page-cache residency of shared files, host-wide counters, CPU time) a running spare can
watch, and it would start its own life knowing what the live one never exported. So a
spare runs only while it loads: the runtime freezes it (its freezer cgroup,
start_cgroups.py; `docker pause` for a container) as soon as its socket appears, or when
its load has taken `spare_deadline_s` (twice the first start's time to serve, at least
MIN_DEADLINE_S: a spare that lingers in its constructor to listen is frozen then, and
finishes loading after its promotion). It is thawed when promoted, after the live system
stopped and what it made resident was reclaimed.

What is left: a spare's load overlaps the live system's first seconds of serving (at most
the deadline), written in docs/guarantees.md.
"""

from __future__ import annotations

MIN_DEADLINE_S = 2.0


def spare_deadline_s(first_load_s: float | None, unknown_s: float) -> float:
    """How long a spare may load before it is frozen anyway."""
    return max(MIN_DEADLINE_S, 2 * (first_load_s if first_load_s is not None else unknown_s))
