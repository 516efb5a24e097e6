"""`text-log`: text as memory; at each session end it writes a compact text memory, keeps only that.

During a session it perceives every frame and holds the session's
observations (the current causal prefix, never exported). At EndSession it
writes, per session: the first `MAX_EVENTS` actions (no times, only their
order), where each object was last seen, and the user's registrations. Later
sessions see only that text, so details beyond it are lost, by design, as
the paper's text-summary memory loses them.
"""

from __future__ import annotations

from apmbench.adapters.perception.events import (
    ACTIONS,
    Observation,
    SeenEvent,
    derive_events,
    last_seen,
)
from apmbench.adapters.sdk import (
    ExportedState,
    Frame,
    InvalidArgument,
    Query,
    SessionEnd,
    SessionStart,
    UserTurnKind,
)
from apmbench.adapters.sdk.clock import MS_PER_DAY
from apmbench.adapters.systems.answering import Knowledge
from apmbench.adapters.systems.perceiving import PerceivingSystem, perceive

MAX_EVENTS = 8
CONTENT_TYPE = "text/x-apmbench-text-log"


def _token(text: str) -> str:
    """A field of a log line: one space separates fields, so a space in what perception
    read (a real video's OCR) becomes "_"; an empty field stays empty."""
    return "_".join(text.split())


class TextLog(PerceivingSystem):
    name = "text-log"

    def __init__(self) -> None:
        super().__init__()
        self.log: list[str] = []
        self.current: list[Observation] = []
        self.day = 0

    def memory_kind(self) -> str:
        return f"text: first {MAX_EVENTS} actions per session, last-seen places, registrations"

    def forget(self) -> None:
        self.log = []
        self.current = []

    def start_session(self, start: SessionStart) -> None:
        super().start_session(start)
        self.current = []
        self.day = start.time_ms // MS_PER_DAY

    def ingest_frame(self, frame: Frame) -> None:
        self.current.append(perceive(frame, self.session_index))

    def end_session(self, end: SessionEnd) -> None:
        lines = [f"SESSION {self.session_index} DAY{self.day + 1}"]
        actions = [e for e in derive_events(self.current) if e.kind in ACTIONS]
        for e in actions[:MAX_EVENTS]:
            fields = (e.kind, e.place, e.subject, e.before or "-", e.after or "-")
            lines.append("EVENT " + " ".join(_token(f) for f in fields))
        for obj, (place, _) in sorted(last_seen(self.current).items()):
            lines.append(f"AT {_token(obj)} {_token(place)}")
        for t in self.turns:
            if t.kind is UserTurnKind.REGISTRATION:
                lines.append(f"REGISTERED {t.text}")
        self.log.extend(lines)
        self.current = []
        super().end_session(end)

    def _recall(self) -> tuple[list[SeenEvent], dict[str, tuple[str, int]], list[str]]:
        events: list[SeenEvent] = []
        where: dict[str, tuple[str, int]] = {}
        registrations: list[str] = []
        session, day = 0, 0
        for line in self.log:
            word, _, rest = line.partition(" ")
            if word == "SESSION":
                number, day_id = rest.split()
                session, day = int(number), int(day_id.removeprefix("DAY")) - 1
            elif word == "EVENT":
                # split(" "), not split(): a field perception read as empty stays a field.
                kind, place, subject, before, after = rest.split(" ")
                events.append(
                    SeenEvent(
                        len(events),
                        None,
                        session,
                        day,
                        kind,
                        place,
                        subject,
                        before.strip("-"),
                        after.strip("-"),
                    )
                )
            elif word == "AT":
                obj, place = rest.split(" ")
                where[obj] = (place, session)
            elif word == "REGISTERED":
                registrations.append(rest)
        return events, where, registrations

    def knowledge(self, query: Query) -> Knowledge:
        events, where, registrations = self._recall()
        events += derive_events(self.current, start_order=len(events))
        where.update(last_seen(self.current))
        return Knowledge(
            session_index=self.session_index,
            events=events,
            latest=self.current[-1].scene if self.current else None,
            locations=where,
            turns=list(self.turns),
            registrations=registrations,
        )

    def export_state(self) -> ExportedState:
        header = f"SESSIONS {self.session_index + 1}\n"
        return ExportedState((header + "\n".join(self.log)).encode(), CONTENT_TYPE, 1)

    def import_state(self, state: ExportedState) -> None:
        if state.content_type != CONTENT_TYPE:
            raise InvalidArgument(f"text-log imports {CONTENT_TYPE}, got {state.content_type}")
        head, _, body = state.data.decode().partition("\n")
        if not head.startswith("SESSIONS "):
            raise InvalidArgument("text-log state must start with a SESSIONS line")
        self.session_index = int(head.split()[1]) - 1
        self.log = body.split("\n") if body else []
        self.current = []
        self.turns = []
