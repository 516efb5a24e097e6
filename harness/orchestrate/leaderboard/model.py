"""The leaderboard's page model: entries grouped into rankings, every number with its source.

A ranking holds the runs of one suite on one dataset (its content hash),
scored the same way (the scoring signature `compare` checks: judge, its
settings and wording, the scoring schema): numbers from different datasets
or judges are never ranked together, each such group gets its own tables
and plot. Every run is a row of its own, also several runs of one method (two
persistence modes, a rerun): none is picked silently. The tables are the
suite's own (`suites.base.leaderboard_rows`, the paper's headline tables as its
compare shows them); the ranking and the trade-off plot's utility axis are
the ones `compare` uses (`ReportFormat.comparison`'s `plot_y`).

Text a system supplied (its name and version) is made plain and cut here;
the HTML template escapes it (Jinja's autoescape) and the JSON writer keeps
it data (site.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from apmbench.adapters.sdk.errors import ApmbenchError
from apmbench.harness.errors import RunDirError
from apmbench.harness.orchestrate.leaderboard.entries import Entry, listed
from apmbench.harness.reports.head import ReportHeader, header
from apmbench.harness.reports.scores import Score, ScoreRow
from apmbench.harness.reports.system_text import MD_CHARS, html_text
from apmbench.harness.reports.tradeoff_plot import Point
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.suites import DEFAULT, SUITE_REGISTRY, base, get_suite
from apmbench.harness.suites.base import ComparedRun, OpaqueSuite, plotted

VERIFIED = "verified"
NOT_VERIFIED = "not verified"
VERIFICATION_FAILED = "verification failed"
UNCONFINED = "unconfined"


@dataclass(frozen=True)
class Source:
    """One input, as the page names it and says whether its numbers were verified."""

    anchor: str
    path: str
    bundle_id: str | None
    verified: bool | None
    facts: Mapping[str, str | None]
    """The run's identity from its manifest (system, runtime, image digest, dataset, ...)."""

    @property
    def name(self) -> str:
        """What a number's link says it came from: the bundle, else the run directory."""
        return self.bundle_id if self.bundle_id is not None else self.path

    @property
    def verification(self) -> str:
        if self.verified is None:
            return NOT_VERIFIED
        return VERIFIED if self.verified else VERIFICATION_FAILED

    @property
    def why(self) -> str:
        if self.verified is None:
            return "not a bundle: a run directory's files carry no checksums to verify"
        if self.verified:
            return "a bundle that passed every rule of apmbench-grpc verify"
        return "a bundle that failed a rule of apmbench-grpc verify (run it to see which)"


@dataclass(frozen=True)
class BoardRun:
    """One run's line in its ranking."""

    anchor: str
    label: str
    """The method's name, with the source added where the ranking holds it twice."""
    system: str
    system_version: str | None
    source: Source
    rank: int | None
    """1 for the best utility (ties share a rank); None: no utility to rank by."""
    utility: float | None
    ttft_mean_s: float | None
    answer_mean_s: float | None
    """The plot's x: mean time to answer (a cheap first chunk buys TTFT, not this)."""
    storage_per_hour_bytes: float | None
    confined: bool | None
    """False: run with --no-sandbox (every report says "unconfined"); None: not recorded."""
    notes: tuple[str, ...]
    """The confinement lines every report of the run starts with (reports/head.py)."""
    rows: tuple[ScoreRow, ...]

    @property
    def marks(self) -> tuple[str, ...]:
        """The run's status as the page badges it."""
        return (self.source.verification, *((UNCONFINED,) if self.confined is False else ()))


@dataclass(frozen=True)
class BoardTable:
    """One of the suite's headline tables over a ranking's runs, in rank order."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[BoardRun, tuple[Score, ...]], ...]


@dataclass(frozen=True)
class Group:
    """One ranking: one suite, one dataset, one way of scoring."""

    anchor: str
    benchmark: str
    suite_title: str
    dataset_name: str | None
    dataset_hash: str | None
    judge: str
    scoring_signature: object
    ranked_by: str
    """The utility the ranking and the plot's y axis use ("": none is common to the runs)."""
    runs: tuple[BoardRun, ...]
    tables: tuple[BoardTable, ...]
    points: tuple[Point, ...]
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Board:
    groups: tuple[Group, ...]
    sources: tuple[Source, ...]


