"""The paper's metrics, computed from the run's records (APM-Bench section 3.3, appendix B).

Every number here is computed from the instance and session records alone,
so a run can be re-scored without running the system again. Judge-dependent
numbers (the gated LLM-judge score of the five adaptive tasks, hence the
Adaptive Response family and Overall, and the response quality of Eq. 3) are
`null` with a reason when no judge was configured or the judge gave no usable
verdict for a gate-passing probe: never a guessed number.

An adaptive instance row carries `gate_passed` (set by `grade_instance`),
`judge_score` (1-5, or None) and `judge` (the recorded outcome, whose
`status` is "not_needed" when the gate failed, "not_configured" without a
judge, else "scored", "invalid" or "error").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from statistics import fmean
from typing import NotRequired, TypedDict, cast

from apmbench.harness.json_types import JsonObject
from apmbench.harness.reports.head import RunFacts
from apmbench.harness.run.records import InstanceRow
from apmbench.harness.scoring import measures
from apmbench.harness.scoring.answers import (
    FAILURE,
    REPAIRED,
    Graded,
    parse_choice,
    parse_decision,
)
from apmbench.harness.suites.apmbench import tasks
from apmbench.harness.suites.apmbench.dataset import Candidate, Probe
from apmbench.harness.suites.base import Row as SharedRow
from apmbench.harness.suites.base import ScoringRecord

SCHEMA_VERSION = 1
NOT_COMPUTED_JUDGE = "needs an LLM judge (gated judge score, Eq. 1); none was configured"
NOT_NEEDED = "not_needed"
NOT_CONFIGURED = "not_configured"


class ChoiceGrade(Graded):
    """The grading of a multiple-choice question (the MCQA tasks and Evidence Availability)."""

    polarity: None
    correct_option_id: str | None
    correct: bool
    evidence_available: bool | None
    original_candidate_id: str | None


class JudgeStatus(TypedDict):
    """The judge outcome a row holds before the judging pass (`JudgeOutcome.as_dict` after)."""

    status: str


class DecisionGrade(Graded):
    """The grading of an adaptive probe: the decision, and the gate it opens to the judge."""

    polarity: str
    """`positive` (a moment to respond) or `negative` (to stay silent): the probe's label."""
    decision: str | None
    expected_decision: str
    decision_correct: bool
    gate_passed: bool
    judge_score: float | None
    judge: JsonObject | JudgeStatus


class Row(InstanceRow):
    """One APM-Bench instance row: the runner's fields, the ask's (`plan.ask_for`, no label)
    and its grading, a `ChoiceGrade` or a `DecisionGrade` by task (hence the keys either may
    lack); the labels (`polarity` too) come with the grading."""

    candidate_id: str
    trajectory_id: str
    task: str
    family: str
    polarity: str | None
    answer: str | None
    format: str
    format_reason: str
    correct_option_id: NotRequired[str | None]
    correct: NotRequired[bool]
    evidence_available: NotRequired[bool | None]
    original_candidate_id: NotRequired[str | None]
    decision: NotRequired[str | None]
    expected_decision: NotRequired[str]
    decision_correct: NotRequired[bool]
    gate_passed: NotRequired[bool]
    judge_score: NotRequired[float | None]
    judge: NotRequired[JsonObject | JudgeStatus]


def rows(instances: Sequence[SharedRow]) -> list[Row]:
    """The shared machinery's rows as this suite's: each was built from one of its asks
    (`plan.ask_for`) and graded by `grade_instance`."""
    return [cast(Row, r) for r in instances]


class Scored(TypedDict):
    """A score (0-100), or None with the reason it was not computed."""

    score: float | None
    reason: NotRequired[str]


class TaskScore(Scored):
    instances: int
    candidates: int
    format_failures: int
    metric: str
    """"accuracy" (the MCQA tasks) or "gated_llm_judge" (the adaptive tasks, Eq. 1)."""


class FamilyScore(Scored):
    tasks: list[str]


class EvidenceAvailability(TypedDict):
    n_available: int
    n_unavailable: int
    original_accuracy: float | None
    n_original: int
    evidence_available_accuracy: float | None
    evidence_unavailable_detection: float | None
    balanced_accuracy: float | None
    format_failures: int
    original_accuracy_reason: NotRequired[str]


