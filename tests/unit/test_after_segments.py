"""The plan's "after" segments: a fresh memory once every other segment has run, whatever
the import capability (the ProactEgoMem suite asks its memory questions in them)."""

from __future__ import annotations

from apmbench.harness.run.executor import causal_order
from apmbench.harness.run.plan import Segment


def segment(kind: str, name: str, first: int, last: int, after: int | None = None) -> Segment:
    return Segment(kind, name, first, last, after, (), (), kind != "main")


def test_after_segments_run_last_in_plan_order() -> None:
    plan = [
        segment("after", "qa-no", 0, 2),
        segment("main", "main", 0, 2),
        segment("fork", "fork", 1, 1, 0),
        segment("after", "qa-oracle", 0, 0),
    ]
    for can_import in (True, False):
        names = [s.name for s in causal_order(plan, can_import)]
        assert names[-2:] == ["qa-no", "qa-oracle"], (can_import, names)
        assert "fork" in names and names.index("fork") < names.index("qa-no")


def test_a_plan_without_after_segments_keeps_its_order() -> None:
    plan = [segment("main", "main", 0, 0), segment("after", "qa", 0, 0)]
    assert [s.name for s in causal_order(plan, True)] == ["main", "qa"]
