"""Each sibling suite's report.md opens with the headline its paper prints: EgoProbe with
Table 2's columns (Base, Echo R1, Echo two-turn, Echo single-turn), ProactEgoMem with Table
4's per-task rows; a pooled figure the papers never print comes after, labelled as the
project's. Every cell is read back against report.json, so a column swapped or a pooled
number under a paper's name fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.egoprobe.synth import synthetic_dataset as egoprobe_dataset
from apmbench.harness.suites.proactegomem.synth import synthetic_dataset as proact_dataset

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _run(tmp_path: Path, benchmark: str, dataset: Path, system: str) -> tuple[str, Any]:
    run = tmp_path / benchmark
    evaluate(
        EvaluateOptions(
            dataset=dataset, out=run, runtime=runtime_spec(system=system), benchmark=benchmark
        )
    )
    return (run / "report.md").read_text(), json.loads((run / "report.json").read_text())


def _first_table(markdown: str) -> list[list[str]]:
    """The rows (header first) of the first table after the report's first section title."""
    body = markdown.split("\n## ", 1)[1]
    first: list[list[str]] = []
    for line in body.splitlines()[1:]:
        if line.startswith("|"):
            first.append([c.strip() for c in line.strip("|").split("|")])
        elif first:
            break
    assert first, markdown
    return [row for row in first if not set("".join(row)) <= set("-")]


def _pct(value: float | None) -> str:
    return "n/c" if value is None else f"{value:.1f}"


def test_egoprobe_opens_with_table_2s_columns(tmp_path: Path) -> None:
    dataset = egoprobe_dataset("tiny", 0, tmp_path / "cache")
    markdown, report = _run(tmp_path, "egoprobe", dataset, "recent-frames")
    header, values = _first_table(markdown)
    assert header == ["Base", "Echo R1", "Echo two-turn", "Echo single-turn"]
    st, d = report["single_turn"], report["dialogues"]
    assert values == [
        f"{_pct(st['base']['accuracy'])} (n={st['base']['n']})",
        f"{_pct(d['r1_accuracy'])} (n={d['n']})",
        f"{_pct(d['two_turn_accuracy'])} (n={d['n']})",
        f"{_pct(st['echo']['accuracy'])} (n={st['echo']['n']})",
    ]
    # The pooled figure is kept, after the table and named as the project's.
    pooled = f"{_pct(st['all']['accuracy'])} (n={st['all']['n']})"
    after = markdown.split("Echo single-turn |", 1)[1].split("\n## ", 1)[0]
    assert f"pooled (the project's figure; the paper prints none): {pooled}." in after


def test_proactegomem_opens_with_table_4s_per_task_rows(tmp_path: Path) -> None:
    dataset = proact_dataset("tiny", 0, tmp_path / "cache")
    markdown, report = _run(tmp_path, "proactegomem", dataset, "proact-rules")
    header, *rows = _first_table(markdown)
    assert header[:2] == ["Level", "Start@0.2"] and "F1" in header
    names = [row[0] for row in rows]
    for level in ("intervention", "notification"):
        cell = report["levels"][level]
        tasks = [t for t in ("IC", "ST", "LT") if t in cell["by_task"]]
        assert tasks, cell
        mine = [n for n in names if n.startswith(f"{level} · ")]
        # Each task as the paper's table has it, in its order, then the pool, labelled.
        assert mine == [f"{level} · {t}" for t in tasks] + [
            f"{level} · IC, ST, LT pooled (the project's)"
        ]
        f1 = header.index("F1")
        by_name = {row[0]: row for row in rows}
        for t in tasks:
            assert by_name[f"{level} · {t}"][f1] == _pct(cell["by_task"][t]["f1"])
        assert by_name[mine[-1]][f1] == _pct(cell["f1"])
    # Section 5.6's filter on the closing-message figure is stated beside it.
    closing = next(x for x in markdown.splitlines() if "Closing messages" in x)
    recall = _pct(report["levels"]["intervention"]["recall"])
    assert f"recall above 5 %: at {recall} % it would report this figure." in closing


def test_the_closing_filter_says_when_the_paper_would_leave_the_figure_out() -> None:
    from apmbench.harness.suites.proactegomem.report import _recall_filter

    assert _recall_filter({"recall": 4.0}).endswith("at 4.0 % it would leave it out.")  # type: ignore[typeddict-item]
    assert _recall_filter({"recall": 5.1}).endswith("would report this figure.")  # type: ignore[typeddict-item]