class Balanced(TypedDict):
    """Decision accuracy on positive (P) and negative (N) probes, and their mean (BA)."""

    positive_probes: int
    negative_probes: int
    P: float | None
    N: float | None
    BA: float | None


class QualityScore(Scored):
    gate_pass_rate: float | None


class ResponseQuality(TypedDict):
    tasks: dict[str, QualityScore]
    average: Scored


class JudgeSummary(TypedDict):
    by_status: dict[str, int]
    by_task: dict[str, dict[str, int]]


class FormatFailures(TypedDict):
    total: int
    rate: float | None
    probes: int
    repaired: int
    by_task: dict[str, int]
    rate_by_task: dict[str, float]


class Latency(measures.Latency, measures.Ingest):
    """The twelve tasks' latency and the main pass's ingest; Evidence Availability's
    replays on their own."""

    evidence_availability: measures.Latency


class Report(RunFacts):
    """report.json of an APM-Bench run."""

    schema_version: int
    scoring: ScoringRecord
    tasks: dict[str, TaskScore]
    families: dict[str, FamilyScore]
    overall: Scored
    evidence_availability: EvidenceAvailability
    decision_accuracy: dict[str, Balanced]
    """Per adaptive task, and pooled as "overall"."""
    gate_pass_rate: dict[str, float | None]
    response_quality: ResponseQuality
    judge: JudgeSummary
    format_failures: FormatFailures
    latency: Latency
    storage: measures.Storage


def report_of(data: Mapping[str, object]) -> Report:
    """report.json as read back (compare, the viewer): written by `score` below."""
    return cast(Report, data)


def grade_instance(candidate: Candidate, probe: Probe, text: str) -> ChoiceGrade | DecisionGrade:
    """Parse one raw output and check it against the labels: the deterministic part of scoring."""
    choices = [(c.option_id, c.text) for c in candidate.choices]
    if candidate.task in tasks.MCQA_TASKS or candidate.task == tasks.EVIDENCE_AVAILABILITY:
        parsed = parse_choice(text, choices)
        return {
            "polarity": None,
            "answer": parsed.option,
            "format": parsed.status,
            "format_reason": parsed.reason,
            "correct_option_id": candidate.correct_option_id,
            "correct": parsed.option is not None and parsed.option == candidate.correct_option_id,
            "evidence_available": candidate.evidence_available,
            "original_candidate_id": candidate.original_candidate_id,
        }
    is_era = candidate.task == "ERA"
    decision = parse_decision(text, choices, needs_option=is_era)
    expected = "INTERVENE" if probe.positive else "SILENT"
    decision_correct = decision.decision == expected
    gate = decision_correct and decision.status != FAILURE
    if is_era and probe.positive:
        gate = gate and decision.option == candidate.correct_option_id
    return {
        "polarity": "positive" if probe.positive else "negative",
        "decision": decision.decision,
        "answer": decision.option,
        "format": decision.status,
        "format_reason": decision.reason,
        "expected_decision": expected,
        "decision_correct": decision_correct,
        "gate_passed": gate,
        "judge_score": None,
        # Replaced by the judging pass; a failed gate never reaches the judge (g_r = 0).
        "judge": {"status": NOT_CONFIGURED if gate else NOT_NEEDED},
    }


def _rate(hits: int, total: int) -> float | None:
    return 100.0 * hits / total if total else None


def _status(row: Row) -> str:
    """The judge status a row records (older rows may hold none)."""
    return str((row.get("judge") or {}).get("status", NOT_CONFIGURED))


def _judge_gap(rows: Sequence[Row]) -> str | None:
    """Why a judge-dependent number over `rows` cannot be computed, or None if it can."""
    pending = [r for r in rows if r["gate_passed"] and r.get("judge_score") is None]
    if not pending:
        return None
    statuses = Counter(_status(r) for r in pending)
    if set(statuses) == {NOT_CONFIGURED}:
        return NOT_COMPUTED_JUDGE
    passing = sum(bool(r["gate_passed"]) for r in rows)
    detail = ", ".join(f"{k}: {n}" for k, n in sorted(statuses.items()))
    return (
        f"the judge gave no usable verdict for {len(pending)} of {passing} gate-passing probes "
        f"({detail}); see `judge` in instances.jsonl, then re-score with `apmbench-grpc score`"
    )


