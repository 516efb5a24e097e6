"""ProactEgoMem's report.md, summary tables and compare.md: the paper's Table 4 columns
(Start@0.2, |Δs| and σ, P/R/F1, mIoU) per level, and QA accuracy by memory condition."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from rich.table import Table

from apmbench.harness.json_types import JSON
from apmbench.harness.reports.format import num, size, table
from apmbench.harness.reports.system_text import md_cell
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.suites.base import ComparedRun, ComparisonHead, RunLine
from apmbench.harness.suites.proactegomem import prompts
from apmbench.harness.suites.proactegomem.metrics import (
    IOU_TAUS,
    START_TAUS,
    Level,
    Metrics,
    QACell,
    Report,
)
from apmbench.harness.suites.proactegomem.tools import INTERVENTION, LEVELS

Run = ComparedRun[Report]


class ComparedRow(RunLine):
    """One run's line of compare.json."""

    cells: list[str]
    """The summary table's cells (`SUMMARY_COLUMNS` after the system)."""


class Comparison(ComparisonHead):
    """compare.json of ProactEgoMem runs (the pipeline adds `headers`)."""

    benchmark: str
    views: list[str]
    runs: list[ComparedRow]


LEVEL_HEADER = ("Level", "Start@0.2", "Abs Δs (s)", "σ (s)", "Prec", "Recall", "F1", "mIoU")


def _p(value: float | None) -> str:
    return num(value, 1)


def start_at(cell: Metrics | None, tau: str = "0.2") -> float | None:
    """Start@tau of a level cell; None when not computed (no judge on real data)."""
    taus = None if cell is None else cell.get("start_at")
    return None if taus is None else taus[tau]


def f1(cell: Metrics | None) -> float | None:
    """A level cell's F1; None when not computed. The utility a ranking and the trade-off
    plot use: Start@tau counts only matched predictions, so a method that starts a tracker
    at every step, frames unseen, scores 100 on it; F1 charges it for every false one."""
    return None if cell is None else cell.get("f1")


def level_row(name: str, cell: Metrics | None) -> list[str]:
    if cell is None:
        return [name, *("n/a" for _ in LEVEL_HEADER[1:])]
    return [
        name,
        _p(start_at(cell)),
        num(cell["abs_error_s"], 2),
        num(cell["abs_error_sd_s"], 2),
        _p(cell["precision"]),
        _p(cell["recall"]),
        _p(cell["f1"]),
        _p(cell["miou"]) if "miou" in cell else "-",
    ]


PAPER_ORDER = ("IC", "ST", "LT")
"""The paper's order of its tasks in its tables."""


POOLED = "IC, ST, LT pooled (the project's)"
"""The row the paper does not print: a level's matches pooled over its tasks."""


def _level_rows(levels: Mapping[str, Level]) -> list[list[str]]:
    """Per level, one row per task it played, as the paper's Table 4 reports them, then the
    tasks pooled, labelled as the project's figure."""
    rows = []
    for lv in LEVELS:
        cell = levels.get(lv)
        by_task = {} if cell is None else cell.get("by_task", {})
        rows += [level_row(f"{lv} · {t}", by_task[t]) for t in PAPER_ORDER if t in by_task]
        rows.append(level_row(f"{lv} · {POOLED}", cell))
    return rows


CLOSING_RECALL_FLOOR = 5.0
"""Section 5.6 judges closing messages only "for models with recall above 5%"."""


def _recall_filter(cell: Metrics) -> str:
    """The paper's filter on the closing-message figure, stated beside it: the figure is
    always given (one number per run is more useful than none), and whether the paper,
    which judges only methods with recall above 5 %, would have reported it."""
    recall = cell.get("recall")
    if recall is None:
        return ""
    kept = recall > CLOSING_RECALL_FLOOR
    return (
        f" The paper judges closing messages only for recall above "
        f"{CLOSING_RECALL_FLOOR:g} %: at {_p(recall)} % it would "
        + ("report this figure." if kept else "leave it out.")
    )


def _matching(params: Mapping[str, float | str]) -> str:
    """The matcher's parameters as report.json names them ("min_sim 0.5, alpha 0.5, ..."),
    not a Python dict."""
    return ", ".join(
        f"{k} {v:g}" if isinstance(v, int | float) else f"{k} {v}" for k, v in params.items()
    )


