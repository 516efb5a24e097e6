"""EgoProbe's scoring (sections 4.1, 4.3, 4.4 and appendix D.4).

- single-turn accuracy over the fixed question list (Base, Echo, both);
- accuracy per recall bucket (the paper reads its bucket table on Base,
  whose intervals hold no related event; Echo and both are shown beside it);
- R1 accuracy over all dialogues; two-turn accuracy over all dialogues, where
  a dialogue counts only when both rounds are right (one that never reached
  R2 counts zero); the three-way outcome split;
- event-linked errors on Echo grouped by the number of related events that
  support an alternative answer (Table 4: 1, 2, >=3; Table 8: 1, 2, 3, 4, >=5):
  accuracy, event-linked error rate, other-option error rate, and the
  uniform-choice reference 100 * sum(k_i / 4) / N, k_i the question's number
  of distinct event-grounded options;
- chance references: 25 % (four options), 50 % (R1), 12.5 % (two turns).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NotRequired, TypedDict, cast

from apmbench.harness.reports.head import RunFacts
from apmbench.harness.run.records import InstanceRow
from apmbench.harness.scoring import measures
from apmbench.harness.scoring.answers import (
    FAILURE,
    REPAIRED,
    ChoiceGraded,
    Graded,
    parse_choice,
)
from apmbench.harness.suites.base import Row as SharedRow
from apmbench.harness.suites.base import ScoringRecord
from apmbench.harness.suites.egoprobe import prompts
from apmbench.harness.suites.egoprobe.dataset import BUCKET_NAMES, QUESTION_TYPES
from apmbench.harness.suites.egoprobe.plan import R1, R2, SINGLE, Item, LabelFields, label_fields


class Chance(TypedDict):
    single_turn: float
    r1: float
    two_turn: float


SCHEMA_VERSION = 2
CHANCE: Chance = {"single_turn": 25.0, "r1": 50.0, "two_turn": 12.5}
EVENT_GROUPS = ("1", "2", ">=3")
FINE_EVENT_GROUPS = ("1", "2", "3", "4", ">=5")


class YesNoGrade(Graded, LabelFields):
    """A dialogue's R1 (is the event as asked?): yes, no or unparsed."""

    affirmative: bool | None
    correct: bool


class ChoiceGrade(ChoiceGraded, LabelFields):
    """A four-option question (single-turn or a dialogue's R2) and the kind of its error."""

    event_linked_error: bool
    other_error: bool


class Row(InstanceRow):
    """One EgoProbe instance row: the runner's fields, the ask's (`plan._fields`) and a
    `YesNoGrade` (R1) or `ChoiceGrade` (the others)."""

    video_id: str
    trajectory_id: str
    round: str
    question_id: str
    dialogue_id: str | None
    subset: str
    bucket: str
    recall_s: float
    event_distractors: int
    event_count: int
    question_type: NotRequired[str]
    answer: str | None
    format: str
    format_reason: str
    correct: bool
    affirmative: NotRequired[bool | None]
    correct_option_id: NotRequired[str]
    event_linked_error: NotRequired[bool]
    other_error: NotRequired[bool]


def rows(instances: Sequence[SharedRow]) -> list[Row]:
    """The shared machinery's rows as this suite's: each was built from one of its asks
    (`plan._fields`) and graded by `grade`."""
    return [cast(Row, r) for r in instances]


class Accuracy(TypedDict):
    n: int
    accuracy: float | None


class BySubset(TypedDict):
    all: Accuracy
    base: Accuracy
    echo: Accuracy


class RandomChoice(TypedDict):
    accuracy: float | None
    event_error: float | None
    other_error: float | None


class EventGroup(TypedDict):
    n: int
    accuracy: float | None
    event_error: float | None
    other_error: float | None
    random: RandomChoice
    """What a uniform guess would score on the group."""


