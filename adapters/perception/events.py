"""What happened, read from consecutive scenes: the reference systems' notion of an event.

The same phrases describe events in the synthetic generator's options and
references, so that a system that perceived an event can recognise it among
the options.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from apmbench.adapters.perception.layout import Scene
from apmbench.adapters.sdk.clock import MS_PER_DAY

ACTIONS = ("pickup", "putdown", "toggle", "count")
_VERBS = {"ON": "switched on", "OFF": "switched off", "OPEN": "opened", "SHUT": "closed"}


def describe(kind: str, place: str, subject: str, before: str, after: str) -> str:
    """An event as a past-tense phrase ("picked up the MUG at the KITCHEN")."""
    if kind == "pickup":
        return f"picked up the {subject} at the {place}"
    if kind == "putdown":
        return f"put the {subject} down at the {place}"
    if kind == "toggle":
        return f"{_VERBS.get(after, after.lower())} the {subject} at the {place}"
    if kind == "count":
        more = int(after) > int(before)
        n = abs(int(after) - int(before))
        return f"{'added' if more else 'took away'} {n} {subject} at the {place}"
    if kind == "goto":
        return f"walked to the {place}"
    return f"the screen at the {place} changed to {after}"


@dataclass(frozen=True)
class SeenEvent:
    """An event with the session it belongs to; `time_ms` is None when only the order is known."""

    order: int
    time_ms: int | None
    session_index: int
    day: int
    kind: str
    place: str
    subject: str = ""
    before: str = ""
    after: str = ""

    def describe(self) -> str:
        return describe(self.kind, self.place, self.subject, self.before, self.after)


@dataclass(frozen=True)
class Observation:
    time_ms: int
    session_index: int
    scene: Scene


def scene_changes(a: Scene, b: Scene) -> list[tuple[str, str, str, str, str]]:
    """(kind, place, subject, before, after) for every difference between two scenes."""
    out: list[tuple[str, str, str, str, str]] = []
    if a.place != b.place:
        out.append(("goto", b.place, "", a.place, b.place))
    if a.hand != b.hand:
        if a.hand:
            out.append(("putdown", b.place, a.hand, "", ""))
        if b.hand:
            out.append(("pickup", b.place if a.place == b.place else a.place, b.hand, "", ""))
    if a.place == b.place:
        old = {s.label: s for s in a.slots if s.label}
        for s in b.slots:
            prev = old.get(s.label)
            if prev is None:
                continue
            if prev.state != s.state and prev.state and s.state:
                out.append(("toggle", b.place, s.label, prev.state, s.state))
            elif prev.count != s.count and not prev.state:
                out.append(("count", b.place, s.label, str(prev.count), str(s.count)))
        if a.screen != b.screen:
            out.append(("screen", b.place, "SCREEN", a.screen, b.screen))
    return out


def derive_events(observations: Sequence[Observation], start_order: int = 0) -> list[SeenEvent]:
    """Events between consecutive observations of the same session, in time order."""
    events: list[SeenEvent] = []
    for a, b in itertools.pairwise(observations):
        if a.session_index != b.session_index:
            continue
        for kind, place, subject, before, after in scene_changes(a.scene, b.scene):
            events.append(
                SeenEvent(
                    start_order + len(events),
                    b.time_ms,
                    b.session_index,
                    b.time_ms // MS_PER_DAY,
                    kind,
                    place,
                    subject,
                    before,
                    after,
                )
            )
    return events


def last_seen(observations: Iterable[Observation]) -> dict[str, tuple[str, int]]:
    """Object -> (place, session index) of the last frame that showed it in a slot."""
    where: dict[str, tuple[str, int]] = {}
    for o in observations:
        for s in o.scene.slots:
            if s.label:
                where[s.label] = (o.scene.place, o.session_index)
        if o.scene.hand:
            where[o.scene.hand] = ("HAND", o.session_index)
    return where
