"""ProactEgoMem's report.md, summary tables and compare.md: the paper's Table 4 columns
(Start@0.2, |Δs| and σ, P/R/F1, mIoU) per level, and QA accuracy by memory condition."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from apmbench.harness.reports.format import num, size, table
from apmbench.harness.suites.base import ComparedRun
from apmbench.harness.suites.proactegomem import prompts
from apmbench.harness.suites.proactegomem.metrics import IOU_TAUS, START_TAUS
from apmbench.harness.suites.proactegomem.tools import INTERVENTION, LEVELS

LEVEL_HEADER = ("Level", "Start@0.2", "Abs Δs (s)", "σ (s)", "Prec", "Recall", "F1", "mIoU")


def _p(value: float | None) -> str:
    return num(value, 1)


def level_row(name: str, cell: Mapping[str, Any] | None) -> list[str]:
    if cell is None:
        return [name, *("n/a" for _ in LEVEL_HEADER[1:])]
    return [
        name,
        _p(cell["start_at"]["0.2"]),
        num(cell["abs_error_s"], 2),
        num(cell["abs_error_sd_s"], 2),
        _p(cell["precision"]),
        _p(cell["recall"]),
        _p(cell["f1"]),
        _p(cell["miou"]) if "miou" in cell else "-",
    ]


PAPER_ORDER = ("IC", "ST", "LT")
"""The paper's order of its tasks in its tables."""


def _level_rows(levels: Mapping[str, Any]) -> list[list[str]]:
    """Each level's totals, then one row per task it played (the paper reports each task)."""
    rows = []
    for lv in LEVELS:
        rows.append(level_row(lv, levels.get(lv)))
        by_task = (levels.get(lv) or {}).get("by_task", {})
        rows += [level_row(f"{lv} · {t}", by_task[t]) for t in PAPER_ORDER if t in by_task]
    return rows


def _matching(params: Mapping[str, Any]) -> str:
    """The matcher's parameters as report.json names them ("min_sim 0.5, alpha 0.5, ..."),
    not a Python dict."""
    return ", ".join(
        f"{k} {v:g}" if isinstance(v, int | float) else f"{k} {v}" for k, v in params.items()
    )


def render_markdown(report: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    levels = report["levels"]
    lines = [
        f"# ProactEgoMem report: {manifest.get('system', {}).get('name', '?')}",
        "",
        "Similarity in the matcher: "
        f"{report['similarity']}. Matching: {_matching(report['matching'])}.",
        "",
        "## Proactive levels (Table 4 columns; errors in seconds, the rest %)",
        "",
        *table(list(LEVEL_HEADER), _level_rows(levels)),
        "",
    ]
    for lv in LEVELS:
        cell = levels.get(lv)
        if cell is None:
            continue
        starts = ", ".join(f"Start@{t:g} {_p(cell['start_at'][f'{t:g}'])}" for t in START_TAUS)
        lines += [
            f"- {lv}: {cell['matched']} matched of {cell['ground_truth']} opportunities and "
            f"{cell['predictions']} predictions; {starts}; {cell['steps']} steps, "
            f"{cell['unparseable']} unparseable (silence), {cell['invalid_calls']} invalid "
            "tool calls.",
        ]
        if lv == INTERVENTION:
            ious = ", ".join(f"IoU@{t:g} {_p(cell['iou_at'][f'{t:g}'])}" for t in IOU_TAUS)
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
                    str(qa[c]["n"]),
                    _p(qa[c]["accuracy"]),
                    *(_p(qa[c].get("by_task", {}).get(t, {}).get("accuracy")) for t in present),
                ]
                for c in prompts.CONDITIONS
            ],
        ),
        "",
        "## Cost",
        "",
        f"Time to first token: mean {num(report['latency']['time_to_first_token_s']['mean'], 3)}"
        f" s; storage/hr {size(report['storage']['storage_per_hour_bytes'])}.",
        "",
    ]
    return "\n".join(lines)


def _cells(r: Mapping[str, Any]) -> list[str]:
    iv = r["levels"].get(INTERVENTION)
    nt = r["levels"].get("notification")
    qa = r["qa"]
    return [
        *(level_row("", iv)[1:]),
        _p(nt["start_at"]["0.2"]) if nt else "n/a",
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


def summary_tables(reports: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[Table]:
    main = Table(title="ProactEgoMem (%; errors in s)")
    for column in SUMMARY_COLUMNS:
        main.add_column(column, justify="left" if column == "System" else "right")
    for name, r in zip(names, reports, strict=True):
        main.add_row(name, *_cells(r))
    return [main]


def comparison(runs: Sequence[ComparedRun]) -> dict[str, Any]:
    rows = []
    for r in runs:
        iv = r.report["levels"].get(INTERVENTION)
        rows.append(
            {
                "label": r.label,
                "run_dir": str(r.root),
                "system": r.manifest["system"]["name"],
                "plot_y": iv["start_at"]["0.2"] if iv else None,
                "cells": _cells(r.report),
            }
        )
    return {
        "benchmark": "proactegomem",
        "plot_y_label": "Intervention Start@0.2 (%)",
        "notes": sorted({str(r.report["similarity"]) for r in runs}),
        "runs": rows,
    }


def render_comparison(
    runs: Sequence[ComparedRun], data: Mapping[str, Any], plot: str | None
) -> str:
    rows = [[r["label"], *r["cells"]] for r in data["runs"]]
    lines = ["# ProactEgoMem comparison", "", *table(list(SUMMARY_COLUMNS), rows), ""]
    if plot:
        lines += [f"![accuracy, latency and storage]({plot})", ""]
    lines += [f"- similarity: {n}" for n in data["notes"]]
    return "\n".join(lines) + "\n"
