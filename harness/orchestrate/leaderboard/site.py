"""The leaderboard as files: `index.html` (one self-contained page) and `leaderboard.json`.

The page is the viewer's kind (orchestrate/html): styles, the sorting script
and the trade-off plots (SVG) inline, no server and no network, rendered by
Jinja with autoescaping on, so a system's name is shown as text. The JSON
holds every number the page shows, per ranking and run, each with the field
it was read from and its source; `<`, `>`, `&` and `'` are written as
\\u escapes (as Jinja's `tojson` does), so the file stays data even when a
page inlines it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

from apmbench.harness import __version__
from apmbench.harness.json_types import JsonObject
from apmbench.harness.orchestrate.html import plots
from apmbench.harness.orchestrate.html.view import environment
from apmbench.harness.orchestrate.leaderboard.entries import Entry
from apmbench.harness.orchestrate.leaderboard.model import Board, BoardRun, Group, build_board
from apmbench.harness.reports.format import NOT_COMPUTED, num
from apmbench.harness.reports.tradeoff_plot import ANSWER_AXIS
from apmbench.harness.run import records

PAGE = "index.html"
DATA = "leaderboard.json"
FORMAT = "apmbench-leaderboard"
VERSION = 1
SOURCE_FACTS = (
    "system",
    "system version",
    "runtime",
    "image digest",
    "persistence",
    "dataset",
    "dataset hash",
    "harness",
    "finished",
)
"""The manifest facts the page's source table shows (leaderboard.json has them all)."""


def _html_safe_json(value: object) -> str:
    text = json.dumps(value, indent=2, sort_keys=True)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        text = text.replace(char, escaped)
    return text + "\n"


def _run_json(run: BoardRun) -> JsonObject:
    source = run.source
    return {
        "id": run.anchor,
        "label": run.label,
        "system": run.system,
        "system_version": run.system_version,
        "rank": run.rank,
        "utility": run.utility,
        "ttft_mean_s": run.ttft_mean_s,
        "answer_mean_s": run.answer_mean_s,
        "storage_per_hour_bytes": run.storage_per_hour_bytes,
        "source": source.anchor,
        "source_name": source.name,
        "verification": source.verification,
        "confined": run.confined,
        "marks": list(run.marks),
        "notes": list(run.notes),
        "scores": [
            {
                "table": row.table,
                "column": column,
                "shown": cell.shown,
                "value": cell.value,
                "field": cell.field,
                "source": source.name,
                "marks": list(run.marks),
            }
            for row in run.rows
            for column, cell in zip(row.header, row.cells, strict=True)
        ],
    }


def _group_json(group: Group) -> dict[str, object]:
    return {
        "id": group.anchor,
        "benchmark": group.benchmark,
        "suite": group.suite_title,
        "dataset": {"name": group.dataset_name, "hash": group.dataset_hash},
        "judge": group.judge,
        "scoring_signature": group.scoring_signature,
        "ranked_by": group.ranked_by or None,
        "plotted": [p.label for p in group.points],
        "notes": list(group.notes),
        "runs": [_run_json(r) for r in group.runs],
    }


def board_json(board: Board, generated: str) -> dict[str, object]:
    """leaderboard.json: every ranking, every run's numbers with their fields and sources."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "harness_version": __version__,
        "generated": generated,
        "rankings": [_group_json(g) for g in board.groups],
        "sources": [
            {
                "id": s.anchor,
                "path": s.path,
                "bundle_id": s.bundle_id,
                "verified": s.verified,
                "verification": s.verification,
                "why": s.why,
                "manifest": dict(s.facts),
            }
            for s in board.sources
        ],
    }


def render(board: Board, generated: str) -> str:
    from markupsafe import Markup

    plotted = {
        # matplotlib's own SVG output, inlined as markup; its labels are drawn as paths and
        # its comments escaped by matplotlib, so a name in it cannot become markup.
        g.anchor: Markup(
            plots.tradeoff_svg(g.points, g.ranked_by or "no common utility score", ANSWER_AXIS)
        )
        for g in board.groups
    }
    template = environment().get_template("leaderboard.html.j2")
    return str(
        template.render(
            board=board,
            plots=plotted,
            generated=generated,
            harness_version=__version__,
            num=num,
            not_computed=NOT_COMPUTED,
            data_name=DATA,
            source_facts=SOURCE_FACTS,
            digests=("dataset hash", "image digest"),
        )
    )


def build_leaderboard(entries: Sequence[Entry], out_dir: Path) -> tuple[Path, Path]:
    """Write `out_dir/index.html` and `out_dir/leaderboard.json` (atomically each); returns
    both paths. RunDirError names every entry that cannot be shown."""
    board = build_board(entries)
    generated = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    out_dir.mkdir(parents=True, exist_ok=True)
    page, data = out_dir / PAGE, out_dir / DATA
    records.atomic_write(data, _html_safe_json(board_json(board, generated)))
    records.atomic_write(page, render(board, generated))
    return page, data
