"""Several runs side by side: one table of systems and the utility-latency-storage plot.

Runs are comparable only when they were made on the same dataset (hash) and
scored the same way (the scoring signature: judge model and reply settings,
retry bound, judge wording, scoring schema). Otherwise `compare` refuses and
names every difference, unless told to go ahead.

Runs of different benchmarks are never compared. The tables and the plot's
utility axis come from the runs' suite; points without a time to first
token are left out, with a note.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from apmbench.harness.errors import RunDirError
from apmbench.harness.reports.head import head_lines, header, runs_head, with_head
from apmbench.harness.reports.scores import Score
from apmbench.harness.reports.system_text import md_cell, md_document
from apmbench.harness.reports.tradeoff_plot import Point, plot_tradeoff
from apmbench.harness.run import records
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.run.manifest import load as load_manifest
from apmbench.harness.suites import DEFAULT, base, get_suite
from apmbench.harness.suites.base import ComparedRun, OpaqueSuite, plotted


@dataclass(frozen=True)
class Run:
    root: Path
    manifest: dict[str, Any]
    report: dict[str, Any]
    label: str

    @property
    def signature(self) -> Any:
        return self.report.get("scoring", {}).get("signature")

    @property
    def record(self) -> Manifest:
        """The manifest, typed (`manifest` stays the JSON, which a suite's compare gets)."""
        return Manifest.of(self.manifest)

    @property
    def benchmark(self) -> str:
        return self.record.benchmark or DEFAULT


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
        manifest = load_manifest(manifest_path).raw
        runs.append(Run(root, manifest, json.loads(report_path.read_text()), ""))
    # A name goes into compare.md's tables and notes: kept to one escaped cell.
    return labelled(runs, md_cell)


def labelled(runs: Sequence[Run], cell: Callable[[str], str]) -> list[Run]:
    """`runs`, each labelled with the name the reports show (`Manifest.shown_name`) made
    safe by `cell`: Markdown's for compare.md, HTML's for report.html, whose page would
    otherwise show Markdown's backslashes."""
    names = [cell(r.record.shown_name) for r in runs]
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
        if run.benchmark != first.benchmark:
            problems.append(
                f"{run.root} is a {run.benchmark} run, {first.root} a {first.benchmark} run"
            )
        if run.record.dataset_hash != first.record.dataset_hash:
            problems.append(
                f"{run.root} was made on dataset {str(run.record.dataset_hash)[:12]}..., "
                f"{first.root} on {str(first.record.dataset_hash)[:12]}..."
            )
        if run.record.fps != first.record.fps:
            problems.append(
                f"{run.root} was sent {run.record.fps:g} frames per second, "
                f"{first.root} {first.record.fps:g}"
            )
        if run.record.play != first.record.play:
            problems.append(
                f"{run.root} was {run.record.played}, {first.root} {first.record.played}"
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


@dataclass(frozen=True)
class Difference:
    """One number of the suite's headline tables that is not the same in every run."""

    table: str
    column: str
    shown: dict[str, str]
    """Run label -> the number as its table shows it."""


def score_differences(runs: Sequence[Run], suite: OpaqueSuite) -> list[Difference]:
    """Every number of the headline tables (`suites.base.leaderboard_rows`, the tables `compare`
    and the leaderboard show) whose value is not the same in every run, latency aside: two
    runs never take the same time, so a latency cell would make no pair identical."""
    rows = [base.leaderboard_rows(suite, r.report, r.manifest) for r in runs]
    found: list[Difference] = []
    for t, first in enumerate(rows[0]):
        for c, column in enumerate(first.header):
            if "/latency/" in (first.cells[c].field or ""):
                continue
            cells = [r[t].cells[c] if t < len(r) else None for r in rows]
            keys = {None if cell is None else _compared(cell) for cell in cells}
            if len(keys) > 1:
                shown = {
                    run.label: "-" if cell is None else cell.shown
                    for run, cell in zip(runs, cells, strict=True)
                }
                found.append(Difference(first.table, column, shown))
    return found


def _compared(cell: Score) -> object:
    """What two runs must share for a cell to agree: its value (more digits than shown),
    except for a yes/no derived from a number (Persistent: two non-empty memories agree)."""
    if cell.shown in ("yes", "no") or cell.value is None:
        return cell.shown
    return cell.value


def agreement_lines(runs: Sequence[Run], differences: Sequence[Difference]) -> list[str]:
    """What compare.md and the command say of the differences: "identical", or each one."""
    if not differences:
        return [
            f"Scores: identical across the {len(runs)} runs (every number of the headline "
            "tables; latency is never the same twice and is left out)."
        ]
    return [
        f"Scores that differ ({len(differences)}, latency left out):",
        "",
        *(
            f"- {d.table}, {d.column}: "
            + ", ".join(f"{label} {value}" for label, value in d.shown.items())
            for d in differences
        ),
    ]


def suite_of_runs(runs: Sequence[Run]) -> OpaqueSuite:
    return get_suite(runs[0].benchmark)


def write_comparison(
    runs: Sequence[Run], out: Path, mismatched: Sequence[str] = ()
) -> tuple[dict[str, object], Path]:
    """compare.json, compare.md and tradeoff.png in `out`; `mismatched`: differences accepted."""
    out.mkdir(parents=True, exist_ok=True)
    suite = suite_of_runs(runs)
    compared = [ComparedRun(r.root, r.label, r.manifest, r.report) for r in runs]
    form = suite.report_format()
    data: dict[str, object] = dict(form.comparison(compared))
    plot = plotted(data)
    plot["notes"] += [f"compared despite: {m}" for m in mismatched]
    points: list[Point] = []
    for run, row in zip(runs, plot["runs"], strict=True):
        if row["plot_y"] is None:
            continue
        headline = form.headline(run.report)
        if headline.ttft_mean_s is None:
            plot["notes"].append(f"{row['label']} is not plotted: no query produced output")
            continue
        points.append(
            Point(
                row["label"], headline.ttft_mean_s, row["plot_y"], headline.storage_per_hour_bytes
            )
        )
    plot_path = out / "tradeoff.png"
    plot_tradeoff(points, plot["plot_y_label"] or "no common utility score", plot_path)
    if form.write_plots is not None:
        form.write_plots(data, out)
    # Each run's identity and confinement, as at the top of its own report (reports/head.py).
    data["headers"] = {run.label: header(run.report, run.manifest) for run in runs}
    head = [
        f"- {note}"
        for note in runs_head([(r.label, head_lines(r.report, r.manifest)) for r in runs])
    ]
    differences = score_differences(runs, suite)
    data["differences"] = [asdict(d) for d in differences]
    records.atomic_write(out / "compare.json", records.dump(data))
    markdown = form.render_comparison(compared, data, plot_path.name)
    # Labels are escaped cells already (load_runs); the rest are the harness's own words.
    agreement = "\n".join(agreement_lines(runs, differences))
    markdown = f"{markdown.rstrip()}\n\n## Agreement\n\n{agreement}\n"
    records.atomic_write(out / "compare.md", md_document(with_head(markdown, head)))
    return data, plot_path
