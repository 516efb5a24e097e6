"""ProactEgoMem's matching and metrics (paper section 5.1, appendix K.4).

Predictions are matched one to one to ground truth by Hungarian matching
(scipy.optimize.linear_sum_assignment). An edge is admitted only when the
similarity is at least `min_sim` and, at both levels (section 5.1), the start
offset Δ = predicted start - true start lies in the asymmetric window
[-early_s, late_s] (a hard cutoff); at the Intervention Level, where
predictions are intervals, the edge also needs a positive temporal overlap.
Overlap alone would admit a tracker opened at t = 0 and never closed against
every event of the clip. Among admitted edges the assignment
minimises α(1 - sim) + (1 - α)(|Δ| / W)^p, W the window side Δ falls on.
Equal costs go to the earlier prediction (a tie-break far below any real
cost difference), so a matching never depends on the solver's internals.

Metrics per level: Start@τ (the fraction of matched actions with |Δ| <= τ;
Start@0.2 is the headline), mean |Δ| and its standard deviation, precision
over emitted actions, recall over ground-truth events, F1; Intervention only:
mIoU over every ground-truth opportunity (unmatched = 0) and IoU@τ (the
fraction of opportunities matched with IoU >= τ). With no matched action,
Start@τ is 0 and the error None: silence is not on time.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NotRequired, TypedDict, cast

import numpy as np
from scipy.optimize import linear_sum_assignment

from apmbench.harness.reports.head import RunFacts
from apmbench.harness.run.records import InstanceRow
from apmbench.harness.scoring import measures
from apmbench.harness.scoring.answers import ChoiceGraded, parse_choice
from apmbench.harness.suites.base import Row as SharedRow
from apmbench.harness.suites.base import ScoringRecord
from apmbench.harness.suites.proactegomem import prompts
from apmbench.harness.suites.proactegomem.dataset import TASKS
from apmbench.harness.suites.proactegomem.tools import INTERVENTION, NOTIFICATION, PER_STEP, replay

SCHEMA_VERSION = 1
START_TAUS = (0.2, 0.5, 1.0, 2.0)
IOU_TAUS = (0.3, 0.5, 0.7)

Similarities = dict[str, float | None]
"""A group's judged pairs: "prediction,truth" index -> similarity (None: unjudged)."""


class StepGrade(TypedDict):
    """A step's grading: whether it parsed (its effect is replayed by `score`), and the
    clip's annotated events the matching reads."""

    format: str
    format_reason: str
    ground_truth: str


ChoiceGrade = ChoiceGraded
"""A memory question's grading."""


class Row(InstanceRow):
    """One ProactEgoMem instance row: the runner's fields, the ask's (`plan.plan_clip`: a
    step's or a memory question's, by `role`) and its grading. The judging pass writes
    the similarities of a group's pairs into the group's first step row."""

    role: str
    trajectory_id: str
    task: str
    format: str
    format_reason: str
    labels_withheld: NotRequired[bool]
    # A step's:
    level: NotRequired[str]
    step_index: NotRequired[int]
    clip_end_s: NotRequired[float]
    ground_truth: NotRequired[str]
    """The clip's events as JSON (what `truths` reads)."""
    synthetic: NotRequired[bool]
    track: NotRequired[str]
    similarity: NotRequired[Similarities]
    closing: NotRequired[Similarities]
    # A memory question's:
    condition: NotRequired[str]
    question_id: NotRequired[str]
    category: NotRequired[str]
    answer: NotRequired[str | None]
    correct_option_id: NotRequired[str]
    correct: NotRequired[bool]


def rows(instances: Sequence[SharedRow]) -> list[Row]:
    """The shared machinery's rows as this suite's: each was built from one of its asks
    (`plan.plan_clip`) and graded by `ProactEgoMem.grade`."""
    return [cast(Row, r) for r in instances]


class SignedErrors(TypedDict):
    """The signed start errors of matched pairs: quartiles and the sorted values."""

    n: int
    median: float | None
    q1: float | None
    q3: float | None
    values: list[float]


class ClosingCell(TypedDict):
    matched: int
    correct: int
    share: float | None


