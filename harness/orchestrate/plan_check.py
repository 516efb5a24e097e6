"""Every run is checked against its plan: each ask the labelled plan makes is recorded
exactly once, none missing, added or repeated (a blind run's predictions and an ordinary
run's records alike, by `score` and by `verify`'s re-derivation), so a submitter cannot
drop the records of wrong answers or repeat the right ones and score again."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from apmbench.harness.errors import RunDirError
from apmbench.harness.run import records
from apmbench.harness.run.plan import Ask
from apmbench.harness.suites.base import OpaqueSuite, SuiteDataset


def listed(problems: Sequence[str], most: int = 20) -> str:
    shown = "; ".join(problems[:most])
    return shown if len(problems) <= most else f"{shown}; and {len(problems) - most} more"


def asks_of(asks: Iterable[Ask]) -> Iterable[Ask]:
    for ask in asks:
        yield ask
        if ask.follow_up is not None:
            yield from asks_of([ask.follow_up.ask])


def labelled_fields(
    suite: OpaqueSuite, dataset: SuiteDataset, can_import: bool
) -> dict[tuple[str, str], dict[str, object]]:
    """Each planned ask's record fields as the labelled plan has them, by (segment, id): a
    public plan's fields come from stand-ins (a bucket, a subset)."""
    out: dict[tuple[str, str], dict[str, object]] = {}
    for t in dataset.trajectories:
        for segment in suite.plan(dataset, t, can_import):
            for ask in asks_of(segment.asks):
                out[(segment.name, ask.instance_id)] = dict(ask.fields)
    return out


def check_exactly_the_plan(
    by_id: Mapping[str, records.TrajectoryRecord],
    fields: Mapping[tuple[str, str], object],
    dataset: SuiteDataset,
    public_ids: Mapping[str, str] | None = None,
    what: str = "the predictions",
) -> None:
    """The predictions answer each ask of the labelled plan once: none missing, added or
    repeated, and no trajectory the labels do not have. A record is named as the
    predictions file holds it: `public_ids` maps a labelled id back to its public one (the
    public part may name a task's probes by time, so `#neg0` there can be `#pos` here)."""
    shown = public_ids or {}
    known = {t.trajectory_id for t in dataset.trajectories}
    problems = [
        f"trajectory {tid}: not in the labelled dataset" for tid in by_id if tid not in known
    ]
    counts: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], str] = {}
    for tid, rec in by_id.items():
        for row in rec["instances"]:
            key = (str(row.get("segment")), str(row.get("instance_id")))
            counts[key] += 1
            where[key] = tid
    for key, n in counts.items():
        name = f"{where[key]}/{shown.get(key[0], key[0])}/{shown.get(key[1], key[1])}"
        if key not in fields:
            problems.append(f"{name}: not in the labelled plan")
        elif n > 1:
            problems.append(f"{name}: recorded {n} times")
    problems += [
        f"{shown.get(seg, seg)}/{shown.get(iid, iid)}: missing"
        for seg, iid in fields
        if (seg, iid) not in counts
    ]
    if problems:
        raise RunDirError(f"{what} are not exactly the labelled plan: " + listed(problems))


def check_run_records(
    root: object,
    recs: Sequence[records.TrajectoryRecord],
    suite: OpaqueSuite,
    dataset: SuiteDataset,
    can_import: bool,
) -> None:
    """An ordinary run's records answer its plan exactly (`score`, and `verify` re-deriving
    a bundle's run): the plan the run was made against, by its system's import support."""
    by_id = {str(rec["trajectory_id"]): rec for rec in recs}
    fields = labelled_fields(suite, dataset, can_import)
    check_exactly_the_plan(by_id, fields, dataset, what=f"the records of {root}")
