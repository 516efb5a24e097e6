"""The fault campaign (tests/helpers/campaign.py) on the tiny preset, process part.

A seeded sequence of at least 50 injected faults: crashes and hangs in every
RPC, huge states, log floods, markup and escapes, a symlinked socket, forged
leftovers, and SIGTERM and SIGKILL of the harness, each followed by `--resume`.
Nothing may be lost, left behind or allowed past a cap, and every finished run
must score exactly as an uninterrupted one. `make bench` prints the same summary.
`APMBENCH_CAMPAIGN_FAULTS` and `APMBENCH_CAMPAIGN_SEED` change the sequence.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers.campaign import run_campaign

pytestmark = pytest.mark.usefixtures("helper_env")


# 50 runs of the command line and their resumes: minutes, not the 300 s of one test.
@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_fault_campaign(tmp_path: Path) -> None:
    count = int(os.environ.get("APMBENCH_CAMPAIGN_FAULTS", "50"))
    seed = int(os.environ.get("APMBENCH_CAMPAIGN_SEED", "18"))
    summary = run_campaign(tmp_path, seed=seed, count=count, say=print)
    print(json.dumps({k: v for k, v in summary.items() if k != "problems"}, indent=1))
    assert summary["problems"] == []
    assert summary["instances_lost"] == 0
    assert summary["steps_with_leftovers"] == 0
    assert summary["caps_held"]
    assert summary["scores_equal_after_resume"]
    assert summary["runs_finished"] >= 2
    if not summary["caps_measured_exactly"]:  # a skip, which fails under CI=true
        pytest.skip("the caps need fanotify (CAP_SYS_ADMIN); the poller can miss a breach")