class Metrics(TypedDict):
    """One level's metric groups over some clips (`summarize`); every number the matching
    decides is None when it is not computed (real data without a judge)."""

    predictions: int
    ground_truth: int
    matched: int | None
    start_at: dict[str, float] | None
    abs_error_s: float | None
    abs_error_sd_s: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    start_error_s: SignedErrors | None
    late_share: float | None
    miou: NotRequired[float | None]
    """Intervention Level only, as are `iou_at` and `closing_message`."""
    iou_at: NotRequired[dict[str, float] | None]
    closing_message: NotRequired[ClosingCell | None]


class ToolCounts(TypedDict):
    invalid_calls: int
    unparseable: int
    tool_calls: int


class StepCounts(ToolCounts):
    steps: int


class Level(Metrics, StepCounts):
    """A level pooled over every clip, with its counts, per task and per clip."""

    by_task: dict[str, Metrics]
    clips: dict[str, Metrics]


class TaskAccuracy(TypedDict):
    n: int
    accuracy: float


class QACell(TypedDict):
    """Memory QA accuracy under one memory condition."""

    n: int
    accuracy: float | None
    by_category: dict[str, float]
    by_task: dict[str, TaskAccuracy]
    not_run: NotRequired[str]


class View(TypedDict):
    name: str
    text: str


class Report(RunFacts):
    """report.json of a ProactEgoMem run."""

    schema_version: int
    benchmark: str
    scoring: ScoringRecord
    similarity: str
    per_step_view: View
    track: str | None
    matching: dict[str, float | str]
    levels: dict[str, Level]
    qa: dict[str, QACell]
    latency: measures.LatencyAndIngest
    storage: measures.Storage


W_SIDE = "side"
"""W is the side of the window the start error falls on (early_s before, late_s after)."""
W_WIDER = "wider"
"""W is the wider side, whichever way the error falls."""


@dataclass(frozen=True)
class Params:
    """The matcher's settings. The paper names the cost, alpha (1 - sim) + (1 - alpha)
    (|delta| / W)^p, and a window, but prints none of the values (docs/PROACTEGOMEM.md,
    "Sensitivity of the matching", measures how much each moves the metrics)."""

    min_sim: float = 0.5
    alpha: float = 0.5
    p: float = 1.5
    early_s: float = 2.0
    late_s: float = 5.0
    w: str = W_SIDE
    """How W is taken: `W_SIDE` (the default) or `W_WIDER`."""

    def as_dict(self) -> dict[str, float | str]:
        return {
            "min_sim": self.min_sim,
            "alpha": self.alpha,
            "p": self.p,
            "early_s": self.early_s,
            "late_s": self.late_s,
            "w": self.w,
        }


DEFAULT = Params()


@dataclass(frozen=True)
class Span:
    """A prediction or a ground-truth opportunity: a moment (start == end) or an interval."""

    start: float
    end: float
    text: str
    closing: str = ""
    """Intervention: the message of the step that stopped the tracker ("" if none)."""


@dataclass(frozen=True)
class Pair:
    pred: int
    truth: int
    sim: float
    delta: float
    iou: float


def iou(a: Span, b: Span) -> float:
    inter = min(a.end, b.end) - max(a.start, b.start)
    union = max(a.end, b.end) - min(a.start, b.start)
    if inter <= 0 or union <= 0:
        return 0.0
    return inter / union


def _window(delta: float, params: Params) -> float:
    if params.w == W_WIDER:
        return max(params.early_s, params.late_s)
    return params.early_s if delta < 0 else params.late_s


def gated(pred: Span, truth: Span, level: str, params: Params) -> bool:
    """The time gate of an edge: the start window at both levels, and overlap (Intervention)."""
    in_window = -params.early_s <= pred.start - truth.start <= params.late_s
    if level == INTERVENTION:
        return in_window and iou(pred, truth) > 0
    return in_window


