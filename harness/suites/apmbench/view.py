"""What the HTML viewer shows of APM-Bench runs: Tables 3 and 4, Tables 6 and 7, score bars."""

from __future__ import annotations

from collections.abc import Sequence

from apmbench.harness.reports.format import num
from apmbench.harness.scoring.judge.reference import reference_note
from apmbench.harness.suites.apmbench import tasks
from apmbench.harness.suites.apmbench.metrics import Report
from apmbench.harness.suites.apmbench.report import (
    TABLE3_HEADER,
    TABLE4_HEADER,
    table3_row,
    table4_row,
)
from apmbench.harness.suites.base import ComparedRun, ViewBars, ViewTable


def _labelled(row: list[str], label: str) -> list[str]:
    # Runs of the same system (two settings) are told apart by their labels.
    return [label, *row[1:]]


def _not_computed(runs: Sequence[ComparedRun[Report]]) -> tuple[str, ...]:
    notes: list[str] = []
    for run in runs:
        r = run.report
        for name, entry in (*r["tasks"].items(), *r["families"].items()):
            if entry.get("score") is None and entry.get("reason"):
                notes.append(f"{run.label}: {name} not computed: {entry['reason']}")
        if (note := reference_note(r)) is not None:
            notes.append(f"{run.label}: Adaptive Response, its tasks and Overall: {note}")
    return tuple(dict.fromkeys(notes))


def view_tables(runs: Sequence[ComparedRun[Report]]) -> list[ViewTable]:
    adaptive = tasks.ADAPTIVE_TASKS
    notes = _not_computed(runs)
    decision = []
    quality = []
    for run in runs:
        acc = run.report["decision_accuracy"]
        rq = run.report["response_quality"]
        decision.append(
            [
                run.label,
                *(num(acc[t]["BA"]) for t in adaptive),
                num(acc["overall"]["P"]),
                num(acc["overall"]["N"]),
                num(acc["overall"]["BA"]),
            ]
        )
        quality.append(
            [
                run.label,
                *(
                    f"{num(rq['tasks'][t]['score'])} [{num(rq['tasks'][t]['gate_pass_rate'])}]"
                    for t in adaptive
                ),
                num(rq["average"]["score"]),
            ]
        )
    return [
        ViewTable(
            "Utility, latency and storage (paper Table 3)",
            TABLE3_HEADER,
            [_labelled(table3_row(r.report, r.manifest), r.label) for r in runs],
            notes,
        ),
        ViewTable(
            "Task scores (paper Table 4)",
            TABLE4_HEADER,
            [_labelled(table4_row(r.report, r.manifest), r.label) for r in runs],
        ),
        ViewTable(
            "Adaptive decision accuracy (appendix B.1, Table 6)",
            ("Method", *adaptive, "P", "N", "BA"),
            decision,
        ),
        ViewTable(
            "Response quality after the gate (appendix B.2, Table 7): Eq. 3 [gate pass rate]",
            ("Method", *adaptive, "Average"),
            quality,
        ),
    ]


def view_bars(report: Report) -> list[ViewBars]:
    families = {tasks.FAMILY_SHORT[f]: report["families"][f]["score"] for f in tasks.FAMILIES}
    families["Overall"] = report["overall"]["score"]
    per_task: dict[str, float | None] = {
        t: report["tasks"][t]["score"] for t in (*tasks.MCQA_TASKS, *tasks.ADAPTIVE_TASKS)
    }
    per_task[f"{tasks.EVIDENCE_AVAILABILITY} (balanced)"] = report["evidence_availability"][
        "balanced_accuracy"
    ]
    return [ViewBars("Families and Overall", families), ViewBars("Tasks", per_task)]
