"""One system on several suites (`evaluate --benchmark all`, or `--benchmark a,b`).

Each suite's run is an ordinary run directory, OUT/<suite>/, which every other
command takes (`score`, `view`, `compare`, `merge`, `evaluate --resume`). This
module writes the page that puts the system's headline per suite side by side
(OUT/report.md, OUT/compare.html and OUT/suites.json); the runs themselves are
`evaluate`'s, one after another (commands/evaluate_suites.py).

The headlines are the suites' own (`ReportFormat.headline`): each is its suite's
measure on its own scale, so the page sets them beside each other and never
adds or averages them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from apmbench.harness import __version__
from apmbench.harness.errors import RunDirError
from apmbench.harness.orchestrate.compare import Run, load_runs
from apmbench.harness.orchestrate.html.view import COMPARISON_NAME, VIEW_NAME, environment
from apmbench.harness.reports.format import num, size, table
from apmbench.harness.reports.head import head_lines
from apmbench.harness.reports.system_text import MD_CHARS, html_text, md_cell, md_document
from apmbench.harness.run import records
from apmbench.harness.suites import get_suite
from apmbench.harness.suites.base import Headline

REPORT_NAME = "report.md"
DATA_NAME = "suites.json"


@dataclass(frozen=True)
class SuiteRun:
    """One suite's evaluation in a multi-suite run, as it ended."""

    name: str
    run_dir: Path
    exit_code: int | None
    """`evaluate`'s exit code for this suite (0: done); None: not run (an earlier suite
    was interrupted)."""


@dataclass(frozen=True)
class _Row:
    run: SuiteRun
    title: str
    loaded: Run | None
    """The run with its report.json; None when the suite wrote no report."""
    headline: Headline | None

    @property
    def outcome(self) -> str:
        if self.run.exit_code is None:
            return "not run"
        return "done" if self.run.exit_code == 0 else f"exit {self.run.exit_code}"


def _row(run: SuiteRun) -> _Row:
    suite = get_suite(run.name)
    try:
        (loaded,) = load_runs([run.run_dir])
    except (RunDirError, OSError, ValueError):
        return _Row(run, suite.title, None, None)
    return _Row(run, suite.title, loaded, suite.report_format().headline(loaded.report))


def _where(run: SuiteRun, out: Path) -> str:
    """The run directory as the page names and links it: relative to the page's folder."""
    inside = run.run_dir.is_relative_to(out)
    return run.run_dir.relative_to(out).as_posix() if inside else str(run.run_dir)


def _cells(row: _Row, out: Path) -> list[str]:
    h = row.headline
    where = _where(row.run, out)
    if h is None:
        return [row.title, row.outcome, "-", "-", "-", "-", where]
    return [
        row.title,
        row.outcome,
        h.utility_label,
        num(h.utility),
        num(h.ttft_mean_s, 3),
        size(h.storage_per_hour_bytes),
        where,
    ]


def _viewable(run: SuiteRun) -> bool:
    return (run.run_dir / VIEW_NAME).is_file()


HEADER = ("Suite", "Outcome", "Headline", "Score", "TTFT mean (s)", "Storage/hr", "Run directory")
SCALES = (
    "Each score is its suite's own headline measure (0-100) on that suite's dataset: they "
    "stand beside each other here, and are neither added nor averaged."
)


def _system(rows: Sequence[_Row], given: str) -> str:
    names = {row.loaded.record.shown_name for row in rows if row.loaded is not None}
    return names.pop() if len(names) == 1 else given


def write_suites_page(runs: Sequence[SuiteRun], out: Path, system: str) -> Path:
    """report.md, compare.html and suites.json in `out`: the system's headline per suite,
    and what each suite's report says at its top. `system`: the name when no run recorded
    one. Returns the HTML page."""
    rows = [_row(run) for run in runs]
    name = _system(rows, system)
    notes = [
        f"{row.run.name}: {line.replace('**', '')}"
        for row in rows
        if row.loaded is not None
        for line in head_lines(row.loaded.report, row.loaded.manifest)
        if line
    ]
    cells = [_cells(row, out) for row in rows]
    markdown = [
        f"# {md_cell(name)} on {len(rows)} suites",
        "",
        *table(HEADER, cells),
        "",
        SCALES,
        "",
        *(f"- {note}" for note in notes),
    ]
    out.mkdir(parents=True, exist_ok=True)
    records.atomic_write(out / REPORT_NAME, md_document("\n".join(markdown) + "\n"))
    data = {
        "system": name,
        "suites": [
            {
                "name": row.run.name,
                "title": row.title,
                "run_dir": str(row.run.run_dir),
                "exit_code": row.run.exit_code,
                "headline": None if row.headline is None else asdict(row.headline),
            }
            for row in rows
        ],
    }
    records.atomic_write(out / DATA_NAME, records.dump(data))
    page = out / COMPARISON_NAME
    html = (
        environment()
        .get_template("suites.html.j2")
        .render(
            title=f"{html_text(name, MD_CHARS)} on {len(rows)} suites",
            generated=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            harness_version=__version__,
            header=HEADER,
            rows=[
                (cell, f"{_where(row.run, out)}/{VIEW_NAME}" if _viewable(row.run) else None)
                for row, cell in zip(rows, cells, strict=True)
            ],
            scales=SCALES,
            notes=notes,
        )
    )
    records.atomic_write(page, html)
    return page