def match(
    preds: Sequence[Span],
    truths: Sequence[Span],
    sim: Callable[[Span, Span], float],
    level: str,
    params: Params = Params(),
) -> list[Pair]:
    """The minimum-cost one-to-one matching over admitted edges."""
    if not preds or not truths:
        return []
    big = 1e6
    cost = np.full((len(preds), len(truths)), big)
    info: dict[tuple[int, int], tuple[float, float, float]] = {}
    for i, p in enumerate(preds):
        for j, t in enumerate(truths):
            if not gated(p, t, level, params):
                continue
            s = sim(t, p)
            if s < params.min_sim:
                continue
            delta = p.start - t.start
            overlap = iou(p, t)
            time_term = (abs(delta) / _window(delta, params)) ** params.p
            cost[i, j] = params.alpha * (1 - s) + (1 - params.alpha) * time_term + 1e-9 * i
            info[(i, j)] = (s, delta, overlap)
    rows, cols = linear_sum_assignment(cost)
    pairs = [
        Pair(int(i), int(j), *info[(int(i), int(j))])
        for i, j in zip(rows, cols, strict=True)
        if (int(i), int(j)) in info
    ]
    return sorted(pairs, key=lambda q: q.truth)


def _signed(pairs: Sequence[Pair]) -> SignedErrors:
    """The distribution of Δ = predicted - true start over matched pairs: quartiles and the
    sorted values themselves (a plot reads them)."""
    deltas = sorted(q.delta for q in pairs)
    if not deltas:
        return {"n": 0, "median": None, "q1": None, "q3": None, "values": []}
    quart = np.quantile(np.array(deltas), [0.25, 0.5, 0.75])
    return {
        "n": len(deltas),
        "median": float(quart[1]),
        "q1": float(quart[0]),
        "q3": float(quart[2]),
        "values": deltas,
    }


def summarize(pairs: Sequence[Pair], n_pred: int, n_truth: int, level: str) -> Metrics:
    """The metric groups of one level, pooled over whatever `pairs` cover."""
    matched = len(pairs)
    errors = [abs(q.delta) for q in pairs]
    precision = matched / n_pred if n_pred else 0.0
    recall = matched / n_truth if n_truth else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    out: Metrics = {
        "predictions": n_pred,
        "ground_truth": n_truth,
        "matched": matched,
        "start_at": {
            f"{tau:g}": 100.0 * sum(e <= tau + 1e-9 for e in errors) / matched if matched else 0.0
            for tau in START_TAUS
        },
        "abs_error_s": sum(errors) / matched if matched else None,
        "abs_error_sd_s": (
            math.sqrt(sum((e - sum(errors) / matched) ** 2 for e in errors) / matched)
            if matched
            else None
        ),
        "precision": 100.0 * precision,
        "recall": 100.0 * recall,
        "f1": 100.0 * f1,
        # Figures 9 and 13: the signed start errors (Δ > 0: late) and the share of late starts.
        "start_error_s": _signed(pairs),
        "late_share": 100.0 * sum(q.delta > 0 for q in pairs) / matched if matched else None,
    }
    if level == INTERVENTION:
        ious = [q.iou for q in pairs]
        out["miou"] = 100.0 * sum(ious) / n_truth if n_truth else 0.0
        out["iou_at"] = {
            f"{tau:g}": 100.0 * sum(v >= tau for v in ious) / n_truth if n_truth else 0.0
            for tau in IOU_TAUS
        }
    return out


# -- similarity -----------------------------------------------------------------------------

WORD_MATCH = (
    "synthetic reference judge: deterministic word match on the generator's object names "
    "(not the paper's LLM judge)"
)
NO_JUDGE = (
    "not computed: no judge configured, and the matcher's similarity on real data needs one "
    "(--judge openai --judge-model M --judge-base-url URL, or transformers:PATH); the word "
    "match stands in only on the synthetic suite"
)
JUDGED = ("matched", "start_at", "abs_error_s", "abs_error_sd_s", "precision", "recall", "f1",
          "miou", "iou_at", "start_error_s", "late_share", "closing_message")  # fmt: skip
"""What the matching decides, so what needs a similarity: n/c without one."""


def word_match(truth: Span, pred: Span) -> float:
    """1.0 when every word of the ground-truth object appears in the prediction, else 0.0."""
    want = set(re.findall(r"[a-z0-9]+", truth.text.lower()))
    have = set(re.findall(r"[a-z0-9]+", pred.text.lower()))
    return 1.0 if want and want <= have else 0.0


# -- grading --------------------------------------------------------------------------------


