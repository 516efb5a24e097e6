"""report.md: the report's numbers as tables laid out like the paper's.

Tables 3 (utility, latency, storage) and 4 (task scores, EA/EU) come first,
then the appendix tables: 6 (decision accuracy), 7 (response quality with
gate pass rates), 8/9 (latency, real-time factor), 10 (storage) and 11
(format failures), and how the adaptive probes were judged. `n/c` marks a
number that was not computed; report.json says why. The row builders are
shared with `compare`, which puts several systems in the same tables.
"""

from __future__ import annotations

from collections.abc import Mapping

from apmbench.harness.json_types import JSON
from apmbench.harness.reports.confinement import storage_verified
from apmbench.harness.reports.format import NOT_COMPUTED, num, size, table
from apmbench.harness.reports.system_text import md_cell
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.scoring import measures
from apmbench.harness.scoring.judge.reference import reference_note
from apmbench.harness.suites.apmbench import tasks
from apmbench.harness.suites.apmbench.metrics import Latency, Report

TABLE3_HEADER = (
    "Method",
    "Streaming",
    "Persistent",
    "CS Und.",
    "Perception",
    "Adaptive",
    "Overall",
    "TTFT (s)",
    "Answer (s)",
    "Storage/hr",
)
TABLE4_HEADER = ("Method", *tasks.MCQA_TASKS, *tasks.ADAPTIVE_TASKS, "Overall", "EA", "EU")


def _yes(flag: object) -> str:
    return "yes" if flag else "no"


def table3_row(report: Report, manifest: Mapping[str, JSON]) -> list[str]:
    fam = report["families"]
    record = Manifest.of(manifest)
    caps = record.capabilities
    storage = report["storage"]["storage_per_hour_bytes"]
    return [
        md_cell(record.shown_name),
        _yes(caps.get("streaming_ingest")),
        _persistent(report),
        num(fam["cross_session_understanding"]["score"]),
        num(fam["real_time_perception"]["score"]),
        num(fam["adaptive_response"]["score"]),
        num(report["overall"]["score"]),
        num(report["latency"]["time_to_first_token_s"]["mean"], 3),
        # Beside TTFT, so a cheap first chunk cannot stand for the answer's latency.
        num(report["latency"].get("time_to_answer_s", {}).get("mean"), 3),
        _storage_cell(storage, manifest),
    ]


def _persistent(report: Report) -> str:
    """Table 3's Persistent, from what was measured rather than declared: "yes" when a state
    exported between sessions held anything, "no" when every one was empty (a method
    that declares import but keeps nothing is not persistent)."""
    peak = report["storage"].get("peak_bytes_max")
    if peak is None:
        return NOT_COMPUTED
    return "yes" if peak > 0 else "no"


def _storage_cell(storage: float | None, manifest: Mapping[str, JSON]) -> str:
    if storage is None:
        return NOT_COMPUTED
    cell = size(storage) + "/hr"
    return cell if storage_verified(manifest) else cell + " (unverified)"


def table4_row(report: Report, manifest: Mapping[str, JSON]) -> list[str]:
    ea = report["evidence_availability"]
    return [
        md_cell(Manifest.of(manifest).shown_name),
        *(num(report["tasks"][t]["score"]) for t in (*tasks.MCQA_TASKS, *tasks.ADAPTIVE_TASKS)),
        num(report["overall"]["score"]),
        num(ea["evidence_available_accuracy"]),
        num(ea["evidence_unavailable_detection"]),
    ]


def _reasons(report: Report) -> list[str]:
    """One line per uncomputed headline number, so the Markdown alone explains every n/c."""
    out: list[str] = []
    for name, entry in (*report["tasks"].items(), *report["families"].items()):
        if entry.get("score") is None and entry.get("reason"):
            out.append(f"- {name}: {entry['reason']}")
    if report["overall"].get("score") is None:
        out.append(f"- Overall: {report['overall'].get('reason', '')}")
    return out


def _main_pass_line(lat: Latency) -> str:
    """What the stored memory was measured on (docs/apmbench.md#what-storagehr-measures)."""
    frames, turns = lat.get("main_pass_frames"), lat.get("main_pass_user_turns")
    pushed = "" if frames is None or turns is None else f" ({frames} frames and {turns} user turns)"
    return (
        f"Storage/hr is measured on the main pass{pushed}: every session once, its frames and "
        "its interval markers. A registration or an ERA question goes only to the forks of "
        "its own probes, so that no probe's answer changes another's: what a memory keeps "
        "of those turns is not counted here, and `apmbench-grpc check` shows whether its "
        "export and import carry them."
    )


def _judge_lines(report: Report) -> list[str]:
    summary = report.get("judge", {})
    # Which judge is said once, at the top of the report (reports/head.py).
    lines = ["## Judge", "", "The judge is named at the top of this report."]
    by_status = summary.get("by_status", {})
    if by_status:
        lines.append(
            "Adaptive probes by judge outcome: "
            + ", ".join(f"{k} {v}" for k, v in by_status.items())
            + " (not_needed: the gate failed, so g = 0 without a judge call)."
        )
    return lines


def _reference_lines(report: Report) -> list[str]:
    note = reference_note(report)
    if note is None:
        return []
    return [f"**Adaptive Response, its tasks and Overall: {note}.**", ""]


