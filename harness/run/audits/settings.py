"""How much of a run `evaluate --audit` audits. The query audits (queries.py) and the
repeats they ask (repeat.py) both read it, so it stands apart from both."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AuditSettings:
    """How much of a run is audited (`evaluate --audit`); seeded, so reruns audit the same."""

    mutation_queries: int = 3
    """Queries per trajectory whose state is exported before and after (any pass)."""
    caching_queries: int = 2
    """Main-pass questions per trajectory asked again under fresh ids."""
    persistence_trajectories: int = 1
    """Trajectories run again in restart mode (when the run's mode is not restart)."""
    speedup: float = 5.0
    """A repeat this many times faster than the slower ask it is compared with is flagged
    (over the first ask: only when a second question's repeat is too)..."""
    min_seconds: float = 0.05
    """... when the slower of the two took at least this long (below it, timing is noise)."""
    seed: int = 0