def grade_qa(choices: Sequence[tuple[str, str]], answer: str, text: str) -> ChoiceGrade:
    parsed = parse_choice(text, list(choices))
    return {
        "answer": parsed.option,
        "format": parsed.status,
        "format_reason": parsed.reason,
        "correct_option_id": answer,
        "correct": parsed.option is not None and parsed.option == answer,
    }


# -- scoring --------------------------------------------------------------------------------


def acted_steps(rows: Sequence[Row]) -> list[tuple[int, float, str]]:
    """A clip's steps as (index, time acted in seconds, raw answer), for replaying its tool
    calls. Live (`evaluate --live`), a step acts when its answer arrived (`effective_ms`)
    and one dropped for a newer step made no call; offline, each acts at its own time."""
    return [
        (r["step_index"], r.get("effective_ms", r["time_ms"]) / 1000.0, r["raw_output"])
        for r in rows
        if not r.get("live_dropped")
    ]


def predictions(
    level: str, task: str, steps: Iterable[tuple[int, float, str]], end_s: float
) -> tuple[list[Span], ToolCounts]:
    """A clip's predictions at one level from its recorded raw answers, replayed."""
    state, actions = replay(task, level, steps)
    counts: ToolCounts = {
        "invalid_calls": state.invalid_calls,
        "unparseable": state.unparseable,
        "tool_calls": sum(a["kind"] == "tool_call" for a in actions),
    }
    if level == NOTIFICATION:
        # At this level every action is a message (never None: a step without one acts not).
        spans = [Span(a["time_sec"], a["time_sec"], a["message"] or "") for a in actions]
        return spans, counts
    spans = [
        Span(
            r["started_at_sec"],
            r["ended_at_sec"],
            str(r["arguments"].get("name", "")),
            state.closing.get(r["instance_id"]) or "",
        )
        for r in state.intervals(end_s)
    ]
    return spans, counts


def truths(level: str, task: str, ground_truth: str) -> list[Span]:
    events = json.loads(ground_truth)
    if level == INTERVENTION:
        return [Span(e["start_s"], e["end_s"], e["object"]) for e in events]
    # Word match reads the object; a real judge compares prompts.NOTIFICATION_REFERENCES.
    return [Span(e["start_s"], e["start_s"], e["object"]) for e in events]


def clip_groups(instances: Sequence[Row]) -> dict[tuple[str, str], list[Row]]:
    """Step rows by (level, clip), each group in step order."""
    clips: dict[tuple[str, str], list[Row]] = {}
    for r in instances:
        if r.get("role") == "step":
            clips.setdefault((r["level"], r["trajectory_id"]), []).append(r)
    return {k: sorted(v, key=lambda r: r["step_index"]) for k, v in sorted(clips.items())}


def _judged(
    table: Similarities, preds: Sequence[Span], gts: Sequence[Span]
) -> Callable[[Span, Span], float]:
    """The judge's similarities of one group (an unjudged pair: 0, no edge)."""
    index = {id(p): i for i, p in enumerate(preds)} | {id(t): j for j, t in enumerate(gts)}

    def sim(truth: Span, pred: Span) -> float:
        value = table.get(f"{index[id(pred)]},{index[id(truth)]}")
        return 0.0 if value is None else float(value)

    return sim


def _closing(pairs: Sequence[Pair], table: Similarities | None) -> tuple[int, int]:
    """(matched pairs, those whose closing message the judge accepted: >= 0.5)."""
    table = table or {}
    good = sum(float(table.get(f"{q.pred},{q.truth}") or 0.0) >= 0.5 for q in pairs)
    return len(pairs), good


def _closing_cell(counts: Sequence[int] | None) -> ClosingCell | None:
    if counts is None:
        return None
    n, good = counts
    return {"matched": n, "correct": good, "share": _share(good, n)}


def _share(k: int, n: int) -> float | None:
    return 100.0 * k / n if n else None


