"""Systems whose decisions make the gate's outcome known in advance, for judge tests."""

from __future__ import annotations

from typing import Any

from apmbench.adapters.sdk import Query, QueryKind
from helpers.systems import JsonMemory


class AlwaysIntervene(JsonMemory):
    """INTERVENE at every probe with option A: positive probes pass the gate, negative ones fail."""

    name = "always-intervene"

    def answer(self, query: Query) -> dict[str, Any]:
        if query.kind is QueryKind.DECISION:
            return {
                "decision": "INTERVENE",
                "answer": "A",
                "proactive_response": "Turn off the stove.",
                "reason": "The condition is met now.",
            }
        return {"answer": "A"}
