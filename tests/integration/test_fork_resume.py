"""Forks from mid-session snapshots (R14): in `restart` mode, with a system that declares
`resumes_sessions`, a fork starts in a fresh process from the main pass's state just before
its first turn instead of replaying its first session from the start. Every answer, every
record and every score equal the replay's; the manifest says which path ran."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.timing import TIMING

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

pytestmark = pytest.mark.usefixtures("helper_env")


def run(
    root: Path, out: Path, system: str, resume: bool, persistence: Persistence | None = None
) -> dict[str, Any]:
    result = evaluate(
        EvaluateOptions(
            dataset=root,
            out=out,
            runtime=runtime_spec(system=system),
            persistence=persistence,
            resume_forks=resume,
        )
    )
    return result.report


def untimed(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def forks(out: Path) -> tuple[int, int]:
    records = [json.loads(p.read_text()) for p in (out / "trajectories").glob("*.json")]
    return (
        sum(r["forks"]["from_mid_session_snapshot"] for r in records),
        sum(r["forks"]["frames_not_replayed"] for r in records),
    )


def forks_start(out: Path) -> str:
    manifest = json.loads((out / "manifest.json").read_text())
    return str(manifest["isolation"]["forks_start"])


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("dataset", ["mini", "tiny"])
@pytest.mark.parametrize("system", ["helpers.systems:ResumingJsonMemory", "null"])
def test_snapshot_and_replay_give_the_same_answers_and_scores(
    dataset: str, system: str, mini: Path, tmp_path: Path
) -> None:
    root = mini if dataset == "mini" else synthetic_dataset("tiny", 0)
    snap, replay = tmp_path / "snapshot", tmp_path / "replay"
    by_snapshot = run(root, snap, system, resume=True)
    by_replay = run(root, replay, system, resume=False)
    assert forks_start(snap) == "mid-session snapshot"
    assert forks_start(replay) == "session replay"
    resumed, skipped = forks(snap)
    assert resumed > 0 and skipped > 0, "no fork started from a mid-session snapshot"
    assert forks(replay) == (0, 0)
    # ResumingJsonMemory answers with its whole memory (frames counted, turns, sessions):
    # equal raw outputs mean each fork held exactly what its replay held.
    assert untimed(snap / "instances.jsonl") == untimed(replay / "instances.jsonl")
    assert untimed(snap / "sessions.jsonl") == untimed(replay / "sessions.jsonl")
    for key in ("tasks", "families", "overall", "storage"):
        assert by_snapshot[key] == by_replay[key], key


@pytest.mark.slow
@pytest.mark.integration
def test_only_restart_mode_and_a_declaring_system_take_the_snapshot_path(
    mini: Path, tmp_path: Path
) -> None:
    # `reset` keeps one process: it has pushed the rest of the session before the fork.
    run(mini, tmp_path / "reset", "null", resume=True, persistence=Persistence.RESET)
    assert forks_start(tmp_path / "reset") == "session replay"
    assert forks(tmp_path / "reset") == (0, 0)
    # A system that does not declare resumes_sessions is replayed.
    run(mini, tmp_path / "plain", "helpers.systems:JsonMemory", resume=True)
    assert forks_start(tmp_path / "plain") == "session replay"
    assert forks(tmp_path / "plain") == (0, 0)


@pytest.mark.slow
@pytest.mark.integration
def test_forks_replay_by_default_so_no_export_announces_a_question(tmp_path: Path) -> None:
    """Snapshot forks are opt-in (`--fork-snapshots`): a mid-session export tells the
    system that a fork's turn or question comes now. ForkTimeSpy writes that into its
    state; by default no answer of it ever knew, with the option some did."""
    root = synthetic_dataset("tiny", 0)
    spy = "helpers.systems:ForkTimeSpy"
    default, opted = tmp_path / "default", tmp_path / "opted"
    evaluate(EvaluateOptions(dataset=root, out=default, runtime=runtime_spec(system=spy)))
    run(root, opted, spy, resume=True)

    def knew(out: Path) -> int:
        rows = [json.loads(x) for x in (out / "instances.jsonl").read_text().splitlines()]
        return sum("fork_here_at_frame" in json.loads(r["raw_output"])["memory"] for r in rows)

    assert forks_start(default) == "session replay" and forks(default) == (0, 0)
    assert knew(default) == 0
    assert forks_start(opted) == "mid-session snapshot" and knew(opted) > 0
