"""ProactEgoMem's per-step condition (`evaluate --benchmark proactegomem --variant
per-step`): the paper's models saw, at each step, the prompt, the context JSON and the 10
most recent frames, and nothing else. Each step is then its own runtime instance given only
its window; a system that keeps state between steps (helpers/frame_counter.py counts every
frame it was ever given, across Reset) is refused that state by a fresh process per step in
`restart` persistence, and flagged by the report in `reset`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.media.frames import frame_times
from apmbench.harness.suites import datasets, get_suite
from apmbench.harness.suites.proactegomem.plan import plan_clip
from apmbench.harness.suites.proactegomem.synth import synthetic_dataset

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("helper_env")]
COUNTER = "helpers.frame_counter:FrameCounter"


@pytest.fixture(scope="module")
def tiny() -> Path:
    return synthetic_dataset("tiny", 0)


def test_every_step_is_its_own_instance_with_only_its_window(tiny: Path) -> None:
    dataset = datasets.load(get_suite("proactegomem"), tiny, "per-step")
    for trajectory in dataset.trajectories:
        times = frame_times(trajectory.sessions[0], 1.0)
        segments = plan_clip(dataset, trajectory)
        steps = [s for s in segments if s.asks and s.asks[0].fields.get("role") == "step"]
        assert len(steps) == len(times) * len(dataset.levels)
        states = {}
        for s in steps:
            (ask,) = s.asks
            assert s.snapshot_after is None and s.kind != "main" and s.stop_after_last_ask
            assert s.keep_frame is not None and s.state is not None
            kept = [t for t in times if s.keep_frame(t)]
            assert kept == [t for t in times if t <= ask.time_ms][-10:]
            states.setdefault(ask.fields["level"], set()).add(id(s.state()))
        # The harness's tool state runs on across the steps of a level.
        assert all(len(ids) == 1 for ids in states.values()), states


def _counts(run: Path) -> list[int]:
    seen = []
    for line in (run / "instances.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("role") == "step":
            m = re.search(r"seen (\d+) frames", row["raw_output"])
            assert m, row["raw_output"]
            seen.append(int(m.group(1)))
    return seen


def _evaluate(tiny: Path, out: Path, *extra: str) -> str:
    done = CliRunner().invoke(
        main, ["evaluate", "--dataset", str(tiny), "--system", COUNTER, "--out", str(out),
               *extra],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    return (out / "report.md").read_text()


@pytest.mark.slow
def test_a_system_keeping_state_between_steps_is_refused_it_or_flagged(
    tiny: Path, tmp_path: Path
) -> None:
    # Streamed (the suite's own condition): one process sees the whole clip.
    _evaluate(tiny, tmp_path / "streamed")
    assert max(_counts(tmp_path / "streamed")) > 10
    # Per-step in restart: a fresh process each step, holding exactly its window.
    report = _evaluate(tiny, tmp_path / "restart", "--variant", "per-step")
    counts = _counts(tmp_path / "restart")
    assert counts and max(counts) == 10 and min(counts) == 1, counts
    assert "variant `per-step`" in report.splitlines()[2]
    assert "Per-step view: per-step (the paper's condition" in report
    assert "rests on the system's own Reset" not in report
    # Per-step in reset: the count passes Reset, and the report says what isolation rests on.
    report = _evaluate(tiny, tmp_path / "reset", "--variant", "per-step", "--persistence", "reset")
    assert max(_counts(tmp_path / "reset")) > 10
    assert "rests on the system's own Reset" in report


SMUGGLER = "helpers.per_step_smuggler:Smuggler"


@pytest.mark.slow
def test_the_context_carries_no_memory_the_system_writes_into_a_tracker(
    tiny: Path, tmp_path: Path
) -> None:
    """A red team carried the whole clip's frame count across per-step processes in an
    extra argument of a tracker, which the next step's context showed back (30 frames on
    tiny). A start takes exactly its `name` and state or location now, each at most
    MAX_ARGUMENT_CHARS: the smuggler's starts are invalid calls and no count passes 10."""
    out = tmp_path / "smuggler"
    done = CliRunner().invoke(
        main, ["evaluate", "--benchmark", "proactegomem", "--dataset", str(tiny), "--system",
               SMUGGLER, "--variant", "per-step", "--out", str(out)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    counts = []
    for line in (out / "instances.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("role") == "step" and row.get("level") == "intervention":
            counts.append(int(re.search(r"seen (\d+)", row["raw_output"]).group(1)))  # type: ignore[union-attr]
            assert all(a.get("valid") is False for a in row["actions"] if "memo" in str(a))
    assert counts and max(counts) <= 10, max(counts)
    report = json.loads((out / "report.json").read_text())
    assert report["levels"]["intervention"]["invalid_calls"] > 0