def score_levels(
    instances: Sequence[Row],
    sim: Callable[[Span, Span], float] = word_match,
    params: Params = Params(),
    closing_judged: bool = False,
) -> dict[str, Level]:
    """Per level: the metrics pooled, per task and per clip; at the Intervention Level with
    `closing_judged`, the share of matched trackers whose closing message the judge accepted
    (section 5.6: explanations conditioned on true positives)."""
    clips = clip_groups(instances)
    out: dict[str, Level] = {}
    for level in (INTERVENTION, NOTIFICATION):
        pooled: list[Pair] = []
        n_pred = n_truth = 0
        counts: StepCounts = {"invalid_calls": 0, "unparseable": 0, "tool_calls": 0, "steps": 0}
        per_clip: dict[str, Metrics] = {}
        # The paper reports each task (IC, ST, LT) on its own: pooled per task as well.
        tasks: dict[str, tuple[list[Pair], list[int]]] = {}
        closing = [0, 0]
        closing_by_task: dict[str, list[int]] = {}
        for (lv, clip), rows in clips.items():
            if lv != level:
                continue
            head = rows[0]
            steps = acted_steps(rows)
            preds, c = predictions(level, head["task"], steps, head["clip_end_s"])
            gts = truths(level, head["task"], head["ground_truth"])
            judged = head.get("similarity")
            group_sim = sim if judged is None else _judged(judged, preds, gts)
            pairs = match(preds, gts, group_sim, level, params)
            if level == INTERVENTION:
                n_ok = _closing(pairs, head.get("closing"))
                closing[0] += n_ok[0]
                closing[1] += n_ok[1]
                task_closing = closing_by_task.setdefault(head["task"], [0, 0])
                task_closing[0] += n_ok[0]
                task_closing[1] += n_ok[1]
            pooled += pairs
            n_pred += len(preds)
            n_truth += len(gts)
            task_pairs, task_counts = tasks.setdefault(head["task"], ([], [0, 0]))
            task_pairs += pairs
            task_counts[0] += len(preds)
            task_counts[1] += len(gts)
            counts["invalid_calls"] += c["invalid_calls"]
            counts["unparseable"] += c["unparseable"]
            counts["tool_calls"] += c["tool_calls"]
            counts["steps"] += len(rows)
            per_clip[clip] = summarize(pairs, len(preds), len(gts), level)
        if not per_clip:
            continue
        by_task = {
            t: summarize(tasks[t][0], tasks[t][1][0], tasks[t][1][1], level)
            for t in TASKS
            if t in tasks
        }
        out[level] = {
            **summarize(pooled, n_pred, n_truth, level),
            **counts,
            "by_task": by_task,
            "clips": per_clip,
        }
        if level == INTERVENTION:
            out[level]["closing_message"] = _closing_cell(closing if closing_judged else None)
            for t, cell in by_task.items():
                cell["closing_message"] = _closing_cell(
                    closing_by_task[t] if closing_judged else None
                )
    return out


ORACLE_WITHHELD = "labels withheld at evaluation: the Oracle Memory condition shows them"
"""Why a run on a public part of `apmbench-grpc split` has no Oracle Memory numbers: the
condition lists the ground-truth events to the system, which the public part must not hold."""


def qa_accuracy(instances: Sequence[Row]) -> dict[str, QACell]:
    """Accuracy per memory condition; on a run whose labels were withheld the Oracle Memory
    cell says it was not run (`not_run`), with n 0 and no accuracy."""
    withheld = any(r.get("labels_withheld") for r in instances)
    out: dict[str, QACell] = {}
    for condition in prompts.CONDITIONS:
        rows = [r for r in instances if r.get("role") == "qa" and r["condition"] == condition]
        hits = sum(bool(r["correct"]) for r in rows)
        cats: dict[str, list[bool]] = {}
        for r in rows:
            cats.setdefault(r["category"], []).append(bool(r["correct"]))
        tasks: dict[str, list[bool]] = {}
        for r in rows:
            tasks.setdefault(r.get("task", ""), []).append(bool(r["correct"]))
        out[condition] = {
            "n": len(rows),
            "accuracy": 100.0 * hits / len(rows) if rows else None,
            "by_category": {k: 100.0 * sum(v) / len(v) for k, v in sorted(cats.items())},
            "by_task": {
                t: {"n": len(tasks[t]), "accuracy": 100.0 * sum(tasks[t]) / len(tasks[t])}
                for t in TASKS
                if t in tasks
            },
        }
        if withheld and condition == prompts.ORACLE_MEMORY:
            out[condition]["not_run"] = ORACLE_WITHHELD
    return out


