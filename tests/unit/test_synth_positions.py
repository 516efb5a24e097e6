"""Where a candidate's positive probe sits among its probes carries no label.

A system's processes can share a count through any channel the sandbox leaves open
(docs/guarantees.md measures the timing one), so "the first probe of a candidate is the
positive" must be a coin flip. Generator 4 put the positive first in about 62 % of RCR
and TPG candidates and 43 % of MPA ones on 12 seeds of `small`; generator 5 decides the
order with a fair coin. Generation is deterministic in the seed, so the bound is exact,
not a chance: on 48 seeds (576 candidates a task) generator 5 gives 0.479 (MPA), 0.490
(PRM), 0.512 (RCR) and 0.505 (TPG), generator 6 (other random draws, 570-576 candidates)
0.540, 0.505, 0.530 and 0.513; the test allows 0.5 +- 0.05, which the old shares
(0.62, 0.63, 0.43) fall outside.

ERA is the exception by definition: its negatives are the checkpoints before the first
pick-up and its positive the one after; the test pins that down too, so that a change
to it is a decision, not an accident.
"""

from __future__ import annotations

from collections import Counter

import pytest

from apmbench.harness.suites.apmbench.synth.candidates import positive_first
from apmbench.harness.suites.apmbench.synth.live import trajectory_world
from apmbench.harness.suites.apmbench.synth.presets import PRESETS

SEEDS = range(48)
BALANCED = ("RCR", "MPA", "PRM", "TPG")


@pytest.fixture(scope="module")
def candidates(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("APMBENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
        return [
            c
            for seed in SEEDS
            for t in range(PRESETS["small"].trajectories)
            for c in trajectory_world("small", seed, t)[1]
        ]


@pytest.mark.slow
def test_the_positive_comes_first_in_half_the_two_sided_candidates(
    candidates: list[dict[str, object]],
) -> None:
    first: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for c in candidates:
        task = str(c["task_type"])
        if task in BALANCED:
            total[task] += 1
            first[task] += positive_first(c)
    shares = {task: first[task] / total[task] for task in BALANCED}
    assert min(total.values()) >= 500, total
    assert all(abs(share - 0.5) <= 0.05 for share in shares.values()), shares


def test_era_keeps_its_positive_after_the_checkpoints_before_the_pick_up(
    candidates: list[dict[str, object]],
) -> None:
    era = [c for c in candidates if c["task_type"] == "ERA"]
    assert era and all(positive_first(c) == (not c["negative_heartbeats"]) for c in era)


def test_positive_first_reads_heartbeats_and_intervals() -> None:
    heartbeat = {
        "positive_heartbeat": {"query_time": "08:00:10"},
        "negative_heartbeats": [{"query_time": "08:00:20"}],
    }
    assert positive_first(heartbeat)
    interval = {
        "ideal_response_window": {"start_time": "08:00:30", "end_time": "08:00:34"},
        "negative_or_silence_windows": [{"start_time": "08:00:02", "end_time": "08:00:06"}],
    }
    assert not positive_first(interval)
