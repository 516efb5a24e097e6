"""Where a push ends: at every question, and elsewhere at random, so that a push's size
says nothing about whether a question follows it.

Pushes used to hold up to 64 frames and end at every question, so a short push announced
a question (a size threshold predicted "a question follows" with balanced accuracy above
0.9) and a system could do its query work inside the push before it, hiding the cost
from time to first token. Now, after each item, the push also ends with probability
1 / mean_items, drawn from a generator the system cannot predict (a fresh secret per
run unless a seed is given): the number of items since the last cut is then distributed
the same way whether the cut was a question or a coin, because the coins have no memory.
A cap far out in the tail (`cap_items`, reached with probability below 1e-7 at the
default) bounds one call.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass


@dataclass(frozen=True)
class PushCuts:
    mean_items: int = 32
    """Items per push on average, where no question cuts it earlier."""
    cap_items: int = 512
    """Items per push at most."""
    seed: int | None = None
    """None: a secret seed per run (the default; cuts a system cannot predict). A seed makes
    the cuts reproducible, for tests that compare two runs call by call."""
    at_random: bool = True
    """False: cut only at `2 * mean_items` items and at questions, the old rule whose push
    sizes announce questions; kept so a test can measure that leak."""
    decoys: bool = True
    """False: the old rule under which the wire announced questions, kept so a test can
    measure that leak: no decoys (`Segment.decoys`, `Segment.cuts`: user turns and push
    ends where no question follows), a replay that stops early stops at its last question
    (not at `Segment.stop_ms`), and a replay's pushes wait on frame production."""

    def cutter(self) -> Cutter:
        rng = random.Random(secrets.randbits(64) if self.seed is None else self.seed)
        return Cutter(self, rng)


class Cutter:
    """One run's (or one segment's) draws."""

    def __init__(self, cuts: PushCuts, rng: random.Random) -> None:
        self.cuts = cuts
        self.rng = rng

    def ends_after(self, items: int) -> bool:
        """Whether the push ends after its `items`-th item (no question being due)."""
        if not self.cuts.at_random:
            return items >= 2 * self.cuts.mean_items
        return items >= self.cuts.cap_items or self.rng.random() * self.cuts.mean_items < 1
