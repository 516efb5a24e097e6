"""The leaderboard's page model and its files, over reports the suites' own scorers write.

Each report is what a suite's `ReportFormat.score` makes of no records (every number n/c), with the few
numbers a test needs set at the fields the suite's leaderboard says it reads them from;
the manifests carry what the model reads of a real one. The end-to-end test over real
runs is tests/integration/test_leaderboard.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.errors import RunDirError
from apmbench.harness.orchestrate.leaderboard.entries import Entry, entries_of, load_entries
from apmbench.harness.orchestrate.leaderboard.model import (
    NOT_VERIFIED,
    UNCONFINED,
    VERIFICATION_FAILED,
    VERIFIED,
    build_board,
    ranks,
)
from apmbench.harness.orchestrate.leaderboard.site import build_leaderboard
from apmbench.harness.reports.scores import REPORT, pointer, resolve
from apmbench.harness.suites import get_suite

HOSTILE = "x</td><script>alert(1)</script>|"
OVERALL = pointer(REPORT, "overall", "score")
SINGLE_TURN = pointer(REPORT, "single_turn", "all", "accuracy")
TTFT = pointer(REPORT, "latency", "time_to_first_token_s", "mean")
ANSWER = pointer(REPORT, "latency", "time_to_answer_s", "mean")


def _put(doc: dict[str, Any], field: str, value: object) -> None:
    keys = field.partition("#/")[2].split("/")
    for key in keys[:-1]:
        doc = doc[key]
    doc[keys[-1]] = value


def entry(
    benchmark: str,
    system: str,
    dataset: str = "a" * 64,
    values: dict[str, object] | None = None,
    source: str | None = None,
    verified: bool | None = None,
    confined: bool = True,
    version: str = "1",
    run_as: str | None = None,
) -> Entry:
    report: dict[str, Any] = json.loads(
        json.dumps(get_suite(benchmark).report_format().score([], [], {}))
    )
    values = dict(values or {})
    if TTFT in values:  # a run's time to answer is its TTFT unless a test says otherwise
        values.setdefault(ANSWER, values[TTFT])
    for field, value in values.items():
        _put(report, field, value)
    report["sandbox"] = (
        {"confined": True, "network": "none", "tool": "bubblewrap"}
        if confined
        else {"confined": False, "note": "unconfined: numbers not comparable"}
    )
    manifest = {
        "benchmark": benchmark,
        "dataset": {"name": f"data-{dataset[:4]}", "path": "/nowhere"},
        "dataset_hash": dataset,
        "system": {"name": system, "version": version, "capabilities": {}},
        "settings": {"persistence": "restart"},
    }
    if run_as is not None:
        manifest["system_spec"] = run_as
    return Entry(source or f"runs/{benchmark}-{system}", None, verified, report, manifest)


def test_runs_are_ranked_per_suite_and_dataset_never_across() -> None:
    other = "b" * 64
    board = build_board(
        [
            entry("proactegomem", "p"),
            entry("apmbench", "low", values={OVERALL: 40.0, TTFT: 0.1}),
            entry("egoprobe", "e", values={SINGLE_TURN: 50.0}),
            entry("apmbench", "elsewhere", dataset=other, values={OVERALL: 95.0, TTFT: 0.2}),
            entry("apmbench", "high", values={OVERALL: 60.0, TTFT: 0.3}),
        ]
    )
    shape = [
        (g.benchmark, g.dataset_hash, [(r.label, r.rank) for r in g.runs]) for g in board.groups
    ]
    assert shape == [
        # The registry's order of suites; a dataset's runs ranked among themselves only.
        ("apmbench", "a" * 64, [("high", 1), ("low", 2)]),
        ("apmbench", other, [("elsewhere", 1)]),
        ("egoprobe", "a" * 64, [("e", 1)]),
        ("proactegomem", "a" * 64, [("p", None)]),
    ]
    first = board.groups[0]
    assert first.ranked_by == "Overall"
    assert [t.title for t in first.tables] == [
        "Utility, latency and storage (paper Table 3)",
        "Task scores (paper Table 4)",
    ]
    assert [p.label for p in first.points] == ["high", "low"]
    assert [p.url for p in first.points] == [f"#{r.anchor}" for r in first.runs]
    # A run without a utility is shown, not ranked and not plotted.
    assert board.groups[3].points == () and board.groups[3].runs[0].rank is None


def test_runs_scored_by_different_judges_are_separate_rankings() -> None:
    judged = entry("egoprobe", "judged", values={SINGLE_TURN: 10.0})
    judged.report["scoring"] = {"signature": {"judge": {"kind": "http", "model": "m"}}}
    board = build_board([entry("egoprobe", "plain", values={SINGLE_TURN: 20.0}), judged])
    assert [[r.label for r in g.runs] for g in board.groups] == [["plain"], ["judged"]]


def test_live_runs_rank_only_with_runs_played_the_same_way() -> None:
    # Red team 13 put two live runs and an offline replay in one ranking.
    def live(system: str, speed: float, buffer_s: float, utility: float) -> Entry:
        made = entry("egoprobe", system, values={SINGLE_TURN: utility})
        made.manifest["settings"] = {
            "persistence": "restart",
            "live": {"speed": speed, "buffer_s": buffer_s},
        }
        return made

    board = build_board(
        [
            entry("egoprobe", "offline", values={SINGLE_TURN: 90.0}),
            live("at-4", 4.0, 1.0, 20.0),
            live("at-4-too", 4.0, 1.0, 30.0),
            live("big-buffer", 4.0, 100000.0, 80.0),
        ]
    )
    assert [[r.label for r in g.runs] for g in board.groups] == [
        ["offline"],
        ["at-4-too", "at-4"],
        ["big-buffer"],
    ]
    assert board.groups[1].notes[0].startswith("Every run here was played live at 4x, buffer 1 s")


def test_every_run_of_a_method_is_shown_and_told_apart_by_its_source() -> None:
    board = build_board(
        [
            entry("egoprobe", "text-log", source="runs/a", values={SINGLE_TURN: 70.0, TTFT: 1.0}),
            entry("egoprobe", "text-log", source="runs/b", values={SINGLE_TURN: 70.0, TTFT: 2.0}),
            entry("egoprobe", "text-log", source="other/b", values={SINGLE_TURN: 30.0}),
        ]
    )
    (group,) = board.groups
    assert [(r.label, r.rank, r.source.path) for r in group.runs] == [
        ("text-log (a)", 1, "runs/a"),
        ("text-log (b) #1", 1, "runs/b"),  # a tie shares its rank
        ("text-log (b) #2", 3, "other/b"),
    ]
    assert [p.label for p in group.points] == ["text-log (a)", "text-log (b) #1"]
    assert "text-log (b) #2 is not plotted: no query produced a parsed answer" in group.notes


def test_a_system_named_after_another_shows_what_was_run() -> None:
    """A red team's spammer reported itself as proact-rules, version 2: the page names what
    the harness ran beside the name a system chose, so two rows never look the same."""
    board = build_board(
        [
            entry("proactegomem", "proact-rules", run_as="proact-rules"),
            entry("proactegomem", "proact-rules", run_as="cheat:SpamAsRules"),
            # A command whose script is called text-log.py: the whole command line shows.
            entry("proactegomem", "proact-rules", run_as="python /tmp/x/proact-rules.py {address}"),
        ]
    )
    (group,) = board.groups
    assert [r.label for r in group.runs] == [
        "proact-rules",
        "proact-rules (run as cheat:SpamAsRules)",
        "proact-rules (run as python /tmp/x/proact-rules.py {address})",
    ]


def test_the_plot_places_runs_by_time_to_answer_which_a_cheap_first_chunk_cannot_buy() -> None:
    """A red team's server sent `{` at once and the rest after its 0.4 s model: TTFT 0.0044 s
    against 0.410 s for the same answers. The plot's x is the mean time to answer, and every
    row shows both."""
    honest = {SINGLE_TURN: 73.3, TTFT: 0.410, ANSWER: 0.404}
    prefix = {SINGLE_TURN: 73.3, TTFT: 0.0044, ANSWER: 0.404}
    board = build_board(
        [
            entry("egoprobe", "slow-honest", source="runs/a", values=honest),
            entry("egoprobe", "slow-prefix", source="runs/b", values=prefix),
        ]
    )
    (group,) = board.groups
    assert [p.latency_s for p in group.points] == [0.404, 0.404]
    (row,) = group.runs[1].rows
    shown = dict(zip(row.header, (c.shown for c in row.cells), strict=True))
    assert shown["TTFT mean (s)"] == "0.004" and shown["Answer mean (s)"] == "0.404"


def test_ranks_are_competition_ranks_and_none_is_unranked() -> None:
    assert ranks([50.0, None, 70.0, 50.0, 10.0]) == [2, None, 1, 2, 4]


@pytest.mark.parametrize("benchmark", ["apmbench", "egoprobe", "proactegomem"])
def test_each_number_is_the_value_at_its_field(benchmark: str) -> None:
    e = entry(benchmark, "s", values={TTFT: 0.25})
    (group,) = build_board([e]).groups
    docs = {"report.json": e.report, "manifest.json": e.manifest}
    cells = [c for t in group.tables for _, row in t.rows for c in row]
    assert cells and all(len(t.header) == len(row) for t in group.tables for _, row in t.rows)
    for cell in cells:
        assert cell.field is not None
        assert resolve(docs, cell.field) == cell.value, cell
        if cell.value is None:
            assert cell.shown in ("n/c", "n/a", "-", "no"), cell
    assert any(c.value == 0.25 and c.shown == "0.250" for c in cells)


def test_verified_not_verified_and_unconfined_are_marked(tmp_path: Path) -> None:
    board = build_board(
        [
            entry("egoprobe", "bundled", source="b.tar", verified=True),
            entry("egoprobe", "tampered", source="t.tar", verified=False),
            entry("egoprobe", "plain"),
            entry("egoprobe", "loose", confined=False),
        ]
    )
    marks = {r.label: r.marks for r in board.groups[0].runs}
    assert marks == {
        "bundled": (VERIFIED,),
        "tampered": (VERIFICATION_FAILED,),
        "plain": (NOT_VERIFIED,),
        "loose": (NOT_VERIFIED, UNCONFINED),
    }
    # The report's own confinement line, as every report of the run states it.
    assert any(
        n.startswith("loose: ") and "unconfined: numbers not comparable" in n
        for n in board.groups[0].notes
    )


def test_a_hostile_system_name_stays_text_in_html_and_json(tmp_path: Path) -> None:
    dollar = r"a$\frac{1}$b"  # not TeX: the plot must not try to typeset it
    entries = [
        entry("egoprobe", HOSTILE, values={SINGLE_TURN: 50.0, TTFT: 0.1}, version=HOSTILE),
        entry("egoprobe", dollar, values={SINGLE_TURN: 40.0, TTFT: 0.2}),
    ]
    page, data = build_leaderboard(entries, tmp_path / "site")
    html = page.read_text()
    assert "<script>alert(1)" not in html
    assert html.count("<script") == 1, "only the page's own sorting script"
    escaped = "x&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;|"
    # The name in the ranking, both tables' method cells and the sources' system column.
    assert html.count(escaped) >= 4
    assert len(re.findall(r"<td[^>]*>", html)) == len(re.findall(r"</td>", html))
    raw = data.read_text()
    assert "<" not in raw and ">" not in raw, "the JSON stays data when a page inlines it"
    doc = json.loads(raw)
    (ranking,) = doc["rankings"]
    assert [r["system"] for r in ranking["runs"]] == [HOSTILE, dollar]
    assert ranking["runs"][0]["system_version"] == HOSTILE
    assert ranking["plotted"] == [HOSTILE, dollar]


def test_the_json_has_every_number_with_its_field_and_source(tmp_path: Path) -> None:
    entries = [
        entry("apmbench", "a", values={OVERALL: 12.5, TTFT: 0.5}, source="runs/one"),
        entry("egoprobe", "b", values={SINGLE_TURN: 33.0, TTFT: 0.1}, source="b.tar"),
    ]
    _, data = build_leaderboard(entries, tmp_path / "site")
    doc = json.loads(data.read_text())
    assert doc["format"] == "apmbench-leaderboard"
    assert [(r["benchmark"], r["runs"][0]["source_name"]) for r in doc["rankings"]] == [
        ("apmbench", "runs/one"),
        ("egoprobe", "b.tar"),
    ]
    apm = doc["rankings"][0]["runs"][0]
    overall = [s for s in apm["scores"] if s["column"] == "Overall"]
    assert [(s["table"], s["value"], s["shown"], s["field"], s["source"]) for s in overall] == [
        ("Utility, latency and storage (paper Table 3)", 12.5, "12.50", OVERALL, "runs/one"),
        ("Task scores (paper Table 4)", 12.5, "12.50", OVERALL, "runs/one"),
    ]
    assert apm["rank"] == 1 and apm["utility"] == 12.5 and apm["ttft_mean_s"] == 0.5
    assert {s["id"]: s["verification"] for s in doc["sources"]} == {
        "src-1": NOT_VERIFIED,
        "src-2": NOT_VERIFIED,
    }


def test_a_report_its_suite_cannot_read_is_refused_by_name() -> None:
    broken = entry("apmbench", "s", source="runs/broken")
    del broken.report["families"]
    with pytest.raises(RunDirError, match=r"runs/broken: its report.json is not a complete"):
        build_board([entry("apmbench", "fine"), broken])
    unknown = entry("apmbench", "s", source="runs/plugin")
    unknown.manifest["benchmark"] = "egoprob"
    with pytest.raises(RunDirError, match=r"runs/plugin: .*did you mean 'egoprobe'"):
        build_board([unknown])


def _run_dir(root: Path, e: Entry) -> Path:
    root.mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps(e.manifest))
    (root / "report.json").write_text(json.dumps(e.report))
    return root


def test_a_run_directory_is_an_entry_not_verified(tmp_path: Path) -> None:
    e = entry("egoprobe", "s")
    [got] = entries_of(_run_dir(tmp_path / "run", e))
    assert got == Entry(str(tmp_path / "run"), None, None, e.report, e.manifest)


def test_bad_inputs_exit_2_naming_each_path_and_what_to_do(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    a_file = tmp_path / "notes.txt"
    a_file.write_text("hello")
    empty = tmp_path / "empty"
    empty.mkdir()
    blind = tmp_path / "blind"
    blind.mkdir()
    (blind / "manifest.json").write_text("{}")
    (blind / "predictions.json").write_text("{}")
    unfinished = tmp_path / "unfinished"
    unfinished.mkdir()
    (unfinished / "manifest.json").write_text("{}")
    garbled = _run_dir(tmp_path / "garbled", entry("egoprobe", "s"))
    (garbled / "report.json").write_text("{not json")
    inputs = [missing, a_file, empty, blind, unfinished, garbled]
    done = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "leaderboard",
         *map(str, inputs), "--out", str(tmp_path / "site")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    said = " ".join(done.stderr.split())
    for path, advice in [
        (missing, "does not exist: give a run directory"),
        (a_file, "is not a readable bundle (not a tar archive"),
        (empty, "is not an apmbench run directory (no manifest.json)"),
        (blind, "is a blind run (predictions.json, no report.json): score it where the labels"),
        (unfinished, "has no report.json: finish the run"),
        (garbled / "report.json", "is not valid JSON"),
    ]:
        assert f"{path} {advice}" in said, (path, said)
    assert not (tmp_path / "site").exists(), "nothing is written when an input is bad"
    with pytest.raises(RunDirError, match="6 inputs cannot be shown"):
        load_entries(inputs)
