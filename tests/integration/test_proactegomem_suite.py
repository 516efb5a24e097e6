"""`evaluate --benchmark proactegomem` end to end on the synthetic benchmark, each
system a sandboxed process on a Unix socket: the pixel-reading rule-based system acts on
time and keeps the right intervals, the null system scores zero, a system that reads only
times and metadata stays at chance, trackers opened blind at the start match nothing, and
QA orders Oracle >= Proact >= No Memory."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from helpers.proact_leaky import make_leaky

from apmbench.harness.cli import main
from apmbench.harness.suites.proactegomem.synth import synthetic_dataset

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# `small`: 52 events over the three tasks (on tiny's 8 chance is too coarse) and 60 s clips,
# so No Memory's 40 uniform frames miss short placements and panels (tiny's 30 s clips
# would show every frame).
SYSTEMS = (
    ("proact-rules", "small"),
    ("null", "tiny"),
    ("tests.helpers.proact_cheaters:TimingOnlyProactive", "small"),
    ("tests.helpers.proact_cheaters:BlindTracker", "small"),
    ("tests.helpers.proact_cheaters:StepSpammer", "small"),
)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    cache = tmp_path_factory.mktemp("cache")
    out = tmp_path_factory.mktemp("runs")
    done: dict[str, dict[str, Any]] = {}
    for n, (system, preset) in enumerate(SYSTEMS):
        run = out / f"run{n}"
        data = synthetic_dataset(preset, 0, cache)
        result = CliRunner().invoke(
            main,
            ["evaluate", "--benchmark", "proactegomem", "--dataset", str(data),
             "--system", system, "--out", str(run)],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        done[system.rsplit(":", 1)[-1]] = {
            "report": json.loads((run / "report.json").read_text()),
            "md": (run / "report.md").read_text(),
            "records": run,
            "dataset": data,
        }
    return done


def test_rule_based_system_is_on_time_and_keeps_the_right_intervals(
    reports: dict[str, dict[str, Any]],
) -> None:
    levels = reports["proact-rules"]["report"]["levels"]
    iv, nt = levels["intervention"], levels["notification"]
    assert iv["start_at"]["0.2"] >= 90 and iv["f1"] >= 90 and iv["miou"] >= 90
    assert nt["start_at"]["0.2"] >= 90 and nt["f1"] >= 80
    assert iv["invalid_calls"] == 0 and iv["unparseable"] == 0
    # Each task on its own, as the paper reports them: every one is played and kept right.
    assert set(iv["by_task"]) == set(nt["by_task"]) == {"ST", "LT", "IC"}
    for task, cell in iv["by_task"].items():
        assert cell["start_at"]["0.2"] >= 90 and cell["f1"] >= 90 and cell["miou"] >= 90, task
    md = reports["proact-rules"]["md"]
    assert "synthetic reference judge: deterministic word match" in md
    assert "## Memory QA accuracy" in md and "Per-step view: streamed:" in md
    assert "| intervention · LT |" in md and "| notification · IC |" in md


def test_qa_orders_oracle_over_proact_over_no_memory(reports: dict[str, dict[str, Any]]) -> None:
    qa = reports["proact-rules"]["report"]["qa"]
    acc = {c: qa[c]["accuracy"] for c in ("No Memory", "Proact Memory", "Oracle Memory")}
    assert acc["Oracle Memory"] >= acc["Proact Memory"] > acc["No Memory"], acc
    assert acc["Oracle Memory"] == 100.0 and all(qa[c]["n"] == 46 for c in acc)
    for task in ("ST", "LT", "IC"):
        by = {c: qa[c]["by_task"][task]["accuracy"] for c in acc}
        assert by["Oracle Memory"] >= by["Proact Memory"] >= by["No Memory"], (task, by)


def test_null_scores_zero(reports: dict[str, dict[str, Any]]) -> None:
    for cell in reports["null"]["report"]["levels"].values():
        assert cell["start_at"]["0.2"] == 0 and cell["f1"] == 0 and cell["matched"] == 0
    assert reports["null"]["report"]["levels"]["intervention"]["miou"] == 0


def test_timing_and_metadata_alone_stay_at_chance(reports: dict[str, dict[str, Any]]) -> None:
    rep = reports["TimingOnlyProactive"]["report"]
    iv, nt = rep["levels"]["intervention"], rep["levels"]["notification"]
    # One 4 s tracker every 7 s over five names, against events drawn per clip: what it
    # matches it matches by chance. Start@0.2 is a share of the few matches (of 52 events here),
    # so the on-time hits are counted against every opportunity (the rule-based system: 100).
    for cell in (iv, nt):
        on_time = cell["start_at"]["0.2"] * cell["matched"] / cell["ground_truth"]
        assert on_time < 15, cell
    assert iv["f1"] < 25 and nt["f1"] < 25 and iv["miou"] < 15
    # Its stop of an id it never started is refused at every step, and counted.
    assert iv["invalid_calls"] >= iv["steps"]


def test_a_frame_blind_spammer_cannot_buy_the_headline(
    reports: dict[str, dict[str, Any]],
) -> None:
    """The red team's spammer (three trackers named with every object word, restarted at
    every step) starts one at every event's second: Start@0.2, which counts only matched
    predictions, gives it 100 like proact-rules. The headline the leaderboard ranks by and
    compare plots is Intervention F1, which charges every false tracker."""
    from apmbench.harness.suites import get_suite

    suite = get_suite("proactegomem")
    spam = reports["StepSpammer"]["report"]
    honest = reports["proact-rules"]["report"]
    iv = spam["levels"]["intervention"]
    assert iv["start_at"]["0.2"] >= 90, iv["start_at"]  # the shortcut is real
    assert iv["precision"] < 20, iv
    spam_utility, honest_utility = (
        suite.report_format().headline(spam).utility,
        suite.report_format().headline(honest).utility,
    )
    assert suite.report_format().headline(spam).utility_label.startswith("Intervention F1")
    assert spam_utility is not None and honest_utility is not None
    assert spam_utility < 25 and honest_utility >= 90, (spam_utility, honest_utility)


def test_trackers_opened_blind_and_never_closed_match_nothing(
    reports: dict[str, dict[str, Any]],
) -> None:
    """Five trackers per clip at the first step, never closed: they overlap most events, but
    start within the window (section 5.1 gates both levels on it: [-2 s, +5 s]) only of an
    event that starts in the clip's first 2 s. Matched on overlap alone (before) they
    scored intervention 13 matches, P 59.1 / R 34.2 / F1 43.3 on `small` (generator 3)."""
    rep = reports["BlindTracker"]
    iv = rep["report"]["levels"]["intervention"]
    assert iv["predictions"] > 0 and iv["invalid_calls"] > 0  # IC: one recording at a time
    doc = json.loads((rep["dataset"] / "dataset.json").read_text())
    early = sum(e["start_s"] <= 2.0 for c in doc["clips"] for e in c["events"])
    assert iv["matched"] <= early < 3, (iv["matched"], early)
    # What matches is a tracker opened up to 2 s before its event: Δ in [-2, 0].
    assert all(-2.0 <= d <= 0.0 for d in iv["start_error_s"]["values"])
    assert iv["recall"] < 100 * 3 / iv["ground_truth"] and iv["miou"] < 1


def test_the_timing_only_system_scores_on_a_leaky_dataset(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # The positive control of the test above, whose bounds `null` meets too: with every
    # event put on the cheater's own blind schedule (the protection, events drawn per
    # clip, switched off), the same system must score. Measured on tiny: intervention F1,
    # mIoU and on-time starts 100 (default: F1 10); notification F1 33 (it cycles the
    # three tasks' templates, one right in three).
    tmp = tmp_path_factory.mktemp("leaky")
    data = synthetic_dataset("tiny", 0, tmp / "cache")
    assert make_leaky(data) > 0
    result = CliRunner().invoke(
        main,
        ["evaluate", "--benchmark", "proactegomem", "--dataset", str(data),
         "--system", "tests.helpers.proact_cheaters:TimingOnlyProactive", "--out", str(tmp / "run")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rep = json.loads((tmp / "run" / "report.json").read_text())
    iv, nt = rep["levels"]["intervention"], rep["levels"]["notification"]
    on_time = iv["start_at"]["0.2"] * iv["matched"] / iv["ground_truth"]
    assert iv["f1"] >= 90 and iv["miou"] >= 90 and on_time >= 90, iv
    assert nt["f1"] >= 25, nt  # above the bound the at-chance test holds it under