def _by_candidate(rows: Iterable[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        out[r["candidate_id"]].append(r)
    return out


def gated_probe_score(row: Row) -> float:
    """g_r of Eq. 1: 0 when the gate failed, else the judge's 1-5 score."""
    if not row["gate_passed"]:
        return 0.0
    judged = row.get("judge_score")
    if judged is None:
        raise ValueError(f"{row.get('instance_id')}: gate passed but no judge score")
    return float(judged)


def candidate_score(rows: Sequence[Row]) -> float:
    """s_c of Eq. 1: the mean of the positive and negative probe means, or the sole one."""
    pos = [gated_probe_score(r) for r in rows if r["polarity"] == "positive"]
    neg = [gated_probe_score(r) for r in rows if r["polarity"] == "negative"]
    if pos and neg:
        return (fmean(pos) + fmean(neg)) / 2
    return fmean(pos or neg)


def gated_judge_score(rows: Sequence[Row]) -> tuple[float | None, str | None]:
    """Eq. 1 for one task: 20 x the mean candidate score; (None, reason) when not computable."""
    if not rows:
        return None, "no candidates of this task in the dataset"
    gap = _judge_gap(rows)
    if gap is not None:
        return None, gap
    scores = [candidate_score(group) for group in _by_candidate(rows).values()]
    return 20.0 * fmean(scores), None


def response_quality_score(rows: Sequence[Row]) -> tuple[float | None, str | None]:
    """Eq. 3 for one task: judged gate-passing probes, averaged per polarity, then candidate."""
    if not rows:
        return None, "no candidates of this task in the dataset"
    gap = _judge_gap(rows)
    if gap is not None:
        return None, gap
    per_candidate: list[float] = []
    for group in _by_candidate(rows).values():
        means = [
            fmean(float(r["judge_score"] or 0) for r in judged)
            for polarity in ("positive", "negative")
            if (judged := [r for r in group if r["polarity"] == polarity and r["gate_passed"]])
        ]
        if means:
            per_candidate.append(fmean(means))
    if not per_candidate:
        return None, "no probe passed the gate, so no response was judged"
    return 100.0 / 5.0 * fmean(per_candidate), None


def task_scores(instances: Sequence[Row]) -> dict[str, TaskScore]:
    by_task: dict[str, list[Row]] = defaultdict(list)
    for r in instances:
        by_task[r["task"]].append(r)
    out: dict[str, TaskScore] = {}
    for task in (*tasks.MCQA_TASKS, *tasks.ADAPTIVE_TASKS):
        rows = by_task.get(task, [])
        reason: str | None
        if task in tasks.MCQA_TASKS:
            metric = "accuracy"
            value = _rate(sum(bool(r["correct"]) for r in rows), len(rows))
            reason = None if rows else "no candidates of this task in the dataset"
        else:
            metric = "gated_llm_judge"
            value, reason = gated_judge_score(rows)
        entry: TaskScore = {
            "instances": len(rows),
            "candidates": len({r["candidate_id"] for r in rows}),
            "format_failures": sum(r["format"] == FAILURE for r in rows),
            "metric": metric,
            "score": value,
        }
        if reason is not None:
            entry["reason"] = reason
        out[task] = entry
    return out


def family_scores(
    by_task: Mapping[str, Scored],
) -> tuple[dict[str, FamilyScore], Scored]:
    """Family = mean of its tasks' scores; Overall = mean of the three families."""
    families: dict[str, FamilyScore] = {}
    for family, names in tasks.FAMILIES.items():
        scored = [s for t in names if (s := by_task[t]["score"]) is not None]
        unscored = [t for t in names if by_task[t]["score"] is None]
        if unscored:
            families[family] = {
                "score": None,
                "tasks": list(names),
                "reason": "not computed: " + ", ".join(unscored) + " have no score",
            }
        else:
            families[family] = {"score": fmean(scored), "tasks": list(names)}
    missing = [f for f, v in families.items() if v["score"] is None]
    return families, _mean_of(families, missing)


def _mean_of(entries: Mapping[str, Scored], missing: Sequence[str]) -> Scored:
    """The mean of the entries' scores, or None naming those that have none."""
    if missing:
        return {"score": None, "reason": "not computed: " + ", ".join(missing) + " have no score"}
    return {"score": fmean(v["score"] or 0.0 for v in entries.values())}


def evidence_availability(instances: Sequence[Row]) -> EvidenceAvailability:
    """Appendix B.7, Table 13: EA, EU, Balanced, and the Original Accuracy next to them.

    Original Accuracy is the accuracy, under the main protocol, on the
    four-option questions the EA candidates were derived from (each names
    its `original_candidate_id`), over all EA candidates that name one.
    """
    rows = [r for r in instances if r["task"] == tasks.EVIDENCE_AVAILABILITY]
    avail = [r for r in rows if r["evidence_available"]]
    unavail = [r for r in rows if not r["evidence_available"]]
    ea = _rate(sum(bool(r["correct"]) for r in avail), len(avail))
    eu = _rate(sum(bool(r["correct"]) for r in unavail), len(unavail))
    main = {r["candidate_id"]: r for r in instances if r["task"] in tasks.MCQA_TASKS}
    linked = [c for r in rows if (c := r.get("original_candidate_id"))]
    found = [main[c] for c in linked if c in main]
    out: EvidenceAvailability = {
        "n_available": len(avail),
        "n_unavailable": len(unavail),
        "original_accuracy": _rate(sum(bool(r["correct"]) for r in found), len(found)),
        "n_original": len(found),
        "evidence_available_accuracy": ea,
        "evidence_unavailable_detection": eu,
        "balanced_accuracy": None if ea is None or eu is None else (ea + eu) / 2,
        "format_failures": sum(r["format"] == FAILURE for r in rows),
    }
    if rows and not found:
        out["original_accuracy_reason"] = (
            "no EA candidate names an answered original four-option question "
            "(original_candidate_id)"
        )
    elif len(found) < len(rows):
        out["original_accuracy_reason"] = (
            f"over the {len(found)} of {len(rows)} EA candidates whose original question "
            "was answered in this run"
        )
    return out


def _balanced(rows: Iterable[Row]) -> Balanced:
    rows = list(rows)
    pos = [r for r in rows if r["polarity"] == "positive"]
    neg = [r for r in rows if r["polarity"] == "negative"]
    p = _rate(sum(r["decision"] == "INTERVENE" for r in pos), len(pos))
    n = _rate(sum(r["decision"] == "SILENT" for r in neg), len(neg))
    ba = None if p is None or n is None else (p + n) / 2
    return {"positive_probes": len(pos), "negative_probes": len(neg), "P": p, "N": n, "BA": ba}


def decision_accuracy(instances: Sequence[Row]) -> dict[str, Balanced]:
    """Appendix B.1: per task, and pooled over the five adaptive tasks."""
    adaptive = [r for r in instances if r["task"] in tasks.ADAPTIVE_TASKS]
    out = {t: _balanced(r for r in adaptive if r["task"] == t) for t in tasks.ADAPTIVE_TASKS}
    out["overall"] = _balanced(adaptive)
    return out


def gate_pass_rate(instances: Sequence[Row]) -> dict[str, float | None]:
    """Balanced gate pass rate per adaptive task (appendix B.2 superscripts)."""
    out: dict[str, float | None] = {}
    for t in tasks.ADAPTIVE_TASKS:
        rows = [r for r in instances if r["task"] == t]
        pos = [r for r in rows if r["polarity"] == "positive"]
        neg = [r for r in rows if r["polarity"] == "negative"]
        p = _rate(sum(bool(r["gate_passed"]) for r in pos), len(pos))
        n = _rate(sum(bool(r["gate_passed"]) for r in neg), len(neg))
        out[t] = None if p is None or n is None else (p + n) / 2
    return out


def response_quality(instances: Sequence[Row]) -> ResponseQuality:
    """Appendix B.2, Table 7: Eq. 3 per task with its balanced gate pass rate, and the average."""
    rates = gate_pass_rate(instances)
    per_task: dict[str, QualityScore] = {}
    for t in tasks.ADAPTIVE_TASKS:
        rows = [r for r in instances if r["task"] == t]
        value, reason = response_quality_score(rows)
        entry: QualityScore = {"score": value, "gate_pass_rate": rates[t]}
        if reason is not None:
            entry["reason"] = reason
        per_task[t] = entry
    missing = [t for t, v in per_task.items() if v["score"] is None]
    return {"tasks": per_task, "average": _mean_of(per_task, missing)}


def judge_summary(instances: Sequence[Row]) -> JudgeSummary:
    """How every adaptive probe was (or was not) judged, per task and in all."""
    adaptive = [r for r in instances if r["task"] in tasks.ADAPTIVE_TASKS]

    def count(rows: Iterable[Row]) -> dict[str, int]:
        statuses = Counter(_status(r) for r in rows)
        return dict(sorted(statuses.items()))

    return {
        "by_status": count(adaptive),
        "by_task": {t: count(r for r in adaptive if r["task"] == t) for t in tasks.ADAPTIVE_TASKS},
    }


def latency(instances: Sequence[Row], sessions: Sequence[measures.Pushed]) -> Latency:
    """Appendix B.3, Tables 3, 8 and 9: means over the main probes of the twelve tasks.

    Evidence Availability replays hold only the two most recent sessions, so
    their latencies would pull the means down; they are summarised on their
    own under `evidence_availability`.
    """
    main = [r for r in instances if r["task"] in tasks.MAIN_TASKS]
    replays = [r for r in instances if r["task"] == tasks.EVIDENCE_AVAILABILITY]
    return {
        **measures.latency_of(main),
        "evidence_availability": measures.latency_of(replays),
        **measures.ingest(sessions),
    }


def format_failures(instances: Sequence[Row]) -> FormatFailures:
    """Appendix B.5, Tables 11-12: unrecoverable failures after deterministic repair.

    The rate divides by the probes of the twelve tasks (the paper's 5,371);
    Evidence Availability is reported on its own, in `evidence_availability`.
    """
    counts: dict[str, int] = defaultdict(int)
    totals: dict[str, int] = defaultdict(int)
    repaired = 0
    main = [r for r in instances if r["task"] in tasks.MAIN_TASKS]
    for r in main:
        totals[r["task"]] += 1
        counts[r["task"]] += r["format"] == FAILURE
        repaired += r["format"] == REPAIRED
    total = sum(counts.values())
    return {
        "total": total,
        "rate": total / len(main) if main else None,
        "probes": len(main),
        "repaired": repaired,
        "by_task": {t: counts[t] for t in tasks.MAIN_TASKS if counts[t]},
        "rate_by_task": {t: counts[t] / totals[t] for t in tasks.MAIN_TASKS if totals[t]},
    }


def score(
    instances: Sequence[SharedRow],
    sessions: Sequence[measures.Pushed],
    scoring: ScoringRecord | None = None,
) -> Report:
    """Every metric of the report; `scoring` (judge identity and settings) is recorded as is."""
    return _score(rows(instances), sessions, scoring or {})


def _score(
    instances: Sequence[Row], sessions: Sequence[measures.Pushed], scoring: ScoringRecord
) -> Report:
    by_task = task_scores(instances)
    families, overall = family_scores(by_task)
    return {
        "schema_version": SCHEMA_VERSION,
        "scoring": scoring.copy(),
        "tasks": by_task,
        "families": families,
        "overall": overall,
        "evidence_availability": evidence_availability(instances),
        "decision_accuracy": decision_accuracy(instances),
        "gate_pass_rate": gate_pass_rate(instances),
        "response_quality": response_quality(instances),
        "judge": judge_summary(instances),
        "format_failures": format_failures(instances),
        "latency": latency(instances, sessions),
        "storage": measures.storage(sessions),
    }
