"""The caching audit (MLPerf TEST04 in spirit): a sampled question asked again on the same memory.

Right after the main pass ends session i, in the same process that answered
the question, the memory at the question's time is rebuilt under fresh
trajectory and session ids: Reset, ImportState of the snapshot after
session i-1, StartSession, the session's frames up to the question. Then the
question is asked twice with identical content: first under a fresh query
id, then under the original one. Both runs of the process are warm, so:

- `same_query_id_faster`: the original id came back `speedup` times faster
  than a fresh one, and than a second fresh one asked to confirm (one slow
  ask can be a loaded machine): something was cached by query id (ids are
  "never meaningful", .proto QueryRequest);
- `repeat_faster`: even the fresh id was `speedup` times faster than the
  first ask, and so was the repeat of a second, different question of the
  trajectory (one slow first ask can be a loaded machine; the first ask
  cannot be asked again, so a second question is the second observation):
  content was cached (or first asks pay a cold start). `confirm_repeat_faster`
  decides once the trajectory's repeats are in; `TrajectoryAudit` repeats one
  more main-pass question when a speed-up would otherwise stand alone;
- `answer_depends_on_ids`: the chosen option differs between the first ask
  and a repeat, though memory and question are the same: the answer depends
  on ids (or the system answers non-deterministically).

Only main-pass questions are repeated: they carry no user turns, so frames
alone rebuild their memory. The runner's next step (a restart, or Reset and
ImportState) replaces whatever the repeat left behind.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import NotRequired, TypedDict

from apmbench.adapters.sdk.types import Query, SessionStart, StreamItem
from apmbench.harness.media.frames import FrameProducer
from apmbench.harness.protocol.client import QueryResult
from apmbench.harness.run.audits.settings import AuditSettings
from apmbench.harness.run.executor import TrajectoryRunner
from apmbench.harness.run.plan import Ask
from apmbench.harness.scoring.answers import parse_choice


class RepeatEntry(TypedDict):
    """One repeated question in the trajectory's audit record (`caching.repeats`)."""

    instance_id: str
    session_index: int
    flags: list[str]
    ids: NotRequired[dict[str, str]]
    """The fresh trajectory and session ids the repeat ran under."""
    seconds: NotRequired[dict[str, float]]
    """Each ask's time to answer: the first ask, the fresh id's, the original id's."""
    answers: NotRequired[dict[str, str | None]]
    """The option each ask chose (None: no option read)."""
    error: NotRequired[str]
    """Why the repeat could not run (a refused call): flagged `repeat_failed`."""
    repeat_faster_confirmed_by: NotRequired[list[str]]
    repeat_faster_unconfirmed: NotRequired[str]


def _option(query: Query, text: str) -> str | None:
    return parse_choice(text, [(c.option_id, c.text) for c in query.choices]).option


def faster(slow_s: float, fast_s: float, settings: AuditSettings) -> bool:
    """Whether `fast_s` is a speed-up over `slow_s` that timing noise cannot explain."""
    return slow_s >= settings.min_seconds and slow_s >= settings.speedup * max(fast_s, 1e-6)


def first_faster(entry: RepeatEntry, settings: AuditSettings) -> bool:
    """Whether a repeat's fresh id came back a speed-up over the question's first ask."""
    seconds = entry.get("seconds", {})
    if "first" not in seconds or "fresh_query_id" not in seconds:
        return False  # a refused repeat
    return faster(seconds["first"], seconds["fresh_query_id"], settings)


UNCONFIRMED = (
    "no other question of this trajectory came back as much faster on its repeat: one slow "
    "first ask can be the machine"
)


def confirm_repeat_faster(repeats: list[RepeatEntry], settings: AuditSettings) -> list[RepeatEntry]:
    """The trajectory's repeats, `repeat_faster` on each speed-up that another question's
    repeat confirms.

    A first ask is one observation that cannot be made again: a stall of a loaded machine
    (tens to hundreds of milliseconds) can make one first ask `speedup` times slower than
    its repeat, but seldom two first asks made at different moments (frames are pushed
    between them); a content cache speeds up the repeat of every question. So the flag
    needs two questions whose repeats each met the rule (each pair is one question against
    itself, so questions that cost differently do not mix): on a clock that stalls a tenth
    of all asks by 60-300 ms, about one honest repeat in ten meets the rule, under one in a
    hundred on two questions (tests/unit/test_check_audit_parts.py). A speed-up alone is
    kept as `repeat_faster_unconfirmed`, which is not a flag."""
    candidates = {r["instance_id"] for r in repeats if first_faster(r, settings)}
    out: list[RepeatEntry] = []
    for entry in repeats:
        entry = {**entry, "flags": list(entry["flags"])}
        if entry["instance_id"] in candidates:
            others = sorted(candidates - {entry["instance_id"]})
            if others:
                entry["flags"].append("repeat_faster")
                entry["repeat_faster_confirmed_by"] = others
            else:
                entry["repeat_faster_unconfirmed"] = UNCONFIRMED
        out.append(entry)
    return out


def repeat(
    runner: TrajectoryRunner,
    index: int,
    ask: Ask,
    query: Query,
    first: QueryResult,
    settings: AuditSettings,
) -> RepeatEntry:
    client = runner.client
    session = runner.trajectory.sessions[index]
    trajectory_id = f"audit-{uuid.uuid4().hex[:12]}"
    session_id = f"audit-{uuid.uuid4().hex[:12]}"
    client.reset(trajectory_id)
    if index > 0:
        snapshot = runner.snapshots[index - 1]
        client.import_file(snapshot.manifest, snapshot.path, runner.settings.max_chunk_bytes)
    client.start_session(SessionStart(trajectory_id, session_id, session.day_id, session.start_ms))
    batched = runner.info.capabilities.accepts_item_batches
    batch: list[StreamItem] = []
    with FrameProducer(session, runner.frames, until_ms=query.time_ms) as frames:
        for frame in frames:
            batch.append(frame)
            if runner.cutter.ends_after(len(batch)):
                client.push(batch, batched=batched)
                batch = []
    if batch:
        client.push(batch, batched=batched)
    fresh = client.query(replace(query, query_id=uuid.uuid4().hex))
    same = client.query(query)
    answers = {
        "first": _option(query, first.text),
        "fresh_query_id": _option(query, fresh.text),
        "same_query_id": _option(query, same.text),
    }
    seconds = {
        "first": first.total_s,
        "fresh_query_id": fresh.total_s,
        "same_query_id": same.total_s,
    }
    flags: list[str] = []
    if faster(fresh.total_s, same.total_s, settings):
        # One slow fresh ask can be the machine (a loaded CI host stalls a process for
        # tens of milliseconds): a second fresh id must be as slow before the flag stands.
        # A cache keyed on the id is slow on every fresh id; noise seldom strikes twice.
        again = client.query(replace(query, query_id=uuid.uuid4().hex))
        seconds["fresh_query_id_again"] = again.total_s
        if faster(again.total_s, same.total_s, settings):
            flags.append("same_query_id_faster")
    # repeat_faster needs a second question: confirm_repeat_faster, once all are in.
    if len(set(answers.values())) > 1:
        flags.append("answer_depends_on_ids")
    return {
        "instance_id": ask.instance_id,
        "session_index": index,
        "ids": {"trajectory_id": trajectory_id, "session_id": session_id},
        "seconds": seconds,
        "answers": answers,
        "flags": flags,
    }
