"""`apmbench-grpc view RUN_DIR...`: one self-contained HTML file of one or more runs.

Everything is inlined (styles, the filter script, SVG charts, JPEG
thumbnails as data URIs), so the file opens from `file://` with no server and
no network. Jinja2 renders it with autoescaping on: a system's raw output is
shown as text, never interpreted as HTML. The tables and bar charts come from
the runs' suite (its `ReportFormat.view_tables` and `view_bars`), so this module
names no task.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from apmbench.harness import __version__
from apmbench.harness.errors import DatasetError
from apmbench.harness.orchestrate.compare import (
    Run,
    labelled,
    load_runs,
    mismatches,
    suite_of_runs,
)
from apmbench.harness.orchestrate.html import plots
from apmbench.harness.orchestrate.html.queries import (
    QueryRow,
    Thumbnails,
    plan_asks,
    query_rows,
    read_jsonl,
)
from apmbench.harness.orchestrate.scoring import dataset_for_run
from apmbench.harness.reports.format import flattened, size, value_text
from apmbench.harness.reports.head import head_lines, runs_head
from apmbench.harness.reports.system_text import MD_CHARS, html_text
from apmbench.harness.reports.tradeoff_plot import Point
from apmbench.harness.run import records
from apmbench.harness.scoring.judge.reference import reference_note
from apmbench.harness.suites.base import ComparedRun, OpaqueSuite, SuiteDataset, plotted

VIEW_NAME = "report.html"
COMPARISON_NAME = "compare.html"
MAX_THUMBNAIL_QUERIES = 5000


@dataclass(frozen=True)
class ViewOptions:
    thumbnails: bool = True
    """Decode the dataset's frames for the drill-down (the slow part of a large run)."""
    max_thumbnail_queries: int = MAX_THUMBNAIL_QUERIES
    """Above this many queries in all, no thumbnails: decoding them would dwarf the run."""
    dataset: Path | None = None
    """The runs' dataset when it is no longer where the manifests say."""