def render_markdown(report: Report, manifest: Mapping[str, JSON]) -> str:
    levels = report["levels"]
    lines = [
        f"# ProactEgoMem report: {md_cell(Manifest.of(manifest).shown_name)}",
        "",
        f"{_track(report)}Similarity in the matcher: "
        f"{report['similarity']}. Matching: {_matching(report['matching'])}.",
        "",
        f"Per-step view: {_view(report)}.",
        "",
        "## Proactive levels per task (Table 4's rows and columns; errors in seconds, the rest %)",
        "",
        *table(list(LEVEL_HEADER), _level_rows(levels)),
        "",
    ]
    for lv in LEVELS:
        cell = levels.get(lv)
        if cell is None:
            continue
        starts = ", ".join(f"Start@{t:g} {_p(start_at(cell, f'{t:g}'))}" for t in START_TAUS)
        matched = "n/c" if cell["matched"] is None else str(cell["matched"])
        lines += [
            f"- {lv}: {matched} matched of {cell['ground_truth']} opportunities and "
            f"{cell['predictions']} predictions; {starts}; {cell['steps']} steps, "
            f"{cell['unparseable']} unparseable (silence), {cell['invalid_calls']} invalid "
            "tool calls.",
        ]
        signed = cell.get("start_error_s")
        if signed and signed["n"]:
            lines.append(
                f"  Signed start error (s; > 0 late, Figures 9 and 13): median "
                f"{num(signed['median'], 2)}, quartiles {num(signed['q1'], 2)} to "
                f"{num(signed['q3'], 2)} over {signed['n']} matches; late starts "
                f"{_p(cell['late_share'])}%."
            )
        if lv == INTERVENTION and "closing_message" in cell:
            closing = cell["closing_message"]
            lines.append(
                "  Closing messages (section 5.6; judged on matched trackers): "
                + (
                    "n/c (needs a judge)"
                    if closing is None
                    else f"{closing['correct']} of {closing['matched']} name the right object "
                    f"and outcome ({_p(closing['share'])}%)"
                )
                + "."
                + _recall_filter(cell)
            )
        if cell["matched"] is None:
            continue
        if lv == INTERVENTION:
            at = cell.get("iou_at") or {}
            ious = ", ".join(f"IoU@{t:g} {_p(at.get(f'{t:g}'))}" for t in IOU_TAUS)
            lines.append(f"  {ious}.")
    qa = report["qa"]
    present = [t for t in PAPER_ORDER if any(t in qa[c].get("by_task", {}) for c in qa)]
    lines += [
        "",
        "## Memory QA accuracy (%)",
        "",
        *table(
            ["Condition", "n", "Accuracy", *present],
            [
                [
                    c,
                    "not run" if "not_run" in qa[c] else str(qa[c]["n"]),
                    _p(qa[c]["accuracy"]),
                    *(_p(_task_accuracy(qa[c], t)) for t in present),
                ]
                for c in prompts.CONDITIONS
            ],
        ),
        "",
        *(f"{c}: not run ({qa[c]['not_run']})." for c in prompts.CONDITIONS if "not_run" in qa[c]),
        *([""] if any("not_run" in qa[c] for c in prompts.CONDITIONS) else []),
        "## Cost",
        "",
        f"Time to first token: mean {num(report['latency']['time_to_first_token_s']['mean'], 3)}"
        f" s; storage/hr {size(report['storage']['storage_per_hour_bytes'])}.",
        "",
    ]
    return "\n".join(lines)


def _task_accuracy(cell: QACell, task: str) -> float | None:
    entry = cell.get("by_task", {}).get(task)
    return None if entry is None else entry["accuracy"]


def _track(report: Report) -> str:
    track = report.get("track")
    return f"Track: {track}. " if track else ""


def _view(report: Report) -> str:
    view = report.get("per_step_view")
    return str(view["text"]) if view else "streamed (recorded before the view was named)"


def summary_cells(r: Report) -> list[str]:
    iv = r["levels"].get(INTERVENTION)
    nt = r["levels"].get("notification")
    qa = r["qa"]
    return [
        *(level_row("", iv)[1:]),
        _p(start_at(nt)) if nt else "n/a",
        _p(nt["f1"]) if nt else "n/a",
        *(_p(qa[c]["accuracy"]) for c in prompts.CONDITIONS),
    ]


SUMMARY_COLUMNS = (
    "System",
    "Int. Start@0.2",
    "Abs Δs",
    "σ",
    "Int. P",
    "Int. R",
    "Int. F1",
    "mIoU",
    "Notif. Start@0.2",
    "Notif. F1",
    "QA none",
    "QA proact",
    "QA oracle",
)


def summary_tables(reports: Sequence[Report], names: Sequence[str]) -> list[Table]:
    main = Table(title="ProactEgoMem (%; errors in s)")
    for column in SUMMARY_COLUMNS:
        main.add_column(column, justify="left" if column == "System" else "right")
    for name, r in zip(names, reports, strict=True):
        main.add_row(name, *summary_cells(r))
    return [main]


def comparison(runs: Sequence[Run]) -> Comparison:
    rows: list[ComparedRow] = []
    for r in runs:
        iv = r.report["levels"].get(INTERVENTION)
        rows.append(
            {
                "label": r.label,
                "run_dir": str(r.root),
                "system": md_cell(r.record.shown_name),
                "plot_y": f1(iv),
                "cells": summary_cells(r.report),
            }
        )
    return {
        "benchmark": "proactegomem",
        "plot_y_label": "Intervention F1, IC, ST, LT pooled (%, the project's)",
        "notes": sorted({str(r.report["similarity"]) for r in runs}),
        "views": sorted({_view(r.report) for r in runs}),
        "runs": rows,
    }


def render_comparison(runs: Sequence[Run], data_: Mapping[str, object], plot: str | None) -> str:
    data = cast(Comparison, data_)  # what `comparison` returned, with the pipeline's headers
    rows = [[r["label"], *r["cells"]] for r in data["runs"]]
    lines = ["# ProactEgoMem comparison", "", *table(list(SUMMARY_COLUMNS), rows), ""]
    if plot:
        lines += [f"![accuracy, latency and storage]({plot})", ""]
    lines += [f"- similarity: {n}" for n in data["notes"]]
    lines += [f"- per-step view: {v}" for v in data.get("views", [])]
    return "\n".join(lines) + "\n"
