"""The answer each APM-Bench probe expects, as protocol 1.1 data (rule R12 of the .proto).

The prompts (prompts.py) say the format in words; these are the same formats
as `AnswerFormat` values and JSON Schemas, sent in every QueryRequest so that
a server in any language knows what to return without parsing the prompt.
docs/PROTOCOL.md shows each schema with examples.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from apmbench.adapters.sdk.types import AnswerFormat, Choice, QueryKind
from apmbench.harness.suites.apmbench.tasks import TaskSpec

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
DECISIONS = ("SILENT", "INTERVENE")


def format_of(kind: QueryKind, needs_option: bool = False) -> AnswerFormat:
    """The format for a query kind; a decision that must name an option is ERA's."""
    if kind is not QueryKind.DECISION:
        return AnswerFormat.OPTION
    return AnswerFormat.DECISION_WITH_OPTION if needs_option else AnswerFormat.DECISION


def format_for(task: TaskSpec) -> AnswerFormat:
    return format_of(task.query_kind, task.needs_option)


def _object(properties: dict[str, object], required: list[str]) -> dict[str, object]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def schema(answer_format: AnswerFormat, option_ids: Sequence[str] = ()) -> dict[str, object]:
    """The JSON Schema of an answer in `answer_format`; `option_ids` are the valid options."""
    option = {"type": "string", "enum": list(option_ids)}
    reason = {"type": "string", "description": "why, in a sentence"}
    if answer_format is AnswerFormat.OPTION:
        body = _object({"answer": option}, ["answer"])
    else:
        silent = _object({"decision": {"const": "SILENT"}, "reason": reason}, ["decision"])
        if answer_format is AnswerFormat.DECISION_WITH_OPTION:
            act = _object(
                {"decision": {"const": "INTERVENE"}, "answer": option, "reason": reason},
                ["decision", "answer"],
            )
        else:
            response = {"type": "string", "description": "what the assistant says now"}
            act = _object(
                {
                    "decision": {"const": "INTERVENE"},
                    "proactive_response": response,
                    "reason": reason,
                },
                ["decision", "proactive_response"],
            )
        body = {"oneOf": [silent, act]}
    return {"$schema": SCHEMA_DIALECT, **body}


def schema_text(answer_format: AnswerFormat, choices: Sequence[Choice]) -> str:
    """`schema` as the compact, key-sorted JSON string QueryRequest.answer_schema carries."""
    ids = [c.option_id for c in choices]
    return json.dumps(schema(answer_format, ids), sort_keys=True, separators=(",", ":"))