PER_STEP_VIEW: View = {
    "name": "streamed",
    "text": (
        "streamed: every frame once, in order, to one stateful system per pass; each step's "
        "prompt is the paper's, with the context JSON the harness renders from its tool "
        "state and the listing of the 10 most recent frames (the paper's window), so a "
        "system that keeps only those 10 frames sees exactly what the paper's models see, "
        "and one with a memory may use more"
    ),
}
"""What a system sees at each step (section 5.2 gives its models the context and a window
of 10 frames per step; this harness measures memory systems, which see the stream)."""

PER_STEP_CONDITION: View = {
    "name": PER_STEP,
    "text": (
        "per-step (the paper's condition, --variant per-step): every step is its own "
        "runtime instance from an empty memory (a fresh process in restart persistence, "
        "the system's Reset otherwise), given only the 10 most recent frames, then the "
        "paper's prompt with the context JSON and their listing; the tool state (the "
        "harness's) runs on, and nothing the system keeps reaches the next step but through "
        "the channels the guarantees page lists as open (with spares, the page cache: "
        "--no-spare closes it)"
    ),
}


def _blank(cell: Metrics) -> None:
    """Blank every number of `cell` the matching decides (`JUDGED`; counts stay)."""
    cell["matched"] = None
    cell["start_at"] = None
    cell["abs_error_s"] = None
    cell["abs_error_sd_s"] = None
    cell["precision"] = None
    cell["recall"] = None
    cell["f1"] = None
    cell["start_error_s"] = None
    cell["late_share"] = None
    if "miou" in cell:
        cell["miou"] = None
    if "iou_at" in cell:
        cell["iou_at"] = None
    if "closing_message" in cell:
        cell["closing_message"] = None


def _not_computed(cell: Level) -> None:
    """Blank every matched number of a level cell, its tasks and clips (counts stay)."""
    _blank(cell)
    for sub in (*cell["by_task"].values(), *cell["clips"].values()):
        _blank(sub)


def _unjudged(truth: Span, pred: Span) -> float:
    return 0.0


def _track(steps: Sequence[Row]) -> str | None:
    """The dataset's track (the paper's Daily or Sci), when it names one."""
    tracks = {str(r["track"]) for r in steps if r.get("track")}
    return ", ".join(sorted(tracks)) or None


def _variant(scoring: ScoringRecord | None) -> object:
    signature = (scoring or {}).get("signature")
    return signature.get("variant") if signature is not None else None


def score(
    instances_: Sequence[SharedRow],
    sessions: Sequence[measures.Pushed],
    scoring: ScoringRecord | None = None,
) -> Report:
    instances = rows(instances_)
    params = Params()
    judged = [r["similarity"] for r in instances if "similarity" in r]
    judge_kind = str(((scoring or {}).get("judge") or {}).get("kind", "none"))
    steps = [r for r in instances if r.get("role") == "step"]
    synthetic = bool(steps) and all(r.get("synthetic") for r in steps)
    similarity = WORD_MATCH
    if judged or judge_kind != "none":
        unjudged = sum(v is None for table in judged for v in table.values())
        similarity = f"LLM judge (appendix K.5 prompts; {unjudged} pairs unjudged, scored 0)"
    elif not synthetic:
        similarity = NO_JUDGE
    # With a judge, a pair it was not asked about (none in the window) has no similarity.
    fallback = word_match if similarity == WORD_MATCH else _unjudged
    levels = score_levels(instances, fallback, params, closing_judged=fallback is _unjudged)
    if similarity == NO_JUDGE:
        for cell in levels.values():
            _not_computed(cell)
    return {
        "schema_version": SCHEMA_VERSION,
        "benchmark": "proactegomem",
        "scoring": (scoring or {}).copy(),
        "similarity": similarity,
        "per_step_view": PER_STEP_CONDITION if _variant(scoring) == PER_STEP else PER_STEP_VIEW,
        "track": _track(steps),
        "matching": params.as_dict(),
        "levels": levels,
        "qa": qa_accuracy(instances),
        "latency": measures.latency_and_ingest(instances, sessions),
        "storage": measures.storage(sessions),
    }
