"""The runner cannot reach a label: every plan it receives holds no labelled object and no
label field. An ask carries its wire-ready query and the fields that identify it; what the
annotations say of it (a correct option, a probe's polarity, a question's subset or bucket,
a clip's events) joins its row only when scoring grades the raw answer, against the suite's
item of its instance id. The walk follows every attribute, container and closure cell of
every ask (follow-ups included) and, for the suites whose segments hold no harness-owned
state, of every segment too."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from apmbench.harness.run.plan import Ask, Segment
from apmbench.harness.suites import datasets, get_suite
from apmbench.harness.suites.apmbench import dataset as apm
from apmbench.harness.suites.egoprobe import dataset as ego
from apmbench.harness.suites.egoprobe import plan as ego_plan
from apmbench.harness.suites.proactegomem import dataset as pem
from apmbench.harness.suites.proactegomem import plan as pem_plan

LABELLED = (
    apm.Candidate, apm.Probe, apm.Dataset,
    ego.Question, ego.Dialogue, ego.RelatedEvent, ego.Dataset, ego_plan.Item,
    pem.Clip, pem.Event, pem.Question, pem.Dataset, pem_plan.StepItem, pem_plan.QAItem,
)  # fmt: skip
LABEL_FIELDS = {
    "polarity", "positive", "correct_option_id", "expected_decision", "correct", "answer",
    "evidence_available", "ground_truth", "events", "subset", "bucket", "recall_s",
    "event_distractors", "event_count", "question_type", "target", "related_events",
}  # fmt: skip


def _reachable(obj: object, seen: set[int] | None = None) -> Iterator[object]:
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, str | bytes | int | float | bool | type(None)):
        return
    seen.add(id(obj))
    yield obj
    children: list[Any] = []
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        children = [getattr(obj, f.name) for f in dataclasses.fields(obj)]
    elif isinstance(obj, dict):
        children = [*obj.keys(), *obj.values()]
    elif isinstance(obj, list | tuple | set | frozenset):
        children = list(obj)
    elif callable(obj):
        closure = getattr(obj, "__closure__", None) or ()
        children = [c.cell_contents for c in closure]
        children += [getattr(obj, "__self__", None), getattr(obj, "__defaults__", None)]
    elif hasattr(obj, "__dict__"):
        children = list(vars(obj).values())
    for child in children:
        yield from _reachable(child, seen)


def _asks(segment: Segment) -> Iterator[Ask]:
    todo = list(segment.asks)
    while todo:
        ask = todo.pop()
        yield ask
        if ask.follow_up is not None:
            todo.append(ask.follow_up.ask)


@pytest.mark.parametrize(
    ("suite", "variant"),
    [("apmbench", None), ("apmbench", "raw-lifelong"), ("egoprobe", None),
     ("proactegomem", None), ("proactegomem", "per-step")],
)  # fmt: skip
def test_no_plan_holds_a_label(suite: str, variant: str | None) -> None:
    s = get_suite(suite)
    dataset: Any = datasets.load(s, datasets.synthetic(s, "tiny", 0), variant)
    asks = 0
    for trajectory in dataset.trajectories:
        for segment in s.plan(dataset, trajectory, True):
            # ProactEgoMem's segments hold the harness's tool state, which renders the
            # Oracle Memory condition from the annotated events (the paper's condition: the
            # ground truth given as memory); its asks, like every suite's, hold none.
            roots: list[object] = list(_asks(segment))
            if suite != "proactegomem":
                roots.append(segment)
            for obj in _reachable(roots):
                assert not isinstance(obj, LABELLED), (segment.name, type(obj).__name__)
            for ask in _asks(segment):
                asks += 1
                assert not LABEL_FIELDS & set(ask.fields), (ask.instance_id, ask.fields)
    assert asks > 0


def test_the_walk_finds_a_label_held_anywhere() -> None:
    """The control: a label held by a dataclass, a container or a closure is found."""
    s = get_suite("apmbench")
    dataset: Any = datasets.load(s, datasets.synthetic(s, "tiny", 0))
    candidate = dataset.candidates[0]

    def keep(time_ms: int) -> bool:
        return time_ms in {p.time_ms for p in candidate.probes}

    segment = s.plan(dataset, dataset.trajectories[0], True)[0]
    planted = dataclasses.replace(segment, keep_frame=keep)
    assert any(isinstance(o, apm.Candidate) for o in _reachable([planted]))
    assert any(isinstance(o, apm.Probe) for o in _reachable({"x": (candidate,)}))
    assert not any(isinstance(o, LABELLED) for o in _reachable([segment]))