def _latency_table(lat: measures.Latency, prefix: str = "") -> list[str]:
    rows = [
        [prefix + label, str(row["n"]), *(num(row[k], 4) for k in ("mean", "p50", "p90", "p99"))]
        for label, row in (
            ("time to first token (s)", lat["time_to_first_token_s"]),
            ("full response (s)", lat["full_response_s"]),
            ("real-time factor", lat["real_time_factor"]),
        )
    ]
    return table(("Measure", "n", "mean", "p50", "p90", "p99"), rows)


def _ea_latency_lines(lat: Latency) -> list[str]:
    ea = lat.get("evidence_availability")
    return [] if ea is None else _latency_table(ea, "EA ")


def render_markdown(report: Report, manifest: Mapping[str, JSON]) -> str:
    record = Manifest.of(manifest)
    system = md_cell(record.shown_name)
    lat = report["latency"]
    sto = report["storage"]
    acc = report["decision_accuracy"]
    rq = report["response_quality"]
    ff = report["format_failures"]
    ea = report["evidence_availability"]
    lines = [
        f"# APM-Bench report: {system}",
        "",
        # The dataset, persistence, judge and confinement lines come before this: the run
        # pipeline writes them for every suite (reports/head.py).
        f"Harness {md_cell(record.harness_version)}, protocol {md_cell(record.protocol_version)}. "
        f"`{NOT_COMPUTED}` = not computed (reasons below and in report.json).",
        "",
        *_reference_lines(report),
        "## Utility, latency and storage (paper Table 3)",
        "",
        *table(TABLE3_HEADER, [table3_row(report, manifest)]),
        "",
        "## Task scores (paper Table 4)",
        "",
        *table(TABLE4_HEADER, [table4_row(report, manifest)]),
        "",
    ]
    reasons = _reasons(report)
    if reasons:
        lines += ["Not computed:", "", *reasons, ""]
    adaptive = tasks.ADAPTIVE_TASKS
    lines += [
        "## Adaptive decision accuracy (appendix B.1, Table 6)",
        "",
        *table(
            ("Method", *adaptive, "P", "N", "BA"),
            [
                [
                    system,
                    *(num(acc[t]["BA"]) for t in adaptive),
                    num(acc["overall"]["P"]),
                    num(acc["overall"]["N"]),
                    num(acc["overall"]["BA"]),
                ]
            ],
        ),
        "",
        "## Response quality after the gate (appendix B.2, Table 7)",
        "",
        "Each cell: Eq. 3 score, then the balanced gate pass rate in brackets.",
        "",
        *table(
            ("Method", *adaptive, "Average"),
            [
                [
                    system,
                    *(
                        f"{num(rq['tasks'][t]['score'])} [{num(rq['tasks'][t]['gate_pass_rate'])}]"
                        for t in adaptive
                    ),
                    num(rq["average"]["score"]),
                ]
            ],
        ),
        "",
        "## Evidence availability (appendix B.7, Table 13)",
        "",
        *table(
            ("Original", "EA", "EU", "Balanced", "available", "unavailable"),
            [
                [
                    num(ea.get("original_accuracy")),
                    num(ea["evidence_available_accuracy"]),
                    num(ea["evidence_unavailable_detection"]),
                    num(ea["balanced_accuracy"]),
                    str(ea["n_available"]),
                    str(ea["n_unavailable"]),
                ]
            ],
        ),
        "",
        *(
            [f"Original: {ea['original_accuracy_reason']}.", ""]
            if ea.get("original_accuracy_reason")
            else []
        ),
        "## Latency (appendix B.3, Tables 8 and 9)",
        "",
    ]
    lines += [
        *_latency_table(lat),
        "",
        f"Queries without any output: {lat['queries_without_output']}. Means are over the "
        "probes of the twelve tasks; Evidence Availability replays (two sessions of history) "
        "are summarised on their own:",
        "",
        *_ea_latency_lines(lat),
        "",
        "## Persistent storage (Eq. 2, appendix B.4, Table 10)",
        "",
        *table(
            ("Storage/hr", "peak mean", "peak max", "trajectories"),
            [
                [
                    size(sto["storage_per_hour_bytes"]),
                    size(sto["peak_bytes_mean"]),
                    size(sto["peak_bytes_max"]),
                    str(sto["trajectories_counted"]),
                ]
            ],
        ),
        "",
        f"Peak rule `{sto.get('peak_rule', 'last')}`: {sto.get('peak_rule_text', '')}; "
        "B_peak and D_peak per trajectory are in report.json (`storage.trajectories`).",
        "",
        _main_pass_line(lat),
        "",
        "## Unrecoverable format failures (appendix B.5, Table 11)",
        "",
        *table(
            ("Task", "failures", "rate (%)"),
            [
                [t, str(ff["by_task"].get(t, 0)), num(100 * rate)]
                for t, rate in ff["rate_by_task"].items()
            ]
            + [
                [
                    "all",
                    str(ff["total"]),
                    num(None if ff["rate"] is None else 100 * ff["rate"]),
                ]
            ],
        ),
        "",
        f"{ff['repaired']} of {ff['probes']} outputs were repaired deterministically "
        "and scored as the repaired answer. Rates divide by the "
        f"{ff['probes']} probes of the twelve tasks; Evidence Availability is counted on its "
        f"own ({ea.get('format_failures', 0)} failures).",
        "",
        *_judge_lines(report),
        "",
    ]
    return "\n".join(lines)
