"""`evaluate` end to end against real server processes on the mini dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.apmbench import prompts
from apmbench.harness.suites.apmbench.dataset import load_dataset

pytestmark = pytest.mark.usefixtures("helper_env")

LABEL_KEYS = {
    "evidence_content",
    "response_reason",
    "silence_reason",
    "proactive_response",
    "reason",
    "reference_proactive_response",
    "trigger_match_reason",
    "memory_relevance",
    "response_window_rationale",
}


def run(
    mini: Path,
    out: Path,
    system: str,
    persistence: Persistence,
    sandbox: bool = True,
    start: str = "fresh",
) -> list[dict[str, Any]]:
    result = evaluate(
        EvaluateOptions(
            dataset=mini,
            out=out,
            runtime=runtime_spec(system=system, sandbox=sandbox, start=start),
            persistence=persistence,
        )
    )
    assert (result.run_dir / "report.json").exists()
    lines = (out / "instances.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def label_texts(raw: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(raw, dict):
        for key, value in raw.items():
            if key in LABEL_KEYS and isinstance(value, str):
                found.add(value)
            found |= label_texts(value)
    elif isinstance(raw, list):
        for value in raw:
            found |= label_texts(value)
    return found


def test_null_run_writes_the_run_directory(mini: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    instances = run(mini, out, "null", Persistence.RESET)
    for name in ("manifest.json", "instances.jsonl", "sessions.jsonl", "report.json", "report.md"):
        assert (out / name).is_file(), name
    assert not (out / "work").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["system"]["name"] == "null"
    assert manifest["settings"]["persistence"] == "reset"
    assert manifest["dataset_hash"] == load_dataset(mini).content_hash
    report = json.loads((out / "report.json").read_text())
    assert report["schema_version"] == 1
    assert report["tasks"]["ERA"]["score"] is None and "judge" in report["tasks"]["ERA"]["reason"]
    assert report["overall"]["score"] is None
    # null answers "A" everywhere: TR and OCR have A as the answer in the fixture.
    assert report["tasks"]["TR"]["score"] == 100.0 and report["tasks"]["ER"]["score"] == 0.0
    assert report["decision_accuracy"]["overall"]["BA"] == 50.0
    dataset = load_dataset(mini)
    assert len(instances) == sum(len(c.probes) for c in dataset.candidates)
    sessions = [json.loads(x) for x in (out / "sessions.jsonl").read_text().splitlines()]
    assert [s["frames"] for s in sessions] == [40, 40, 50, 30, 30, 30]
    assert report["storage"]["trajectories_counted"] == 2


@pytest.mark.slow
def test_nothing_leaks_and_no_frame_passes_a_query(
    mini: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "received.jsonl"
    monkeypatch.setenv("APMBENCH_RECORD", str(log))
    # The recorder writes to a host file, which the sandbox rightly forbids.
    run(mini, tmp_path / "run", "helpers.systems:Recorder", Persistence.RESTART, sandbox=False)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    labels = set()
    for path in (mini / "candidates").glob("*.json"):
        labels |= label_texts(json.loads(path.read_text()))
    assert len(labels) > 10
    sent = [e["text"] for e in events if e["event"] in ("turn", "query")]
    for label in labels:
        assert not any(label in text for text in sent), f"label text reached the system: {label!r}"
    queries = 0
    last_frame = None
    for e in events:
        if e["event"] == "start":
            last_frame = None
        elif e["event"] == "frame":
            last_frame = e["time_ms"]
            assert e["size"] == [64, 48]  # resized to the system's preferred side
        elif e["event"] == "query":
            queries += 1
            assert last_frame is not None and last_frame <= e["time_ms"]
            # ... and the causal prefix is complete: the frame of this very second was sent.
            assert e["time_ms"] - last_frame < 1000
    assert queries == sum(len(c.probes) for c in load_dataset(mini).candidates)


def _is_marker(text: str) -> bool:
    """An interval marker's text (the paper's, with any start time)."""
    head, tail = prompts.INTERVAL_MARKER.split("{start_time}")
    return text.startswith(head) and text.endswith(tail)


def test_forks_see_their_own_turns_and_of_the_others_only_markers(
    mini: Path, tmp_path: Path
) -> None:
    """A fork gets its candidate's turns and its probe's marker, and no other candidate's
    question or registration (obligations that would change its right answer); the other
    probes' interval markers reach it as decoys, as they reach every replay of a session."""
    instances = run(mini, tmp_path / "run", "helpers.systems:TurnEcho", Persistence.RESET)
    dataset = load_dataset(mini)
    probes = {p.probe_id: (c, p) for c in dataset.candidates for p in c.probes}
    checked = decoys = 0
    for record in instances:
        seen = json.loads(record["raw_output"])["memory"]["turns"]
        candidate, probe = probes[record["instance_id"]]
        expected = [t.text for t in (*candidate.turns, *probe.turns) if t.time_ms <= probe.time_ms]
        assert [t for t in seen if t in expected] == expected, record["instance_id"]
        others = [t for t in seen if t not in expected]
        assert all(_is_marker(t) for t in others), (record["instance_id"], others)
        checked += bool(expected)
        decoys += len(others)
    assert checked >= 7  # every adaptive probe carried at least one turn
    assert decoys > 0


