"""Audits during a real run (`evaluate --audit`): what a reader needs to trust a result.

Per trajectory, on a seeded sample (MLPerf LoadGen's audits):

- state mutation (R5): the state is exported before and after sampled
  queries; a change means Query wrote to memory (a third export tells a
  non-deterministic export apart);
- caching (TEST04): sampled main-pass questions are asked again on the same
  memory under fresh trajectory and session ids, once with a fresh query id
  and once with the original one; a large speed-up (over the first ask: on
  two questions of the trajectory), or an answer that changes with the ids, is
  flagged (`audit_repeat`);
- first token (TEST06): every answer's stream is checked to be deltas whose
  first chunk carries content, so the recorded text is the concatenation of
  what was timed;
- persistence: sampled trajectories are run again in `restart` mode and
  their answers compared with the run's mode (`audit_persistence`).

Results go into the trajectory's record under "audit"; `audit_summary`
aggregates them for report.json and the manifest.
"""

from __future__ import annotations

import hashlib
import io
import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from apmbench.adapters.sdk import errors
from apmbench.adapters.sdk.types import Query
from apmbench.harness.errors import WireRuleError
from apmbench.harness.protocol.client import QueryResult, SystemClient
from apmbench.harness.protocol.streaming import streaming_problem
from apmbench.harness.run.audits.repeat import (
    RepeatEntry,
    confirm_repeat_faster,
    first_faster,
    repeat,
)
from apmbench.harness.run.audits.settings import AuditSettings
from apmbench.harness.run.audits.summary import FirstTokenFlag
from apmbench.harness.run.executor import TrajectoryRunner
from apmbench.harness.run.plan import Ask, Segment

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

# What a server may answer to the audit's extra calls; the audit records it and the run goes on.
# A server that is gone (UNAVAILABLE, a deadline) ends the run as it would without the audit.
REFUSALS = (
    errors.InvalidArgument,
    errors.FailedPrecondition,
    errors.Unimplemented,
    errors.DataLoss,
    errors.MethodFailure,
    # Protocol 1.3 lists no refusal for ExportState (callable at any time, R6); a server that
    # refuses one in a session anyway breaks STATUS, which the audit records like a refusal.
    WireRuleError,
)


class _Discard(io.BytesIO):
    """A sink that keeps nothing: the audit needs the verified sha256, not the bytes."""

    def write(self, data: ReadableBuffer, /) -> int:
        return memoryview(data).nbytes  # len(data) for the bytes the client writes


def state_digest(client: SystemClient, max_chunk_bytes: int = 0) -> str:
    """The sha256 of the exported state (the client checks it against the data received)."""
    return client.export_state(_Discard(), max_chunk_bytes).manifest.sha256


def _sample(items: list[Ask], count: int, key: str) -> set[str]:
    ids = sorted(a.instance_id for a in items)
    rng = random.Random(hashlib.sha256(key.encode()).hexdigest())
    return set(rng.sample(ids, min(count, len(ids))))


class MutationEntry(TypedDict):
    """One query between exports in the audit record (`state_mutation`)."""

    instance_id: str
    segment: str
    error: NotRequired[str]
    """A refused export: before or after the query, and what the server said."""
    verdict: NotRequired[str]
    """unchanged, changed, export_varies or export_failed."""
    before_sha256: NotRequired[str]
    after_sha256: NotRequired[str]


class FirstTokens(TypedDict):
    """The first-token audit of a trajectory: every query is checked."""

    queries: int
    flagged: list[FirstTokenFlag]


class Caching(TypedDict):
    """The caching audit of a trajectory: its repeats, or why it could not run."""

    repeats: list[RepeatEntry]
    skipped: NotRequired[str]


