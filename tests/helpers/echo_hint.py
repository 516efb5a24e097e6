"""EgoProbe systems with a tiny memory (place -> the object last put down there), from a
red team. `LastAt` answers from it; `EchoHinted` has the same memory and also keeps, in
process memory it never exports, the questions a dialogue's R2 asked at the current time:
when a single-turn question with that text comes at that time it is Echo, whose answer is
never the latest object at the place (Echo's distractors are later put-downs), so it rules
that object out. This paid only while a dialogue was asked before its parent at their
shared time (Echo 12.5 -> 37.5 on `small` seed 0); each answer says whether the hint fired.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator

from apmbench.adapters.perception.events import Observation, derive_events
from apmbench.adapters.sdk import ExportedState, Frame, Query, SessionEnd
from apmbench.adapters.systems.answering import Knowledge
from apmbench.adapters.systems.perceiving import PerceivingSystem, perceive

_PLACE = re.compile(r"at the ([A-Z_ ]+?)[.?]")


def _stable(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


class LastAt(PerceivingSystem):
    name = "last-at"
    hinted = False

    def __init__(self) -> None:
        super().__init__()
        self.last: dict[str, str] = {}
        self.seen: list[Observation] = []
        self.r2_at: dict[str, int] = {}

    def memory_kind(self) -> str:
        return "place -> the object last put down there"

    def forget(self) -> None:
        self.last, self.seen = {}, []

    def ingest_frame(self, frame: Frame) -> None:
        self.seen.append(perceive(frame, self.session_index))
        for event in derive_events(self.seen):
            if event.kind == "putdown":
                self.last[event.place] = event.subject
        self.seen = self.seen[-1:]

    def end_session(self, end: SessionEnd) -> None:
        self.seen = []
        super().end_session(end)

    def query(self, query: Query) -> Iterator[str]:
        texts = [c.text.strip().lower() for c in query.choices]
        found = _PLACE.search(query.question)
        place = found.group(1) if found else ""
        if "yes" in texts and "no" in texts:
            said = "yes" if place in self.last else "no"
            yield json.dumps({"answer": query.choices[texts.index(said)].option_id})
            return
        if query.dialogue:
            self.r2_at[query.question] = query.time_ms
        ids = [c.option_id for c in query.choices]
        pick = next((c.option_id for c in query.choices if c.text == self.last.get(place)), None)
        hinted = self.hinted and self.r2_at.get(query.question) == query.time_ms
        if (hinted or pick is None) and ids:
            others = [i for i in ids if i != pick]
            pick = others[_stable(query.question) % len(others)]
        yield json.dumps({"answer": pick, "hinted": hinted})

    def knowledge(self, query: Query) -> Knowledge:
        raise NotImplementedError("query() answers without it")

    def export_state(self) -> ExportedState:
        return ExportedState(json.dumps(self.last, sort_keys=True).encode(), "application/json", 1)

    def import_state(self, state: ExportedState) -> None:
        self.last = json.loads(state.data) if state.data else {}


class EchoHinted(LastAt):
    hinted = True
