"""A video's plan: one chronological pass, every question and dialogue at its query time.

Queries are read-only (protocol rule R5), so each is its own isolated branch
of the state the stream has built so far; the runner pushes exactly the
frames up to the query time and no later one. A dialogue is an R1 ask whose
follow-up, R2, the runner asks right after it only when R1 parsed as "yes",
with R1's actual answer in R2's dialogue and no frame in between.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from apmbench.adapters.sdk.types import Choice, Query, QueryKind
from apmbench.harness.json_types import JsonObject
from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.run.plan import Ask, FollowUp, Segment, sorted_asks
from apmbench.harness.suites.egoprobe import prompts
from apmbench.harness.suites.egoprobe.dataset import Dataset, Dialogue, Question

SINGLE, R1, R2 = "single", "R1", "R2"


@dataclass(frozen=True)
class Item:
    """What grades one ask: the round and its question (for R1 and R2, the parent's)."""

    round: str
    question: Question
    dialogue: Dialogue | None = None


def _choices(q: Question) -> tuple[Choice, ...]:
    return tuple(Choice(o, text) for o, text in q.options)


def _fields(item: Item) -> JsonObject:
    """What identifies an ask in its record; what the annotations say of its question (its
    subset, bucket, recall interval, ...) comes with the grading (`label_fields`)."""
    q = item.question
    return {
        "video_id": q.video_id,
        "trajectory_id": q.video_id,
        "round": item.round,
        "question_id": q.question_id,
        "dialogue_id": item.dialogue.dialogue_id if item.dialogue else None,
    }


class LabelFields(TypedDict):
    """What the annotations say of an instance's question, put in its row by grading."""

    subset: str
    bucket: str
    recall_s: float
    event_distractors: int
    event_count: int
    question_type: str


def label_fields(item: Item) -> LabelFields:
    q = item.question
    return {
        "subset": q.subset,
        "bucket": q.bucket,
        "recall_s": q.recall_s,
        "event_distractors": len(q.distractors),
        "event_count": q.event_count,
        "question_type": q.question_type,
    }


def _ask(instance_id: str, item: Item, query: Query, follow_up: FollowUp | None = None) -> Ask:
    q = item.question
    return Ask(instance_id, q.session_index, q.time_ms, query, _fields(item), follow_up)


def single_ask(q: Question) -> Ask:
    choices = _choices(q)
    query = Query(
        "",
        q.time_ms,
        QueryKind.MULTIPLE_CHOICE,
        prompts.SYSTEM_PROMPT,
        prompts.single(q.question, choices),
        q.question,
        choices,
    )
    return _ask(q.question_id, Item(SINGLE, q), query)


def affirmative(text: str) -> bool:
    """R2 follows only a parsed "yes"; a "no" or an unparsable R1 ends the dialogue (the
    same parse as R1's grading, which needs no label)."""
    return prompts.said_yes(text) is True


def dialogue_asks(d: Dialogue) -> Ask:
    q = d.parent
    choices = _choices(q)
    r2 = Query(
        "",
        q.time_ms,
        QueryKind.MULTIPLE_CHOICE,
        prompts.SYSTEM_PROMPT,
        prompts.second_round(d.r2_question, choices),
        d.r2_question,
        choices,
    )
    r1 = Query(
        "",
        q.time_ms,
        QueryKind.MULTIPLE_CHOICE,
        prompts.SYSTEM_PROMPT,
        prompts.first_round(d.r1_question),
        d.r1_question,
        prompts.YES_NO,
    )
    second = _ask(f"{d.dialogue_id}:R2", Item(R2, q, d), r2)
    follow_up = FollowUp(second, affirmative, prompts.with_dialogue)
    return _ask(f"{d.dialogue_id}:R1", Item(R1, q, d), r1, follow_up)


def items(dataset: Dataset) -> dict[str, Item]:
    out: dict[str, Item] = {q.question_id: Item(SINGLE, q) for q in dataset.questions}
    for d in dataset.dialogues:
        out[f"{d.dialogue_id}:R1"] = Item(R1, d.parent, d)
        out[f"{d.dialogue_id}:R2"] = Item(R2, d.parent, d)
    return out


def single_turn_first(asks: list[Ask]) -> tuple[Ask, ...]:
    """Time order; at one time, every single-turn question before any dialogue. Only Echo
    questions have dialogues, and ids sorted a dialogue (D0004:R1) before its parent
    (Q0004) at their shared time: a system that kept R2's question knew its parent was
    Echo before answering it (a red team's EgoProbe memory of 670 B/hr, place -> last
    object, ruled its remembered object out there: Echo 12.5 -> 37.5, All 75.0 -> 82.1 on
    `small` seed 0). Asked after its parent, a dialogue tells nothing the parent's answer
    can still use."""
    return tuple(sorted(sorted_asks(asks), key=lambda a: (a.time_ms, a.follow_up is not None)))


def plan_video(dataset: Dataset, trajectory: Trajectory) -> list[Segment]:
    vid = trajectory.trajectory_id
    asks = [single_ask(q) for q in dataset.questions_of(vid)]
    asks += [dialogue_asks(d) for d in dataset.dialogues_of(vid)]
    return [
        Segment(
            kind="main",
            name="main",
            first_session=0,
            last_session=len(trajectory.sessions) - 1,
            snapshot_after=None,
            turns=(),
            asks=single_turn_first(asks),
            stop_after_last_ask=False,
        )
    ]