def storage_per_trajectory(sessions: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Eq. 2 per trajectory from the session records (the report holds only the mean)."""
    by_traj: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for s in sessions:
        by_traj[str(s["trajectory_id"])].append(s)
    out: dict[str, float] = {}
    for tid, rows in sorted(by_traj.items()):
        prior = sorted(rows, key=lambda r: r["index"])[:-1]
        if not prior:
            continue
        peak = max(r["state_bytes"] for r in prior)
        at = max(i for i, r in enumerate(prior) if r["state_bytes"] == peak)
        hours = sum(r["duration_s"] for r in prior[: at + 1]) / 3600.0
        if hours > 0:
            out[tid] = peak / hours
    return out


def _audit(report: Mapping[str, Any]) -> list[str]:
    audit = report.get("audit")
    if not audit:
        return []
    lines = [f"{audit.get('flags', 0)} flag(s)"]
    for key, value in audit.items():
        if key not in ("flags", "clean"):
            lines.append(f"{key}: {value_text(value)}")
    return lines


def _manifest_facts(run: Run) -> dict[str, Any]:
    m = run.record
    return {
        "system": None if m.system_name == "?" else html_text(m.shown_name, MD_CHARS),
        "system version": None
        if m.system_version is None
        else html_text(m.system_version, MD_CHARS),
        "system spec": m.system_spec,
        "runtime": m.runtime_kind,
        "image digest": m.image_id,
        "dataset": m.dataset_name,
        "dataset hash": m.dataset_hash,
        "judge": None if m.judge is None else value_text(m.judge),
        "harness": m.harness_version,
        "protocol": m.protocol_version,
        "started": m.started_at,
        "finished": m.finished_at,
    }


def _settings(run: Run) -> list[tuple[str, str]]:
    """The manifest's settings as table rows (dotted key, value), shown as text."""
    return [
        (html_text(k, MD_CHARS), html_text(v, MD_CHARS)) for k, v in flattened(run.record.settings)
    ]


def _dataset(
    suite: OpaqueSuite, run: Run, override: Path | None
) -> tuple[SuiteDataset | None, str]:
    try:
        return dataset_for_run(suite, run.manifest, override), ""
    except DatasetError as e:
        return None, f"prompts and frames are not shown for {run.label}: {e}"


def build_context(runs: Sequence[Run], options: ViewOptions) -> dict[str, Any]:
    runs = labelled(runs, lambda name: html_text(name, MD_CHARS))
    suite = suite_of_runs(runs)
    compared = [ComparedRun(r.root, r.label, r.manifest, r.report) for r in runs]
    notes = [f"compared despite: {m}" for m in mismatches(runs)] if len(runs) > 1 else []
    # What every report says at its top (the dataset, persistence, judge, audit flags,
    # unverified storage, a known seed, confinement) comes first here too.
    notes += runs_head([(r.label, head_lines(r.report, r.manifest)) for r in runs])
    queries: list[QueryRow] = []
    thumbs: dict[str, Thumbnails] = {}
    ttfts: dict[str, list[float]] = {}
    storage: dict[str, dict[str, float]] = {}
    loaded = {run.root: read_jsonl(run.root / "instances.jsonl") for run in runs}
    with_frames = options.thumbnails
    total = sum(len(v) for v in loaded.values())
    if with_frames and total > options.max_thumbnail_queries:
        with_frames = False
        notes.append(
            f"frame thumbnails are left out: {total} queries are more than "
            f"{options.max_thumbnail_queries} (apmbench-grpc view --max-thumbnail-queries N)"
        )
    for run in runs:
        instances = loaded[run.root]
        sessions = read_jsonl(run.root / "sessions.jsonl")
        ttfts[run.label] = [r["ttft_s"] for r in instances if r.get("ttft_s") is not None]
        storage[run.label] = storage_per_trajectory(sessions)
        dataset, why = _dataset(suite, run, options.dataset)
        if why:
            notes.append(why)
        asks = None
        thumbnails = None
        if dataset is not None:
            caps = run.record.capabilities
            asks = plan_asks(suite, dataset, bool(caps.get("supports_import")))
            if with_frames:
                fps = run.record.fps
                key = f"{dataset.content_hash}/{fps}"
                thumbnails = thumbs.setdefault(key, Thumbnails(dataset, fps))
        queries += query_rows(run.label, instances, suite, asks, thumbnails)
    images: dict[str, str] = {}
    for t in thumbs.values():
        t.decode()
        images.update(t.images)
    # The plot's utility axis is the one `compare` uses (with its fallback and notes).
    form = suite.report_format()
    data = plotted(form.comparison(compared))
    notes += [n for n in data["notes"] if n not in notes]
    points = []
    for run, row in zip(runs, data["runs"], strict=True):
        h = form.headline(run.report)
        if row["plot_y"] is None:
            continue
        if h.ttft_mean_s is None:
            notes.append(f"{run.label} is not plotted: no query produced output")
            continue
        points.append(Point(run.label, h.ttft_mean_s, row["plot_y"], h.storage_per_hour_bytes))
    label = data["plot_y_label"] or "no common utility score"
    bars: dict[str, dict[str, dict[str, float | None]]] = defaultdict(dict)
    view_bars = form.view_bars or (lambda _report: [])
    for run in runs:
        for b in view_bars(run.report):
            bars[b.title][run.label] = dict(b.values)
    references = sorted({n for r in runs if (n := reference_note(r.report)) is not None})
    return {
        "title": (
            f"{suite.title}: {runs[0].label}"
            if len(runs) == 1
            else f"{suite.title}: {len(runs)} runs compared"
        ),
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "harness_version": __version__,
        "references": references,
        "notes": notes,
        "tables": [asdict(t) for t in form.view_tables(compared)] if form.view_tables else [],
        # One point on a plot of its own has no trade-off to show (its axes would span only
        # it): the plot needs two runs or more.
        "tradeoff_svg": plots.tradeoff_svg(points, label) if len(points) > 1 else "",
        "tradeoff_note": ""
        if len(points) > 1
        else "The trade-off plot needs two runs or more: apmbench-grpc view RUN_DIR "
        "OTHER_RUN_DIR... (or compare) places this run among others, such as the reference "
        "systems run on the same dataset.",
        "bars": [plots.bars_svg(title, series) for title, series in bars.items()],
        "latency_svg": plots.latency_svg(ttfts),
        "storage_svg": plots.storage_svg(storage),
        "storage_rows": [
            (run, tid, size(v) + "/hr")
            for run, values in storage.items()
            for tid, v in values.items()
        ],
        "audits": [(r.label, _audit(r.report)) for r in runs if _audit(r.report)],
        "manifests": [(r.label, _manifest_facts(r), _settings(r)) for r in runs],
        "queries": queries,
        "images": images,
        "filters": {
            "group": sorted({q.group for q in queries}),
            "run": [r.label for r in runs],
            "outcome": sorted({q.outcome for q in queries}),
        },
    }


def environment() -> Any:
    """The Jinja environment of the HTML pages (the viewer's and the leaderboard's): autoescaping
    on, undefined names an error."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    env = Environment(
        loader=PackageLoader("apmbench.harness.orchestrate.html", "templates"),
        autoescape=select_autoescape(["html", "j2"], default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # A run directory may come from elsewhere: its values lose control bytes and are cut.
    env.filters["plain"] = lambda v: html_text(value_text(v), MD_CHARS)
    env.filters["tojson_compact"] = lambda v: json.dumps(v, sort_keys=True, indent=1)
    return env


def render(runs: Sequence[Run], options: ViewOptions = ViewOptions()) -> str:
    from markupsafe import Markup

    context = build_context(runs, options)
    # matplotlib's own SVG output, inlined as markup (it is not user text).
    for key in ("tradeoff_svg", "latency_svg", "storage_svg"):
        context[key] = Markup(context[key]) if context[key] else ""
    context["bars"] = [Markup(b) for b in context["bars"]]
    return str(environment().get_template("view.html.j2").render(**context))


def write_view(run_dirs: Sequence[Path], out: Path, options: ViewOptions = ViewOptions()) -> Path:
    """Render RUN_DIR... into `out` (atomically); returns `out`."""
    return write_html(load_runs(run_dirs), out, options)


def write_html(runs: Sequence[Run], out: Path, options: ViewOptions = ViewOptions()) -> Path:
    """Render loaded runs into `out` (atomically): `view`'s page, and `compare`'s."""
    html = render(runs, options)
    out.parent.mkdir(parents=True, exist_ok=True)
    records.atomic_write(out, html)
    return out
