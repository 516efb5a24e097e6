"""Protocol 1.1: every APM-Bench query says its answer format and schema, from the task table,
and the schemas accept exactly the answers the grader reads as clean."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from apmbench.adapters.sdk import wire
from apmbench.adapters.sdk.types import AnswerFormat, Choice, QueryKind
from apmbench.harness.scoring.answers import CLEAN, parse_choice, parse_decision
from apmbench.harness.suites.apmbench.answer_formats import format_for, schema, schema_text
from apmbench.harness.suites.apmbench.dataset import load_dataset
from apmbench.harness.suites.apmbench.plan import query_for
from apmbench.harness.suites.apmbench.tasks import TABLE, spec

ABCD = [Choice(x, f"option {x}") for x in "ABCD"]
# (format, valid answers, invalid answers): the examples docs/PROTOCOL.md shows.
EXAMPLES = {
    AnswerFormat.OPTION: (
        ['{"answer":"B"}'],
        ['{"answer":"E"}', '{"answer":"B","reason":"x"}', '{"decision":"SILENT"}'],
    ),
    AnswerFormat.DECISION: (
        [
            '{"decision":"SILENT","reason":"the fridge is shut"}',
            '{"decision":"INTERVENE","proactive_response":"Take the BOTTLE.","reason":"open"}',
        ],
        ['{"decision":"INTERVENE","reason":"no response"}', '{"decision":"MAYBE"}'],
    ),
    AnswerFormat.DECISION_WITH_OPTION: (
        [
            '{"decision":"SILENT","reason":"not determined yet"}',
            '{"decision":"INTERVENE","answer":"C","reason":"the label is visible"}',
        ],
        ['{"decision":"INTERVENE","reason":"x"}', '{"decision":"INTERVENE","answer":"Z"}'],
    ),
}


def test_the_task_table_decides_each_format() -> None:
    formats = {s.task: format_for(s) for s in TABLE}
    assert formats["ERA"] is AnswerFormat.DECISION_WITH_OPTION
    assert {formats[t] for t in ("RCR", "MPA", "PRM", "TPG")} == {AnswerFormat.DECISION}
    assert {formats[t] for t in ("ER", "OCR", "STU", "EA")} == {AnswerFormat.OPTION}


@pytest.mark.parametrize("answer_format", list(AnswerFormat))
def test_the_schema_accepts_the_clean_answers_and_refuses_the_rest(
    answer_format: AnswerFormat,
) -> None:
    checker = jsonschema.Draft202012Validator(schema(answer_format, "ABCD"))
    checker.check_schema(checker.schema)
    valid, invalid = EXAMPLES[answer_format]
    options = [(c.option_id, c.text) for c in ABCD]
    for text in valid:
        assert checker.is_valid(json.loads(text)), text
        if answer_format is AnswerFormat.OPTION:
            assert parse_choice(text, options).status == CLEAN
        else:
            needs = answer_format is AnswerFormat.DECISION_WITH_OPTION
            assert parse_decision(text, options, needs_option=needs).status == CLEAN
    for text in invalid:
        assert not checker.is_valid(json.loads(text)), text


def test_every_planned_query_carries_its_format_and_schema(mini: Path) -> None:
    dataset = load_dataset(mini)
    seen: dict[str, AnswerFormat] = {}
    for candidate in dataset.candidates:
        for probe in candidate.probes:
            query = query_for(candidate, probe)
            task = spec(candidate.task)
            assert query.answer_format is format_for(task)
            ids = [c.option_id for c in candidate.choices]
            assert json.loads(query.answer_schema) == schema(format_for(task), ids)
            seen[candidate.task] = query.answer_format
            # And it survives the wire both ways.
            back = wire.query_from_pb(wire.query_to_pb(query))
            assert (back.answer_format, back.answer_schema) == (
                query.answer_format,
                query.answer_schema,
            )
    assert seen.get("ERA") is AnswerFormat.DECISION_WITH_OPTION
    assert "A" in json.loads(schema_text(AnswerFormat.OPTION, ABCD))["properties"]["answer"]["enum"]


def test_a_1_0_query_reads_as_format_not_said() -> None:
    """A protocol 1.0 harness leaves both fields unset: the SDK hands method code None/""."""
    from apmbench.v1 import memory_system_pb2 as pb

    old = pb.QueryRequest(query_id="q", kind=pb.QUERY_KIND_DECISION, prompt="p")
    query = wire.query_from_pb(old)
    assert query.kind is QueryKind.DECISION
    assert query.answer_format is None and query.answer_schema == ""


DOC = Path(__file__).resolve().parents[2] / "docs" / "PROTOCOL.md"


def _json_blocks() -> list[str]:
    parts = DOC.read_text().split("```json\n")[1:]
    return [p.split("```", 1)[0] for p in parts]


def test_the_reference_page_shows_the_real_schemas_and_valid_examples() -> None:
    """docs/PROTOCOL.md's schemas are the ones sent, and each example answer is valid."""
    known = [
        schema(f, ids) for f in AnswerFormat for ids in ("ABCD", "ABCDE")
    ]  # fmt: skip
    schemas = examples = 0
    for block in _json_blocks():
        text = block.strip()
        if '"$schema"' in text:
            assert json.loads(text) in known, text
            schemas += 1
            continue
        for line in text.splitlines():
            answer = json.loads(line)
            assert any(jsonschema.Draft202012Validator(s).is_valid(answer) for s in known), line
            examples += 1
    assert schemas >= 2 and examples >= 5


def test_the_reference_page_names_every_rpc_field_rule_and_code() -> None:
    from apmbench.harness.check.rules import RULES
    from apmbench.v1 import memory_system_pb2 as pb

    text = DOC.read_text()
    missing = [m.name for m in pb.DESCRIPTOR.services_by_name["MemorySystem"].methods]
    missing = [name for name in missing if f"`{name}(" not in text]
    for message in pb.DESCRIPTOR.message_types_by_name.values():
        # A field is named in backquotes, alone or after its parent (`capabilities.x`).
        missing += [f"{message.name}.{f.name}" for f in message.fields if f"{f.name}`" not in text]
    for enum in pb.DESCRIPTOR.enum_types_by_name.values():
        missing += [v.name for v in enum.values if v.number and v.name not in text]
    missing += [rule for rule in RULES if rule not in text]
    for code in ("INVALID_ARGUMENT", "FAILED_PRECONDITION", "UNIMPLEMENTED", "DATA_LOSS",
                 "RESOURCE_EXHAUSTED", "INTERNAL", "DEADLINE_EXCEEDED", "CANCELLED"):  # fmt: skip
        missing += [] if code in text else [code]
    assert not missing, f"docs/PROTOCOL.md does not document: {missing}"
