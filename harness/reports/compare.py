"""Several runs side by side: one table of systems and the utility-latency-storage plot.

Runs are comparable only when they were made on the same dataset (hash) and
scored the same way (the scoring signature: judge model and reply settings,
retry bound, judge wording, scoring schema). Otherwise `compare` refuses and
names every difference, unless told to go ahead.

The plot's y axis is Overall when every run has one. When any run has no
Overall (no judge, so no Adaptive Response family), no Overall is invented:
every point uses the mean of the families that all runs scored, and the axis
label, the title and compare.md say so. Points without a time to first
token are left out, with a note.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from apmbench.harness.errors import RunDirError
from apmbench.harness.reports.tables import (
    TABLE3_HEADER,
    TABLE4_HEADER,
    num,
    size,
    table,
    table3_row,
    table4_row,
)
from apmbench.harness.reports.tradeoff_plot import Point, plot_tradeoff
from apmbench.harness.run import records
from apmbench.harness.suites.apmbench import tasks


@dataclass(frozen=True)
class Run:
    root: Path
    manifest: dict[str, Any]
    report: dict[str, Any]
    label: str

    @property
    def signature(self) -> Any:
        return self.report.get("scoring", {}).get("signature")


def load_runs(roots: Sequence[Path]) -> list[Run]:
    runs: list[Run] = []
    for root in roots:
        manifest_path, report_path = root / "manifest.json", root / "report.json"
        if not manifest_path.is_file():
            raise RunDirError(f"{root} is not an apmbench run directory (no manifest.json)")
        if not report_path.is_file():
            raise RunDirError(
                f"{root} has no report.json: finish the run (evaluate --resume) or score it"
            )
        manifest = json.loads(manifest_path.read_text())
        runs.append(Run(root, manifest, json.loads(report_path.read_text()), ""))
    names = [r.manifest["system"]["name"] for r in runs]
    # Two runs of one system (e.g. two persistence modes) need their directory to tell apart.
    return [
        Run(
            r.root,
            r.manifest,
            r.report,
            name if names.count(name) == 1 else f"{name} ({r.root.name})",
        )
        for r, name in zip(runs, names, strict=True)
    ]


def mismatches(runs: Sequence[Run]) -> list[str]:
    """Every reason the runs are not comparable; empty when they are."""
    problems: list[str] = []
    first = runs[0]
    for run in runs[1:]:
        if run.manifest.get("dataset_hash") != first.manifest.get("dataset_hash"):
            problems.append(
                f"{run.root} was made on dataset {str(run.manifest.get('dataset_hash'))[:12]}..., "
                f"{first.root} on {str(first.manifest.get('dataset_hash'))[:12]}..."
            )
        if run.signature != first.signature:
            problems.append(
                f"{run.root} was scored with {json.dumps(run.signature, sort_keys=True)}, "
                f"{first.root} with {json.dumps(first.signature, sort_keys=True)} "
                "(re-score both with the same judge: apmbench-grpc score RUN_DIR --judge ...)"
            )
    for run in runs:
        if run.signature is None:
            problems.append(
                f"{run.root} has no scoring record (an older harness made it): "
                "re-score it with apmbench-grpc score"
            )
    return problems


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
        r.label: fmean(r.report["families"][f]["score"] for f in common) for r in runs
    }
    return label, values, [note + f"; every point's y is the mean of {short} instead"]


def comparison(runs: Sequence[Run]) -> dict[str, Any]:
    y_label, y_values, notes = utility_axis(runs)
    rows = []
    for r in runs:
        rep = r.report
        rows.append(
            {
                "label": r.label,
                "run_dir": str(r.root),
                "system": r.manifest["system"]["name"],
                "persistence": r.manifest["settings"].get("persistence"),
                "families": {f: rep["families"][f]["score"] for f in tasks.FAMILIES},
                "overall": rep["overall"]["score"],
                "tasks": {t: v["score"] for t, v in rep["tasks"].items()},
                "evidence_availability": rep["evidence_availability"],
                "decision_accuracy_ba": rep["decision_accuracy"]["overall"]["BA"],
                "response_quality_average": rep.get("response_quality", {})
                .get("average", {})
                .get("score"),
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
        "dataset_hash": runs[0].manifest.get("dataset_hash"),
        "scoring_signature": runs[0].signature,
        "plot_y_label": y_label,
        "notes": notes,
        "runs": rows,
    }


def render_markdown(runs: Sequence[Run], data: Mapping[str, Any], plot: str | None) -> str:
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


def write_comparison(
    runs: Sequence[Run], out: Path, mismatched: Sequence[str] = ()
) -> tuple[dict[str, Any], Path]:
    """compare.json, compare.md and tradeoff.png in `out`; `mismatched`: differences accepted."""
    out.mkdir(parents=True, exist_ok=True)
    data = comparison(runs)
    data["notes"] += [f"compared despite: {m}" for m in mismatched]
    points: list[Point] = []
    for row in data["runs"]:
        if row["plot_y"] is None:
            continue
        if row["ttft_mean_s"] is None:
            data["notes"].append(f"{row['label']} is not plotted: no query produced output")
            continue
        points.append(
            Point(row["label"], row["ttft_mean_s"], row["plot_y"], row["storage_per_hour_bytes"])
        )
    plot_path = out / "tradeoff.png"
    plot_tradeoff(points, data["plot_y_label"] or "no common utility score", plot_path)
    records.atomic_write(out / "compare.json", records.dump(data))
    records.atomic_write(out / "compare.md", render_markdown(runs, data, plot_path.name))
    return data, plot_path
