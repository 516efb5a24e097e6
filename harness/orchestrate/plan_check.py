"""Every run is checked against its plan: each ask the labelled plan makes is recorded
exactly once, none missing, added or repeated (a blind run's predictions and an ordinary
run's records alike, by `score` and by `verify`'s re-derivation), so a submitter cannot
drop the records of wrong answers or repeat the right ones and score again."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from apmbench.harness.errors import RunDirError
from apmbench.harness.run import records
from apmbench.harness.run.plan import Ask
from apmbench.harness.suites.base import OpaqueSuite, SuiteDataset


def listed(problems: Sequence[str], most: int = 20) -> str:
    shown = "; ".join(problems[:most])
    return shown if len(problems) <= most else f"{shown}; and {len(problems) - most} more"


Key = tuple[str, str]
"""An ask of the plan: (segment, instance id)."""


@dataclass(frozen=True)
class PlannedAsks:
    """The asks a plan makes, by (segment, id), with each one's record fields; a follow-up
    (a dialogue's dependent round) is asked only when its rule holds for its parent's raw
    answer, so it is expected exactly then."""

    fields: dict[Key, dict[str, object]] = field(default_factory=dict)
    follow_ups: dict[Key, tuple[Key, Callable[[str], bool]]] = field(default_factory=dict)


def _add(planned: PlannedAsks, segment: str, asks: Iterable[Ask]) -> None:
    for ask in asks:
        planned.fields[(segment, ask.instance_id)] = dict(ask.fields)
        follow = ask.follow_up
        if follow is not None:
            key = (segment, follow.ask.instance_id)
            planned.follow_ups[key] = ((segment, ask.instance_id), follow.when)
            _add(planned, segment, [follow.ask])


def planned_asks(suite: OpaqueSuite, dataset: SuiteDataset, can_import: bool) -> PlannedAsks:
    """Every ask the plan of `dataset` makes, follow-ups included."""
    planned = PlannedAsks()
    for t in dataset.trajectories:
        for segment in suite.plan(dataset, t, can_import):
            _add(planned, segment.name, segment.asks)
    return planned


def labelled_fields(
    suite: OpaqueSuite, dataset: SuiteDataset, can_import: bool
) -> dict[Key, dict[str, object]]:
    """Each planned ask's record fields as the labelled plan has them, by (segment, id): a
    public plan's fields come from stand-ins (a bucket, a subset)."""
    return planned_asks(suite, dataset, can_import).fields


def check_exactly_the_plan(
    by_id: Mapping[str, records.TrajectoryRecord],
    planned: PlannedAsks,
    dataset: SuiteDataset,
    public_ids: Mapping[str, str] | None = None,
    what: str = "the predictions",
) -> None:
    """The predictions answer each ask of the labelled plan once: none missing, added or
    repeated, and no trajectory the labels do not have; a follow-up is there exactly when
    its parent's recorded answer asks it (the rule the runner applied to that same raw
    answer). A record is named as the
    predictions file holds it: `public_ids` maps a labelled id back to its public one (the
    public part may name a task's probes by time, so `#neg0` there can be `#pos` here)."""
    shown = public_ids or {}
    known = {t.trajectory_id for t in dataset.trajectories}
    problems = [
        f"trajectory {tid}: not in the labelled dataset" for tid in by_id if tid not in known
    ]
    fields = planned.fields
    counts: Counter[Key] = Counter()
    where: dict[Key, str] = {}
    raw: dict[Key, str] = {}
    for tid, rec in by_id.items():
        for row in rec["instances"]:
            key = (str(row.get("segment")), str(row.get("instance_id")))
            counts[key] += 1
            where[key] = tid
            raw[key] = str(row.get("raw_output") or "")

    def asked(key: Key) -> bool:
        """Whether the plan asks `key` given the answers recorded."""
        if key not in planned.follow_ups:
            return True
        parent, when = planned.follow_ups[key]
        return counts[parent] == 1 and asked(parent) and bool(when(raw[parent]))

    for key, n in counts.items():
        name = f"{where[key]}/{shown.get(key[0], key[0])}/{shown.get(key[1], key[1])}"
        if key not in fields:
            problems.append(f"{name}: not in the labelled plan")
        elif n > 1:
            problems.append(f"{name}: recorded {n} times")
        elif not asked(key):
            problems.append(f"{name}: recorded, though its parent's answer does not ask it")
    problems += [
        f"{shown.get(seg, seg)}/{shown.get(iid, iid)}: missing"
        for seg, iid in fields
        if (seg, iid) not in counts and asked((seg, iid))
    ]
    if problems:
        raise RunDirError(f"{what} are not exactly the labelled plan: " + listed(problems))


def check_run_records(
    root: object,
    recs: Sequence[records.TrajectoryRecord],
    suite: OpaqueSuite,
    dataset: SuiteDataset,
    can_import: bool,
    blind: bool,
) -> None:
    """A run's records answer its plan exactly (`score`, and `verify` re-deriving a bundle's
    run): the plan the run was made against, by its system's import support, and, for a
    run made with the labels withheld (`blind`), the plan of the public part (which asks
    nothing that needs a label: ProactEgoMem's Oracle Memory)."""
    by_id = {str(rec["trajectory_id"]): rec for rec in recs}
    played = suite.dataset_format().planned_blind(dataset) if blind else dataset
    planned = planned_asks(suite, played, can_import)
    check_exactly_the_plan(by_id, planned, dataset, what=f"the records of {root}")