def _by_id(instances: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["instance_id"]: json.loads(r["raw_output"]) for r in instances}


@pytest.mark.slow
@pytest.mark.parametrize("start", ["fresh", "template"])
def test_restart_lets_only_exported_state_cross_a_gap(
    mini: Path, tmp_path: Path, start: str
) -> None:
    restart = _by_id(
        run(mini, tmp_path / "a", "helpers.systems:HiddenState", Persistence.RESTART,
            start=start)
    )  # fmt: skip
    trust = _by_id(run(mini, tmp_path / "b", "helpers.systems:HiddenState", Persistence.TRUST))
    est = "T01-EST-1"  # asked in T01's third session
    assert restart[est]["exported_sessions"] == ["S001", "S002"]
    assert restart[est]["hidden_sessions"] == ["S003"]
    assert trust[est]["exported_sessions"] == ["S001", "S002"]
    # The process went on: it still holds the sessions it saw before (forks of S003 ran
    # in it too, before the main pass reached S003: the causal order).
    assert {"S001", "S002", "S003"} <= set(trust[est]["hidden_sessions"])


def test_forks_without_import_replay_to_the_same_memory(mini: Path, tmp_path: Path) -> None:
    snap = _by_id(run(mini, tmp_path / "a", "helpers.systems:TurnEcho", Persistence.TRUST))
    replay = _by_id(run(mini, tmp_path / "b", "helpers.systems:NoImport", Persistence.TRUST))
    for probe in ("T01-MPA-0#pos0", "T01-TPG-0#neg0", "T02-PRM-0#pos0"):
        assert snap[probe]["memory"] == replay[probe]["memory"], probe
    assert snap["T01-MPA-0#pos0"]["memory"]["sessions"] == ["S001", "S002"]


def test_evidence_availability_sees_only_two_recent_sessions(mini: Path, tmp_path: Path) -> None:
    out = _by_id(run(mini, tmp_path / "a", "helpers.systems:TurnEcho", Persistence.RESET))
    # T01's third session: the two most recent completed sessions are S001 and S002.
    assert out["T01-EA-avail"]["memory"]["sessions"] == ["S001", "S002"]
    # No question or registration of a fork; the sessions' interval markers (decoys) only.
    assert all(_is_marker(t) for t in out["T01-EA-avail"]["memory"]["turns"])


def test_unknown_system_is_refused_before_anything_starts(mini: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(mini),
         "--system", "nosuch", "--out", str(out)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 2
    assert "unknown system 'nosuch': use one of" in result.stderr
    assert not out.exists()


def test_a_system_that_fails_to_start_shows_its_own_error(mini: Path, tmp_path: Path) -> None:
    from apmbench.harness.errors import RuntimeStartError

    with pytest.raises(
        RuntimeStartError, match=r"(?s)did not start.*cannot import 'helpers\.nope'"
    ):
        run(mini, tmp_path / "run", "helpers.nope:System", Persistence.RESET)