class EventLinked(TypedDict):
    by_event_count: dict[str, EventGroup]
    by_event_count_fine: NotRequired[dict[str, EventGroup]]
    """Table 8's finer groups (absent in older reports)."""
    wrong_answers: int
    wrong_echo_answers: int
    share_event_linked: float | None
    share_other: float | None


class Outcomes(TypedDict):
    r1_wrong: float | None
    r1_right_r2_wrong: float | None
    both_right: float | None


class Dialogues(TypedDict):
    n: int
    r1_accuracy: float | None
    two_turn_accuracy: float | None
    reached_r2: int
    outcomes: Outcomes


class FormatFailures(TypedDict):
    total: int
    repaired: int
    queries: int
    by_round: dict[str, int]


class Report(RunFacts):
    """report.json of an EgoProbe run."""

    schema_version: int
    benchmark: str
    scoring: ScoringRecord
    single_turn: BySubset
    buckets: dict[str, BySubset]
    question_types: NotRequired[dict[str, BySubset]]
    """By the question types the dataset names (absent in older reports)."""
    dialogues: Dialogues
    event_linked: EventLinked
    chance: Chance
    format_failures: FormatFailures
    latency: measures.LatencyAndIngest
    storage: measures.Storage


def grade(item: Item, text: str) -> YesNoGrade | ChoiceGrade:
    q = item.question
    if item.round == R1:
        parsed = parse_choice(text, [(c.option_id, c.text) for c in prompts.YES_NO])
        yes = prompts.said_yes(text)
        return {
            **label_fields(item),
            "answer": parsed.option,
            "format": parsed.status,
            "format_reason": parsed.reason,
            "affirmative": yes,
            "correct": yes is True,
        }
    parsed = parse_choice(text, list(q.options))
    linked = parsed.option is not None and parsed.option in q.distractors
    correct = parsed.option is not None and parsed.option == q.answer
    return {
        **label_fields(item),
        "answer": parsed.option,
        "format": parsed.status,
        "format_reason": parsed.reason,
        "correct_option_id": q.answer,
        "correct": correct,
        "event_linked_error": linked,
        "other_error": not correct and not linked,
    }


def _pct(hits: int, n: int) -> float | None:
    return 100.0 * hits / n if n else None


def accuracy(rows: Iterable[Row]) -> Accuracy:
    rows = list(rows)
    return {"n": len(rows), "accuracy": _pct(sum(bool(r["correct"]) for r in rows), len(rows))}


def _group(n_events: int, fine: bool) -> str:
    cap = 5 if fine else 3
    return f">={cap}" if n_events >= cap else str(n_events)


def _groups(echo: Sequence[Row], names: Sequence[str], fine: bool) -> dict[str, EventGroup]:
    """Echo questions grouped by the number of related events supporting an alternative
    answer (section 4.4's key, not the number of distinct distractors k): accuracy, both
    error rates, and the random-choice row. A uniform guess picks each option with
    probability 1/4, so over a group of N questions where question i offers k_i
    event-grounded options it expects 25 % accuracy, 100 * sum(k_i) / (4N) % event-linked
    errors and the rest, 75 % minus that, other errors."""
    out: dict[str, EventGroup] = {}
    for name in names:
        rows = [r for r in echo if _group(int(r["event_count"]), fine) == name]
        n = len(rows)
        event_ref = _pct(sum(int(r["event_distractors"]) for r in rows), 4 * n)
        out[name] = {
            "n": n,
            "accuracy": _pct(sum(bool(r["correct"]) for r in rows), n),
            "event_error": _pct(sum(bool(r["event_linked_error"]) for r in rows), n),
            "other_error": _pct(sum(bool(r["other_error"]) for r in rows), n),
            "random": {
                "accuracy": 25.0 if n else None,
                "event_error": event_ref,
                "other_error": None if event_ref is None else 75.0 - event_ref,
            },
        }
    return out


