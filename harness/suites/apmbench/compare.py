"""APM-Bench side by side: the comparison tables of `compare` and the plot's utility axis.

The plot's y axis is Overall when every run has one. When any run has no
Overall (no judge, so no Adaptive Response family), no Overall is invented:
every point uses the mean of the families that all runs scored, and the axis
label and compare.md say so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import cast

from apmbench.harness.reports.confinement import persistence
from apmbench.harness.reports.format import num, size, table
from apmbench.harness.scoring.judge.reference import LABEL, reference_note
from apmbench.harness.suites.apmbench import tasks
from apmbench.harness.suites.apmbench.metrics import EvidenceAvailability, Report
from apmbench.harness.suites.apmbench.report import (
    TABLE3_HEADER,
    TABLE4_HEADER,
    table3_row,
    table4_row,
)
from apmbench.harness.suites.base import ComparedRun, ComparisonHead, RunLine, ScoringSignature

Run = ComparedRun[Report]


class ComparedRow(RunLine):
    """One run's line of compare.json."""

    persistence: str
    families: dict[str, float | None]
    overall: float | None
    tasks: dict[str, float | None]
    evidence_availability: EvidenceAvailability
    decision_accuracy_ba: float | None
    response_quality_average: float | None
    format_failures: int
    ttft_mean_s: float | None
    ttft_p90_s: float | None
    rtf_mean: float | None
    storage_per_hour_bytes: float | None
    peak_bytes_mean: float | None
    peak_bytes_max: int | None


class Comparison(ComparisonHead):
    """compare.json of APM-Bench runs (the pipeline adds `headers`)."""

    dataset_hash: str | None
    scoring_signature: ScoringSignature | None
    runs: list[ComparedRow]


def utility_axis(runs: Sequence[Run]) -> tuple[str, dict[str, float | None], list[str]]:
    """The plot's y values: Overall, or failing that the mean of the commonly scored families."""
    if all(r.report["overall"]["score"] is not None for r in runs):
        overall: dict[str, float | None] = {r.label: r.report["overall"]["score"] for r in runs}
        return "Overall", overall, []
    common = [
        f for f in tasks.FAMILIES if all(r.report["families"][f]["score"] is not None for r in runs)
    ]
    missing = [r for r in runs if r.report["overall"]["score"] is None]
    note = (
        f"Overall is not computed for {', '.join(r.label for r in missing)} "
        f"({missing[0].report['overall'].get('reason', 'no reason recorded')})"
    )
    if not common:
        note += "; no family is scored in every run, so no point can be placed"
        return "", {r.label: None for r in runs}, [note]
    short = ", ".join(tasks.FAMILY_SHORT[f] for f in common)
    label = f"Mean of {short} (not Overall)"
    values: dict[str, float | None] = {
        r.label: fmean(r.report["families"][f]["score"] or 0.0 for f in common) for r in runs
    }
    return label, values, [note + f"; every point's y is the mean of {short} instead"]


def comparison(runs: Sequence[Run]) -> Comparison:
    y_label, y_values, notes = utility_axis(runs)
    rows: list[ComparedRow] = []
    for r in runs:
        rep = r.report
        rows.append(
            {
                "label": r.label,
                "run_dir": str(r.root),
                "system": r.record.shown_name,
                "persistence": persistence(r.manifest),
                "families": {f: rep["families"][f]["score"] for f in tasks.FAMILIES},
                "overall": rep["overall"]["score"],
                "tasks": {t: v["score"] for t, v in rep["tasks"].items()},
                "evidence_availability": rep["evidence_availability"],
                "decision_accuracy_ba": rep["decision_accuracy"]["overall"]["BA"],
                "response_quality_average": _quality(rep),
                "format_failures": rep["format_failures"]["total"],
                "ttft_mean_s": rep["latency"]["time_to_first_token_s"]["mean"],
                "ttft_p90_s": rep["latency"]["time_to_first_token_s"]["p90"],
                "rtf_mean": rep["latency"]["real_time_factor"]["mean"],
                "storage_per_hour_bytes": rep["storage"]["storage_per_hour_bytes"],
                "peak_bytes_mean": rep["storage"]["peak_bytes_mean"],
                "peak_bytes_max": rep["storage"]["peak_bytes_max"],
                "plot_y": y_values[r.label],
            }
        )
    return {
        "dataset_hash": runs[0].record.dataset_hash,
        "scoring_signature": runs[0].report.get("scoring", {}).get("signature"),
        "plot_y_label": y_label,
        "notes": notes + _reference_notes(runs),
        "runs": rows,
    }


def _quality(report: Report) -> float | None:
    """The average response quality (reports older than it have none)."""
    quality = report.get("response_quality")
    return None if quality is None else quality["average"]["score"]


def render_comparison(runs: Sequence[Run], data_: Mapping[str, object], plot: str | None) -> str:
    data = cast(Comparison, data_)  # what `comparison` returned, with the pipeline's headers
    lines = [
        "# APM-Bench comparison",
        "",
        f"{len(runs)} runs on dataset `{str(data['dataset_hash'])[:12]}`. "
        "`n/c` = not computed (see each run's report).",
        "",
        "## Utility, latency and storage (paper Table 3)",
        "",
        *table(TABLE3_HEADER, [[r.label, *table3_row(r.report, r.manifest)[1:]] for r in runs]),
        "",
        "## Task scores (paper Table 4)",
        "",
        *table(TABLE4_HEADER, [[r.label, *table4_row(r.report, r.manifest)[1:]] for r in runs]),
        "",
        "## Decisions, response quality, failures, latency and storage",
        "",
        *table(
            (
                "Method",
                "decision BA",
                "resp. quality",
                "format failures",
                "TTFT p90 (s)",
                "RTF",
                "peak mean",
                "peak max",
            ),
            [
                [
                    row["label"],
                    num(row["decision_accuracy_ba"]),
                    num(row["response_quality_average"]),
                    str(row["format_failures"]),
                    num(row["ttft_p90_s"], 3),
                    num(row["rtf_mean"], 4),
                    size(row["peak_bytes_mean"]),
                    size(row["peak_bytes_max"]),
                ]
                for row in data["runs"]
            ],
        ),
        "",
    ]
    if plot:
        lines += [
            f"Utility-latency-storage plot (paper Figure 2): `{plot}`; "
            f"y = {data['plot_y_label'] or 'none'}, x = mean time to first token, "
            "bubble area = Storage/hr.",
            "",
        ]
    lines += [f"Note: {n}" for n in data["notes"]]
    return "\n".join(lines) + "\n"


def _reference_notes(runs: Sequence[Run]) -> list[str]:
    judged = [r.label for r in runs if reference_note(r.report) is not None]
    if not judged:
        return []
    return [f"adaptive scores and Overall of {', '.join(judged)}: {LABEL}"]
