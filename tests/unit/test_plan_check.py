"""The plan check's follow-ups: a dialogue's dependent round is expected exactly when its
parent's recorded answer asks it (EgoProbe's R2 follows a yes), neither required always
nor allowed always."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pytest

from apmbench.harness.errors import RunDirError
from apmbench.harness.orchestrate.plan_check import PlannedAsks, check_exactly_the_plan
from apmbench.harness.run import records
from apmbench.harness.suites.base import SuiteDataset


@dataclass
class Traj:
    trajectory_id: str


@dataclass
class Data:
    trajectories: tuple[Traj, ...] = (Traj("t"),)


def plan() -> PlannedAsks:
    planned = PlannedAsks()
    planned.fields[("main", "D1:R1")] = {}
    planned.fields[("main", "D1:R2")] = {}
    planned.follow_ups[("main", "D1:R2")] = (("main", "D1:R1"), lambda raw: "yes" in raw)
    return planned


def check(*rows: tuple[str, str]) -> None:
    rec = {"trajectory_id": "t",
           "instances": [{"segment": "main", "instance_id": i, "raw_output": r} for i, r in rows]}  # fmt: skip
    by_id = {"t": cast(records.TrajectoryRecord, cast(Any, rec))}
    check_exactly_the_plan(by_id, plan(), cast(SuiteDataset, Data()))


def test_a_follow_up_is_there_exactly_when_its_parents_answer_asks_it() -> None:
    check(("D1:R1", "yes"), ("D1:R2", "B"))
    check(("D1:R1", "no"))
    with pytest.raises(RunDirError, match="D1:R2: missing"):
        check(("D1:R1", "yes"))
    with pytest.raises(RunDirError, match="parent's answer does not ask it"):
        check(("D1:R1", "no"), ("D1:R2", "B"))
    with pytest.raises(RunDirError, match="D1:R1: missing"):
        check()
