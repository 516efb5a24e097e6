"""No process answers with data from later than it should have seen.

restart: every segment (main pass pieces, forks, EA replays) starts a fresh
process, so the latest time a process has ever been shown is at most the
time of the question it answers. reset/trust: the runner orders segments so
that no process ever held data of a later session than the one it answers;
whatever look-ahead remains within a session is measured and recorded. The
system here keeps its latest-seen time across Reset (as hidden memory
would), so it reports what a process really held.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.apmbench.dataset import load_dataset
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def run(
    tmp_path: Path, persistence: Persistence, system: str = "SeenClock", resume: bool = False
) -> tuple[Path, list[dict[str, Any]]]:
    root = synthetic_dataset("small", 0)
    out = tmp_path / persistence.value
    evaluate(
        EvaluateOptions(
            dataset=root,
            out=out,
            runtime=runtime_spec(system=f"helpers.systems:{system}"),
            persistence=persistence,
            resume_forks=resume,
        )
    )
    rows = [json.loads(x) for x in (out / "instances.jsonl").read_text().splitlines()]
    return root, rows


def seen(row: dict[str, Any]) -> int:
    value: int = json.loads(row["raw_output"])["seen_ms"]
    return value


# The second declares R14: its forks start from the main pass's mid-session snapshots,
# taken after the main pass had pushed the whole session.
@pytest.mark.parametrize(
    ("system", "forks_start"),
    [("SeenClock", "session replay"), ("ResumingSeenClock", "mid-session snapshot")],
)
def test_restart_no_process_has_seen_past_its_question(
    tmp_path: Path, system: str, forks_start: str
) -> None:
    _, rows = run(tmp_path, Persistence.RESTART, system, resume=True)
    assert len(rows) > 100
    late = [r["instance_id"] for r in rows if seen(r) > r["time_ms"]]
    assert late == []
    assert all(r["lookahead_s"] == 0 for r in rows)
    manifest = json.loads((tmp_path / "restart" / "manifest.json").read_text())
    assert manifest["isolation"] == {
        "max_lookahead_s": 0.0,
        "fresh_process_per_segment": True,
        "rests_on_system_reset": False,
        "forks_start": forks_start,
    }


def test_reset_no_process_holds_a_later_session(tmp_path: Path) -> None:
    root, rows = run(tmp_path, Persistence.RESET)
    dataset = load_dataset(root)
    session_end = {
        (t.trajectory_id, s.session_id): s.end_ms for t in dataset.trajectories for s in t.sessions
    }
    later = [
        r["instance_id"]
        for r in rows
        if seen(r) > session_end[(r["trajectory_id"], r["session_id"])]
    ]
    assert later == []
    # The harness's own measure of look-ahead is what the process really held.
    for r in rows:
        assert r["lookahead_s"] == max(0, seen(r) - r["time_ms"]) / 1000.0
    manifest = json.loads((tmp_path / "reset" / "manifest.json").read_text())
    worst = max(r["lookahead_s"] for r in rows)
    assert manifest["isolation"]["max_lookahead_s"] == worst
    assert manifest["isolation"]["rests_on_system_reset"] is True
    report = (tmp_path / "reset" / "report.md").read_text()
    assert "rests on the system's own Reset" in report
