"""The comparison tables the embedded default prints, one row per system (paper Tables 3, 4)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from apmbench.harness.reports.format import num, size
from apmbench.harness.scoring.judge.reference import reference_note
from apmbench.harness.suites.apmbench import tasks
from apmbench.harness.suites.apmbench.metrics import Report


def _pct(value: float | None) -> str:
    return num(value, 1)


def _reference_caption(reports: Sequence[Report]) -> str | None:
    notes = {n for r in reports if (n := reference_note(r)) is not None}
    return f"AR and Overall: {' / '.join(sorted(notes))}" if notes else None


def summary_tables(reports: Sequence[Report], names: Sequence[str]) -> list[Table]:
    """Utility, latency and storage per system (Table 3), then task scores (Table 4)."""
    main = Table(
        title="Utility, latency and storage (n/c = not computed)",
        caption=_reference_caption(reports),
    )
    for column in ("System", "CSU", "RTP", "AR", "Overall", "EA bal", "Decision BA",
                   "TTFT mean (s)", "Storage/hr"):  # fmt: skip
        main.add_column(column, justify="left" if column == "System" else "right")
    per_task = Table(title="Task scores")
    for column in ("System", *tasks.MCQA_TASKS, *tasks.ADAPTIVE_TASKS):
        per_task.add_column(column, justify="left" if column == "System" else "right")
    for name, r in zip(names, reports, strict=True):
        fam = r["families"]
        ttft = r["latency"]["time_to_first_token_s"]["mean"]
        main.add_row(
            name,
            _pct(fam["cross_session_understanding"]["score"]),
            _pct(fam["real_time_perception"]["score"]),
            _pct(fam["adaptive_response"]["score"]),
            _pct(r["overall"]["score"]),
            _pct(r["evidence_availability"]["balanced_accuracy"]),
            _pct(r["decision_accuracy"]["overall"]["BA"]),
            "n/c" if ttft is None else f"{ttft:.3f}",
            size(r["storage"]["storage_per_hour_bytes"]),
        )
        per_task.add_row(
            name,
            *(_pct(r["tasks"][t]["score"]) for t in (*tasks.MCQA_TASKS, *tasks.ADAPTIVE_TASKS)),
        )
    return [main, per_task]