def event_linked(singles: Sequence[Row]) -> EventLinked:
    echo = [r for r in singles if r["subset"] == "echo"]
    wrong = [r for r in singles if not r["correct"]]
    wrong_echo = [r for r in echo if not r["correct"]]
    return {
        # Table 4's groups (1, 2, >=3 events) and Table 8's (1, 2, 3, 4, >=5).
        "by_event_count": _groups(echo, EVENT_GROUPS, fine=False),
        "by_event_count_fine": _groups(echo, FINE_EVENT_GROUPS, fine=True),
        # Of the wrong answers, how many chose a detail of another real event.
        "wrong_answers": len(wrong),
        "wrong_echo_answers": len(wrong_echo),
        "share_event_linked": _pct(
            sum(bool(r["event_linked_error"]) for r in wrong_echo), len(wrong_echo)
        ),
        "share_other": _pct(sum(bool(r["other_error"]) for r in wrong_echo), len(wrong_echo)),
    }


def dialogues(instances: Sequence[Row]) -> Dialogues:
    firsts = [r for r in instances if r["round"] == R1]
    seconds = {r["dialogue_id"]: r for r in instances if r["round"] == R2}
    n = len(firsts)
    r1_right = [r for r in firsts if r["correct"]]
    both = [r for r in r1_right if (r2 := seconds.get(r["dialogue_id"])) and r2["correct"]]
    reached = sum(r["dialogue_id"] in seconds for r in firsts)
    return {
        "n": n,
        "r1_accuracy": _pct(len(r1_right), n),
        "two_turn_accuracy": _pct(len(both), n),
        "reached_r2": reached,
        "outcomes": {
            "r1_wrong": _pct(n - len(r1_right), n),
            "r1_right_r2_wrong": _pct(len(r1_right) - len(both), n),
            "both_right": _pct(len(both), n),
        },
    }


def by_subset(rows: Sequence[Row]) -> BySubset:
    """Accuracy over all the rows, and over those of each subset (Base, Echo)."""
    return {
        "all": accuracy(rows),
        "base": accuracy(r for r in rows if r["subset"] == "base"),
        "echo": accuracy(r for r in rows if r["subset"] == "echo"),
    }


def buckets(singles: Sequence[Row]) -> dict[str, BySubset]:
    return {b: by_subset([r for r in singles if r["bucket"] == b]) for b in BUCKET_NAMES}


def question_types(singles: Sequence[Row]) -> dict[str, BySubset]:
    """Single-turn accuracy per question type the dataset names (section 3.4's kinds)."""
    out: dict[str, BySubset] = {}
    for t in QUESTION_TYPES:
        rows = [r for r in singles if r.get("question_type") == t]
        if rows:
            out[t] = by_subset(rows)
    return out


def format_failures(instances: Sequence[Row]) -> FormatFailures:
    return {
        "total": sum(r["format"] == FAILURE for r in instances),
        "repaired": sum(r["format"] == REPAIRED for r in instances),
        "queries": len(instances),
        "by_round": {
            k: sum(r["format"] == FAILURE for r in instances if r["round"] == k)
            for k in (SINGLE, R1, R2)
        },
    }


def score(
    instances_: Sequence[SharedRow],
    sessions: Sequence[measures.Pushed],
    scoring: ScoringRecord | None = None,
) -> Report:
    instances = rows(instances_)
    singles = [r for r in instances if r["round"] == SINGLE]
    return {
        "schema_version": SCHEMA_VERSION,
        "benchmark": "egoprobe",
        "scoring": (scoring or {}).copy(),
        "single_turn": by_subset(singles),
        "buckets": buckets(singles),
        "question_types": question_types(singles),
        "dialogues": dialogues(instances),
        "event_linked": event_linked(singles),
        "chance": CHANCE.copy(),
        "format_failures": format_failures(instances),
        "latency": measures.latency_and_ingest(instances, sessions),
        "storage": measures.storage(sessions),
    }