def _facts(manifest: Manifest) -> dict[str, str | None]:
    def shown(value: object) -> str | None:
        return None if value is None else html_text(value, MD_CHARS)

    return {
        "system": shown(manifest.system_name),
        "run as": shown(manifest.run_as),
        "system version": shown(manifest.system_version),
        "runtime": shown(manifest.runtime_kind),
        "image digest": shown(manifest.image_id),
        "persistence": manifest.persistence,
        "dataset": shown(manifest.dataset_name),
        "dataset hash": manifest.dataset_hash,
        "judge": judge_text(manifest.judge),
        "harness": manifest.harness_version,
        "protocol": manifest.protocol_version,
        "started": manifest.started_at,
        "finished": manifest.finished_at,
    }


def judge_text(judge: Mapping[str, object]) -> str:
    """The judge a run was scored with, in words: its kind and what names it (its model,
    label, version; nested settings stay in leaderboard.json's scoring signature)."""
    kind = str(judge.get("kind", "none"))
    described = ", ".join(
        f"{k}={v}"
        for k, v in sorted(judge.items())
        if k != "kind" and isinstance(v, str | int | float) and not isinstance(v, bool)
    )
    return html_text(f"{kind} ({described})" if described else kind, 300)


@dataclass(frozen=True)
class _Loaded:
    entry: Entry
    source: Source
    record: Manifest
    benchmark: str
    suite: OpaqueSuite
    rows: tuple[ScoreRow, ...]
    head: ReportHeader

    @property
    def signature(self) -> object:
        scoring = self.entry.report.get("scoring")
        return scoring.get("signature") if isinstance(scoring, Mapping) else None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (
            self.benchmark,
            str(self.record.dataset_hash),
            json.dumps(self.signature, sort_keys=True),
            # Live runs rank only with runs played at the same speed and buffer.
            f"{self.record.played} {self.record.play!r}",
        )


def _load(entry: Entry, source: Source) -> _Loaded:
    """The entry read by its suite; a report the suite cannot read is refused by name."""
    record = Manifest.of(entry.manifest)
    benchmark = record.benchmark or DEFAULT
    try:
        suite = get_suite(benchmark)
    except ApmbenchError as e:
        raise RunDirError(f"{entry.source}: {e} (install the suite's distribution)") from e
    try:
        rows = tuple(base.leaderboard_rows(suite, entry.report, entry.manifest))
        suite.report_format().headline(entry.report)
        head = header(entry.report, entry.manifest)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise RunDirError(
            f"{entry.source}: its report.json is not a complete {suite.title} report "
            f"({type(e).__name__}: {e}); score the run again with this harness "
            f"(apmbench-grpc score RUN_DIR)"
        ) from e
    return _Loaded(entry, source, record, benchmark, suite, rows, head)


def _labels(members: Sequence[_Loaded]) -> list[str]:
    """Each run's name, told apart by its source where a ranking holds a method twice. The
    name a system gives itself is its own to choose (a red team's spammer called itself
    proact-rules): where the harness ran something of another name, that name is shown."""
    names = [html_text(m.record.shown_name, MD_CHARS) for m in members]
    labels = [
        name
        if names.count(name) == 1
        else f"{name} ({m.source.bundle_id or Path(m.source.path).name or m.source.path})"
        for name, m in zip(names, members, strict=True)
    ]
    seen: dict[str, int] = {}
    unique = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if labels.count(label) == 1 else f"{label} #{seen[label]}")
    return unique


def ranks(values: Sequence[float | None]) -> list[int | None]:
    """Competition ranks, highest first (1, 1, 3 for a tie at the top); None stays unranked."""
    return [
        None if v is None else 1 + sum(1 for o in values if o is not None and o > v) for v in values
    ]


