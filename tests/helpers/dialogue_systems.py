"""Systems for the two-turn dialogue tests, served by `apmbench-grpc serve helpers.dialogue_systems:NAME`.

`DialogueRecorder` writes every frame and query that reaches it to the JSONL
file named by $APMBENCH_RECORD, with the digest of its memory at each query
(the branch the query ran on) and the latest frame time it holds. It answers
a yes/no question "yes" or "no" by a hash of its query time, so some dialogues
go on to R2 and some stop (on tiny's three since generator version 5: one yes, two no), and every answer carries a fresh nonce so that a
test can tell which answer a later turn quotes.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterator
from typing import Any

from apmbench.adapters.sdk import Frame, Query
from helpers.systems import JsonMemory


class DialogueRecorder(JsonMemory):
    name = "dialogue-recorder"

    def __init__(self) -> None:
        super().__init__()
        self._path = os.environ["APMBENCH_RECORD"]

    def empty(self) -> dict[str, Any]:
        return {**super().empty(), "latest_ms": None}

    def _log(self, **event: Any) -> None:
        with open(self._path, "a", encoding="utf-8") as f:
            f.write(json.dumps(event) + "\n")

    def ingest_frame(self, frame: Frame) -> None:
        super().ingest_frame(frame)
        self.memory["latest_ms"] = frame.time_ms
        self._log(event="frame", time_ms=frame.time_ms)

    def _choose(self, query: Query) -> str:
        if [c.text for c in query.choices] == ["Yes", "No"]:
            key = str(query.time_ms).encode()
            return "A" if hashlib.sha256(key).digest()[0] % 2 else "B"
        return query.choices[0].option_id

    def query(self, query: Query) -> Iterator[str]:
        text = json.dumps({"answer": self._choose(query), "nonce": uuid.uuid4().hex})
        self._log(
            event="query",
            time_ms=query.time_ms,
            question=query.question,
            prompt=query.prompt,
            choices=[c.text for c in query.choices],
            dialogue=[[t.prompt, t.question, t.answer] for t in query.dialogue],
            branch=hashlib.sha256(json.dumps(self.memory, sort_keys=True).encode()).hexdigest(),
            latest_ms=self.memory["latest_ms"],
            answer=text,
        )
        yield text


class DialogueBlind(DialogueRecorder):
    """Answers R1 with a plain "no" whatever it saw: no dialogue should ever reach R2."""

    name = "dialogue-blind"

    def _choose(self, query: Query) -> str:
        if [c.text for c in query.choices] == ["Yes", "No"]:
            return "B"
        return query.choices[0].option_id


class RemembersDialogue(JsonMemory):
    """Writes each dialogue turn it is shown into its memory: breaks the dialogue rule."""

    name = "remembers-dialogue"

    def query(self, query: Query) -> Iterator[str]:
        for turn in query.dialogue:
            self.memory["turns"].append(turn.answer)
        yield json.dumps(self.answer(query))
