"""A trajectory's plan: the segments the runner replays and the asks they carry.

A suite decides the plan (which sessions each replay covers, which turns it
injects, which queries it asks); the runner executes it without knowing any
task. A `Segment` is one replay over consecutive sessions of one trajectory:

- "main": every session once, from an empty memory;
- "fork": from the main pass's snapshot after `snapshot_after` (or from the
  start), with turns of its own that no other segment sees;
- "recent": an empty memory, then only a few recent sessions;
- "after": an empty memory once every other segment has run, pushing only the
  frames its `keep_frame` admits (a question asked in a fresh session with a
  chosen set of frames, which may depend on answers given earlier).

A segment's `state` lets a suite render each ask from what the system answered
before it (e.g. tool state the harness owns and updates from every answer).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from apmbench.adapters.sdk.types import Query
from apmbench.harness.json_types import JSON
from apmbench.harness.media.timeline import Turn


@dataclass(frozen=True)
class Cut:
    """A push ends at `time_ms` (after every item up to it), as it would at a question."""

    session_index: int
    time_ms: int


@dataclass(frozen=True)
class Ask:
    """One query the runner asks at `time_ms`, after exactly the frames up to it.

    `query` is wire-ready (its `query_id` is replaced by a fresh one when asked);
    `fields` are copied into the instance record. An ask holds no label: the runner
    records raw answers and timings, and scoring grades each answer once, against the
    suite's item of its `instance_id` (`Grading.items`).
    """

    instance_id: str
    session_index: int
    time_ms: int
    query: Query
    fields: Mapping[str, JSON]
    follow_up: FollowUp | None = None
    """The next round of this ask's dialogue, asked right after it when its condition holds."""
    period_ms: int | None = None
    """A decision asked every `period_ms` of video (ProactEgoMem's steps); None: a one-off
    question. In a live run (`evaluate --live`) a periodic question still waiting when the
    next falls due is dropped in its favour, and one whose answer takes effect more than a
    period after its time is late."""

    def __post_init__(self) -> None:
        if self.follow_up is not None and self.follow_up.ask.time_ms != self.time_ms:
            # Both rounds must see the same frames: no frame may be pushed between them.
            raise ValueError(
                f"follow-up {self.follow_up.ask.instance_id} is at "
                f"{self.follow_up.ask.time_ms} ms, not at its parent's {self.time_ms} ms"
            )


@dataclass(frozen=True)
class FollowUp:
    """A dependent round of a dialogue (a suite's two-turn probe, say).

    The runner asks `ask` right after its parent, in the same process, at the
    same time and with no frame pushed in between, and only when `when` holds
    for the parent's raw answer (e.g. it parses as "yes": no label needed). Its
    query carries the dialogue so far: each earlier round's prompt, question
    and the system's actual answer. A follow-up that is not asked leaves no
    record; the parent's record says whether it was asked.
    """

    ask: Ask
    when: Callable[[str], bool]
    render: Callable[[Query], Query] | None = None
    """Adapts the follow-up's query once its dialogue is filled in (e.g. quotes the earlier
    turns in the prompt too, for systems that read only the prompt)."""


class AskState(Protocol):
    """What a suite keeps across the asks of one segment, owned by the harness: each ask's
    query is rendered from it just before it is asked, and each record (raw answer and
    timings, nothing graded) updates it."""

    def render(self, ask: Ask, query: Query) -> Query: ...

    def update(self, ask: Ask, record: dict[str, object]) -> None:
        """Take in one record; may add fields to it (what was applied, say)."""


@dataclass(frozen=True)
class Segment:
    kind: str  # "main" | "fork" | "recent" | "after"
    name: str
    first_session: int
    last_session: int
    # Import the main pass's snapshot taken after this session index; None = empty memory.
    snapshot_after: int | None
    turns: tuple[Turn, ...]
    asks: tuple[Ask, ...]
    # Stop the last session right after its last question (forks and recent-session replays).
    stop_after_last_ask: bool
    state: Callable[[], AskState] | None = None
    """Built once per segment name when it first runs (None: asks are wire-ready as planned)."""
    keep_frame: Callable[[int], bool] | None = None
    """Which frames (by time_ms) to push; None: all. Called as the segment plays, so it may
    read what earlier segments left."""
    decoys: tuple[Turn, ...] = ()
    """Turns sent although no question of this segment depends on them: turns that other
    replays of these sessions carry before their questions, sent here too so that a turn on
    the wire says nothing of whether a question follows it. Never part of what is asked or
    scored; left out when the run's `PushCuts.decoys` is off."""
    cuts: tuple[Cut, ...] = ()
    """Where a push also ends although nothing is asked: the times at which other replays of
    these sessions ask, so that a push ending there says nothing of which replay this is."""
    stop_ms: int | None = None
    """Where a segment that stops early (`stop_after_last_ask`) stops in its last session
    when that is later than its last question: it goes on pushing, asking nothing more, so
    that its question is not the last thing its process sees (None: at its last question).
    Left out, as the decoys are, when the run's `PushCuts.decoys` is off."""

    def stop_in(self, session_index: int, decoys: bool = True) -> int | None:
        """The time after which nothing more is pushed in that session (None: its end,
        closed by EndSession)."""
        if session_index != self.last_session or not self.stop_after_last_ask:
            return None
        if decoys and self.stop_ms is not None:
            return self.stop_ms
        return self.asks[-1].time_ms if self.asks else None

    def turns_in(self, session_index: int) -> list[Turn]:
        return [t for t in self.turns if t.session_index == session_index]

    def decoys_in(self, session_index: int) -> list[Turn]:
        return [t for t in self.decoys if t.session_index == session_index]

    def cuts_in(self, session_index: int) -> list[Cut]:
        return [c for c in self.cuts if c.session_index == session_index]

    def asks_in(self, session_index: int) -> list[Ask]:
        return [a for a in self.asks if a.session_index == session_index]


def sorted_asks(asks: list[Ask]) -> tuple[Ask, ...]:
    return tuple(sorted(asks, key=lambda a: (a.time_ms, a.instance_id)))
