"""Deliberately broken memory systems written with the SDK, to show the checks and audits work.

Each breaks one rule in one way and is otherwise correct, so the check (or
audit) aimed at it must fail and no other. Served as
`apmbench-grpc serve helpers.broken_systems:NAME` (tests put tests/ on
PYTHONPATH). Rules the SDK enforces itself (time order) are broken below the
SDK, in broken_servers.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from apmbench.adapters.sdk import (
    AnswerFormat,
    ExportedState,
    FailedPrecondition,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    SystemInfo,
    UserTurn,
    UserTurnKind,
)
from helpers.systems import JsonMemory


class Honest(JsonMemory):
    """The baseline the broken ones differ from: answers from memory, no echo of it."""

    name = "honest"

    def answer(self, query: Query) -> dict[str, Any]:
        if query.kind is QueryKind.DECISION:
            remembered = any("remind me" in t for t in self.memory["turns"])
            return {"decision": "INTERVENE" if remembered else "SILENT", "reason": "memory"}
        return {"answer": "ABCD"[len(self.memory["sessions"]) % 4]}

    def said(self, query: Query) -> str:
        out = self.answer(query)
        # Protocol 1.1 says when an INTERVENE must name an option (the ERA checkpoint).
        if query.answer_format is AnswerFormat.DECISION_WITH_OPTION and out.get("decision") == (
            "INTERVENE"
        ):
            out.setdefault("answer", "A")
        return json.dumps(out)

    def query(self, query: Query) -> Iterator[str]:
        yield self.said(query)


class DeclaresOlder(Honest):
    """Honest, but its Describe declares an older protocol version (`check` then judges it
    by that version's rules)."""

    def __init__(self, declared: str) -> None:
        super().__init__()
        self.declared = declared

    def describe(self) -> SystemInfo:
        return replace(super().describe(), protocol_version=self.declared)


class MutatesInQuery(Honest):
    """Counts the questions it was asked in its persistent memory: breaks R5 (read-only Query)."""

    name = "mutates-in-query"

    def empty(self) -> dict[str, Any]:
        return {**super().empty(), "queries": 0}

    def query(self, query: Query) -> Iterator[str]:
        self.memory["queries"] += 1
        yield from super().query(query)


class NondeterministicExport(Honest):
    """Stamps every export with when it was made: breaks R6 (byte-identical exports)."""

    name = "nondeterministic-export"

    def export_state(self) -> ExportedState:
        stamped = {**self.memory, "exported_at_ns": time.time_ns()}
        return ExportedState(json.dumps(stamped, sort_keys=True).encode(), "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        memory = json.loads(state.data)
        memory.pop("exported_at_ns", None)
        self.memory = memory


class ForgetsOnRestart(Honest):
    """Keeps registrations outside its export, so a restart loses them: breaks R6."""

    name = "forgets-on-restart"

    def __init__(self) -> None:
        super().__init__()
        self.registrations: list[str] = []

    def reset(self, trajectory_id: str) -> None:
        super().reset(trajectory_id)
        self.registrations = []

    def ingest_user_turn(self, turn: UserTurn) -> None:
        if turn.kind is UserTurnKind.REGISTRATION:
            self.registrations.append(turn.text)  # never exported
        else:
            super().ingest_user_turn(turn)

    def answer(self, query: Query) -> dict[str, Any]:
        if query.kind is QueryKind.DECISION:
            decision = "INTERVENE" if self.registrations else "SILENT"
            return {"decision": decision, "reason": f"{len(self.registrations)} registrations"}
        return super().answer(query)


class WorksPastDeadline(Honest):
    """Thinks a second over each multiple-choice answer and cannot be stopped meanwhile:
    a client that gives up leaves it busy (breaks the cancellation rule)."""

    name = "works-past-deadline"
    think_s = 1.0

    def query(self, query: Query) -> Iterator[str]:
        if query.kind is QueryKind.MULTIPLE_CHOICE:
            time.sleep(self.think_s)  # one long step, nothing yielded: nothing can stop it
        yield from super().query(query)


class PadsFirstChunk(Honest):
    """Sends a blank chunk at once and the answer after thinking: its time to first token
    would be measured on the blank (the first-token audit's and query-streams' target)."""

    name = "pads-first-chunk"
    think_s = 0.02

    def query(self, query: Query) -> Iterator[str]:
        yield " "
        time.sleep(self.think_s)
        yield from super().query(query)


class RefusesExportInSession(Honest):
    """Exports only between sessions, though ExportState is callable at any time: the audits
    record each refused export and the run goes on."""

    name = "refuses-export-in-session"
    open = False

    def start_session(self, start: SessionStart) -> None:
        self.open = True

    def end_session(self, end: SessionEnd) -> None:
        super().end_session(end)
        self.open = False

    def reset(self, trajectory_id: str) -> None:
        super().reset(trajectory_id)
        self.open = False

    def export_state(self) -> ExportedState:
        if self.open:
            raise FailedPrecondition("this system exports only between sessions")
        return super().export_state()


class CachesByQueryId(Honest):
    """Remembers answers by query id in-process and replays them at once (the caching audit's
    target: a repeated id comes back far faster)."""

    name = "caches-by-query-id"
    think_s = 0.1

    def __init__(self) -> None:
        super().__init__()
        self.cache: dict[str, str] = {}  # survives Reset, as caches do

    def query(self, query: Query) -> Iterator[str]:
        if query.query_id not in self.cache:
            time.sleep(self.think_s)
            self.cache[query.query_id] = self.said(query)
        yield self.cache[query.query_id]


class StalledOnce(Honest):
    """Honest, but the first query after each audit Reset stalls 0.2 s, as a process does
    when a loaded machine deschedules it: one slow fresh ask, then normal speed. The
    caching audit must not take that for a cache keyed on the query id."""

    name = "stalled-once"
    stall_s = 0.2

    def __init__(self) -> None:
        super().__init__()
        self.stall = False

    def reset(self, trajectory_id: str) -> None:
        super().reset(trajectory_id)
        self.stall = trajectory_id.startswith("audit-")

    def query(self, query: Query) -> Iterator[str]:
        if self.stall:
            self.stall = False
            time.sleep(self.stall_s)
        yield from super().query(query)


class CachesByContent(Honest):
    """Remembers answers by the question's content in-process and replays them at once,
    whatever the ids (the target of repeat_faster: every repeat of every question comes
    back far faster than its first ask)."""

    name = "caches-by-content"
    think_s = 0.1

    def __init__(self) -> None:
        super().__init__()
        self.cache: dict[tuple[object, ...], str] = {}  # survives Reset, as caches do

    def query(self, query: Query) -> Iterator[str]:
        key = (query.time_ms, query.prompt, query.question, query.choices)
        if key not in self.cache:
            time.sleep(self.think_s)
            self.cache[key] = self.said(query)
        yield self.cache[key]


class StalledFirstAsk(Honest):
    """Honest, but every query before the first audit Reset stalls 0.2 s, as a process does
    while a loaded machine deschedules it: on `mini` that is one main-pass question (the
    first session's; the forks before it are not repeated), whose repeat is then far
    faster. The caching audit must not take that one observation for a content cache."""

    name = "stalled-first-ask"
    stall_s = 0.2

    def __init__(self) -> None:
        super().__init__()
        self.stalling = True

    def reset(self, trajectory_id: str) -> None:
        super().reset(trajectory_id)
        self.stalling = self.stalling and not trajectory_id.startswith("audit-")

    def query(self, query: Query) -> Iterator[str]:
        if self.stalling:
            time.sleep(self.stall_s)
        yield from super().query(query)


class AnswersById(Honest):
    """Holds a leaked answer key for the mini dataset's trajectories (T01, T02) and answers
    from it whenever it sees their ids: the caching audit sees the same question on the same
    memory answered otherwise under fresh ids."""

    name = "answers-by-id"
    KEYED = ("T01", "T02")
    trajectory = ""

    def reset(self, trajectory_id: str) -> None:
        super().reset(trajectory_id)
        self.trajectory = trajectory_id

    def start_session(self, start: SessionStart) -> None:
        self.trajectory = start.trajectory_id

    def answer(self, query: Query) -> dict[str, Any]:
        if query.kind is QueryKind.DECISION:
            return super().answer(query)
        return {"answer": "B" if self.trajectory in self.KEYED else "C"}


class ResumesSessions(Honest):
    """Honest, and declares R14: its one dict is all it keeps, in a session or not."""

    name = "resumes-sessions"
    resumes_sessions = True


class LosesOpenSession(ResumesSessions):
    """Declares R14 but keeps the open session's user turns aside until EndSession, outside
    its export: a session resumed from a state exported open has lost them."""

    name = "loses-open-session"

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[str] = []

    def reset(self, trajectory_id: str) -> None:
        super().reset(trajectory_id)
        self.pending = []

    def ingest_user_turn(self, turn: UserTurn) -> None:
        self.pending.append(turn.text)

    def end_session(self, end: SessionEnd) -> None:
        self.memory["turns"] += self.pending
        self.pending = []
        super().end_session(end)


class BlankFirstChunk(Honest):
    """The red team's TTFT purchase: a blank chunk at once, then the answer after a 0.3 s
    'model'. R11 says the first chunk is not blank because time to first token is taken
    on it; the harness times the first chunk with a visible character instead."""

    name = "blank-first"
    THINK_S = 0.3

    def query(self, query: Query) -> Iterator[str]:
        yield " "
        time.sleep(self.THINK_S)
        yield self.said(query)


class ZeroWidthFirstChunk(BlankFirstChunk):
    """BlankFirstChunk's purchase with a zero-width space (U+200B) for the blank: `str.strip()`
    keeps it, so a harness that judged blankness by whitespace alone timed this server at
    its first chunk (a red team bought TTFT 0.001 s against 0.306 s this way). It renders
    nothing, so R11 counts it blank and the clock starts at the answer."""

    name = "zero-width-first"

    def query(self, query: Query) -> Iterator[str]:
        yield "\u200b"
        time.sleep(self.THINK_S)
        yield self.said(query)


class FillerFirstChunk(BlankFirstChunk):
    """A visible filler ("Hmm, ") at once, then the answer after the 'model': the limit of
    R11. Text a reader can see is not blank, so it does start the clock and buys time to
    first token; time to answer (which the leaderboard places runs by) is not bought."""

    name = "filler-first"

    def query(self, query: Query) -> Iterator[str]:
        yield "Hmm, "
        time.sleep(self.THINK_S)
        yield self.said(query)


class PadsFirstChunkZeroWidth(PadsFirstChunk):
    """PadsFirstChunk with a zero-width space for the pad: `check`'s query-streams must fail
    it exactly as it fails a whitespace pad."""

    name = "pads-first-chunk-zero-width"

    def query(self, query: Query) -> Iterator[str]:
        yield "\u200b"
        time.sleep(self.think_s)
        yield self.said(query)