@dataclass
class TrajectoryAudit:
    """The audit of one trajectory: the runner calls `ask` for every query, `session_done`
    after every main-pass session; `record()` is what the trajectory's record keeps."""

    settings: AuditSettings
    mutation: set[str] = field(default_factory=set)
    caching: set[str] = field(default_factory=set)
    caching_skipped: str = ""
    state_mutation: list[MutationEntry] = field(default_factory=list)
    repeats: list[RepeatEntry] = field(default_factory=list)
    first_token: FirstTokens = field(default_factory=lambda: FirstTokens(queries=0, flagged=[]))
    asked: dict[str, tuple[Query, QueryResult]] = field(default_factory=dict)
    main_sessions: dict[str, int] = field(default_factory=dict)
    """Every main-pass question and its session, in the order the main pass asks them."""
    confirmer: str = ""
    """The main-pass question sampled to confirm a lone speed-up (one at most)."""

    @classmethod
    def plan(
        cls, settings: AuditSettings, trajectory_id: str, segments: list[Segment], why_not: str
    ) -> TrajectoryAudit:
        """Pick the sample; `why_not` (non-empty) says why the caching audit cannot run."""
        every = [a for s in segments for a in s.asks]
        main = [a for s in segments if s.kind == "main" for a in s.asks]
        key = f"{settings.seed}/{trajectory_id}"
        audit = cls(settings, caching_skipped=why_not)
        ordered = sorted(main, key=lambda a: (a.session_index, a.time_ms, a.instance_id))
        audit.main_sessions = {a.instance_id: a.session_index for a in ordered}
        audit.mutation = _sample(every, settings.mutation_queries, key + "/mutation")
        if not why_not:
            audit.caching = _sample(main, settings.caching_queries, key + "/caching")
        return audit

    def ask(
        self, runner: TrajectoryRunner, segment: Segment, ask: Ask, query: Query
    ) -> QueryResult:
        probe_id = ask.instance_id
        if probe_id not in self.mutation:
            result = runner.client.query(query)
        else:
            result = self._watched(runner, segment, probe_id, query)
        self._first_token(probe_id, result)
        if segment.kind == "main" and probe_id in self.caching:
            self.asked[probe_id] = (query, result)
        return result

    def _watched(
        self, runner: TrajectoryRunner, segment: Segment, probe_id: str, query: Query
    ) -> QueryResult:
        """The query between two exports (a third when they differ)."""
        client, chunk = runner.client, runner.settings.max_chunk_bytes
        entry: MutationEntry = {"instance_id": probe_id, "segment": segment.name}
        try:
            before = state_digest(client, chunk)
        except REFUSALS as e:  # the audit reports a refused export; it does not end the run
            before, entry["error"] = "", f"ExportState before the query: {e}"
        result = client.query(query)
        if not before:
            entry["verdict"] = "export_failed"
        else:
            try:
                after = state_digest(client, chunk)
                verdict = "unchanged"
                if after != before:
                    verdict = "changed" if state_digest(client, chunk) == after else "export_varies"
                entry.update({"verdict": verdict, "before_sha256": before, "after_sha256": after})
            except REFUSALS as e:
                entry.update(
                    {"verdict": "export_failed", "error": f"ExportState after the query: {e}"}
                )
        self.state_mutation.append(entry)
        return result

    def _first_token(self, probe_id: str, result: QueryResult) -> None:
        self.first_token["queries"] += 1
        problem = streaming_problem(result)
        if problem is None and "".join(result.pieces) != result.text:
            problem = "the recorded answer is not the concatenation of the streamed chunks"
        if problem is not None:
            self.first_token["flagged"].append({"instance_id": probe_id, "problem": problem})

    def session_done(self, runner: TrajectoryRunner, segment: Segment, index: int) -> None:
        """After a main-pass session: repeat its sampled questions in this same process."""
        due = [a for a in segment.asks_in(index) if a.instance_id in self.asked]
        for ask in due:
            query, result = self.asked.pop(ask.instance_id)
            try:
                self.repeats.append(repeat(runner, index, ask, query, result, self.settings))
            except REFUSALS as e:  # a flag; the runner's next step restores the memory anyway
                failed: RepeatEntry = {
                    "instance_id": ask.instance_id,
                    "session_index": index,
                    "flags": ["repeat_failed"],
                    "error": str(e),
                }
                self.repeats.append(failed)
        self._confirm_later(index)

    def _confirm_later(self, index: int) -> None:
        """A speed-up over a first ask stands only with a second question's (see
        `confirm_repeat_faster`): when no sampled question is left to give it, sample the
        next main-pass question still to be asked (once: a confirmer that is not faster
        leaves the speed-up unconfirmed)."""
        if self.confirmer or sum(first_faster(r, self.settings) for r in self.repeats) != 1:
            return  # none to confirm, confirmed already, or already given its chance
        later = [i for i, s in self.main_sessions.items() if s > index]
        if later and not any(i in self.caching for i in later):
            self.confirmer = later[0]
            self.caching.add(self.confirmer)

    def record(self) -> dict[str, Any]:
        caching: Caching = {"repeats": confirm_repeat_faster(self.repeats, self.settings)}
        if self.caching_skipped:
            caching["skipped"] = self.caching_skipped
        return {
            "state_mutation": self.state_mutation,
            "caching": caching,
            "first_token": self.first_token,
        }