def _group(anchor: str, members: Sequence[_Loaded]) -> Group:
    suite = members[0].suite
    labels = _labels(members)
    compared = [
        ComparedRun(Path(m.source.path), label, m.entry.manifest, m.entry.report)
        for m, label in zip(members, labels, strict=True)
    ]
    try:
        data = plotted(suite.report_format().comparison(compared))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        sources = ", ".join(m.source.path for m in members)
        raise RunDirError(
            f"{sources}: {suite.title} cannot compare these reports ({type(e).__name__}: {e}); "
            "score the runs again with this harness (apmbench-grpc score RUN_DIR)"
        ) from e
    utilities = [row["plot_y"] for row in data["runs"]]
    rank_of = ranks(utilities)
    runs: list[BoardRun] = []
    for i, (m, label) in enumerate(zip(members, labels, strict=True)):
        headline = suite.report_format().headline(m.entry.report)
        runs.append(
            BoardRun(
                anchor=f"{anchor}-run-{i + 1}",
                label=label,
                system=html_text(m.record.system_name, MD_CHARS),
                system_version=(
                    None
                    if m.record.system_version is None
                    else html_text(m.record.system_version, MD_CHARS)
                ),
                source=m.source,
                rank=rank_of[i],
                utility=utilities[i],
                ttft_mean_s=headline.ttft_mean_s,
                answer_mean_s=headline.answer_mean_s,
                storage_per_hour_bytes=headline.storage_per_hour_bytes,
                confined=m.head["confined"],
                notes=tuple(m.head["notes"]),
                rows=m.rows,
            )
        )
    # Best first; unranked last; among equals in the order the inputs were given.
    order = sorted(range(len(runs)), key=lambda i: (runs[i].rank is None, runs[i].rank or 0, i))
    ranked = tuple(runs[i] for i in order)
    notes = list(data["notes"])
    if members[0].record.live_speed is not None:
        played = members[0].record.played
        notes.insert(0, f"Every run here was {played}: latencies run from each question's due time")
    points = []
    for run in ranked:
        if run.utility is None:
            continue
        if run.answer_mean_s is None:
            notes.append(f"{run.label} is not plotted: no query produced a parsed answer")
            continue
        url = f"#{run.anchor}"
        points.append(
            Point(run.label, run.answer_mean_s, run.utility, run.storage_per_hour_bytes, url)
        )
    # Each run's confinement lines as its report states them; a line several runs share
    # (a known seed, say) once, with all their names.
    shared: dict[str, list[str]] = {}
    for run in ranked:
        for line in run.notes:
            shared.setdefault(line, []).append(run.label)
    notes += [f"{', '.join(labels)}: {line}" for line, labels in shared.items()]
    first = members[0].record
    return Group(
        anchor=anchor,
        benchmark=members[0].benchmark,
        suite_title=suite.title,
        dataset_name=None if first.dataset_name is None else html_text(first.dataset_name, 120),
        dataset_hash=first.dataset_hash,
        judge=judge_text(first.judge),
        scoring_signature=members[0].signature,
        ranked_by=data["plot_y_label"],
        runs=ranked,
        tables=_tables(ranked),
        points=tuple(points),
        notes=tuple(dict.fromkeys(notes)),
    )


def _tables(runs: Sequence[BoardRun]) -> tuple[BoardTable, ...]:
    """The suite's tables, one row per run; a row whose columns differ from the table's
    (a report of another schema) opens a table of its own rather than misaligning."""
    tables: dict[tuple[str, tuple[str, ...]], list[tuple[BoardRun, tuple[Score, ...]]]] = {}
    for run in runs:
        for row in run.rows:
            tables.setdefault((row.table, row.header), []).append((run, row.cells))
    return tuple(BoardTable(t, h, tuple(rows)) for (t, h), rows in tables.items())


def build_board(entries: Sequence[Entry]) -> Board:
    """Group the entries into rankings (suite, dataset, scoring), in the registry's order of
    suites, then by dataset name and hash."""
    sources = [
        Source(f"src-{i + 1}", e.source, e.bundle_id, e.verified, _facts(Manifest.of(e.manifest)))
        for i, e in enumerate(entries)
    ]
    loaded = []
    problems = []
    for entry, source in zip(entries, sources, strict=True):
        try:
            loaded.append(_load(entry, source))
        except RunDirError as e:
            problems.append(str(e))
    if problems:
        raise RunDirError(listed(problems))
    groups: dict[tuple[str, str, str, str], list[_Loaded]] = {}
    for item in loaded:
        groups.setdefault(item.key, []).append(item)
    order = {name: i for i, name in enumerate(SUITE_REGISTRY.names())}

    def sort_key(key: tuple[str, str, str, str]) -> tuple[int, str, str, str, str, bool, str]:
        first = groups[key][0].record
        # Offline replays before live runs, each as the other keys order them.
        offline_first = (*key[1:3], first.live_speed is not None, key[3])
        return (order.get(key[0], len(order)), key[0], first.dataset_name or "", *offline_first)

    return Board(
        groups=tuple(
            _group(f"g{i + 1}", groups[key]) for i, key in enumerate(sorted(groups, key=sort_key))
        ),
        sources=tuple(sources),
    )
