"""The .proto, docs/PROTOCOL.md and the Node.js template's copy say the same: every rule
(R1.., S1..), every status code and which call may answer it, every field's comment."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "proto"))
import protocol_text  # noqa: E402

from apmbench.harness.protocol import wire_rules  # noqa: E402

PROTO = protocol_text.PROTO.read_text()
PAGE = (ROOT / "docs" / "PROTOCOL.md").read_text()


def _flat(s: str) -> str:
    return " ".join(s.replace("\\|", "|").split())


def test_the_template_carries_the_proto_verbatim() -> None:
    copy = ROOT / "containers" / "template-node" / "memory_system.proto"
    assert copy.read_text() == PROTO


def test_every_rule_is_on_the_page_in_the_protos_words() -> None:
    found = protocol_text.rules(PROTO)
    ids = [r.id for r in found]
    assert ids[:13] == [f"R{n}" for n in range(1, 14)] and {"S1", "S2"} <= set(ids)
    page = _flat(PAGE)
    for rule in found:
        assert len(rule.text) > 40, rule
        assert f"| {rule.id} {rule.title} | {rule.text} |" in page, rule.id


def test_every_status_code_and_call_is_on_the_page_and_in_the_client() -> None:
    page = _flat(PAGE)
    codes = protocol_text.status_codes(PROTO)
    assert [c for c, _ in codes] == [
        "INVALID_ARGUMENT", "FAILED_PRECONDITION", "UNIMPLEMENTED", "DATA_LOSS",
        "RESOURCE_EXHAUSTED", "INTERNAL", "DEADLINE_EXCEEDED", "CANCELLED", "UNAVAILABLE",
    ]  # fmt: skip
    for code, when in codes:
        assert f"| `{code}` | {when} |" in page, code
    every = {"RESOURCE_EXHAUSTED", "INTERNAL", "DEADLINE_EXCEEDED", "CANCELLED", "UNAVAILABLE"}
    calls = protocol_text.call_codes(PROTO)
    assert {c for c, _ in calls} == set(wire_rules.ALLOWED_STATUS)
    for call, listed in calls:
        assert f"| {call} | {listed} |" in page, call
        named = set() if listed == "none." else set(listed.rstrip(".").split(", "))
        # The harness client refuses exactly the codes the .proto does not list.
        assert wire_rules.ALLOWED_STATUS[call] == frozenset(every | named), call


def test_every_field_comment_is_on_the_page() -> None:
    page = _flat(PAGE)
    declared = protocol_text.fields(PROTO)
    assert len(declared) > 60
    for f in declared:
        assert f.comment, f"{f.message}.{'/'.join(f.names)} has no comment in the .proto"
        assert f"{f.comment} |" in page, (f.message, f.names)
        for name in f.names:
            assert name in page


def test_a_changed_rule_is_caught() -> None:
    # The comparison can fail: a page with one rule reworded does not match.
    rule = protocol_text.rules(PROTO)[1]
    reworded = _flat(PAGE).replace(rule.text, rule.text.replace("earlier", "later"))
    assert f"| {rule.id} {rule.title} | {rule.text} |" not in reworded


def test_an_interval_from_0_survives_the_wire_and_none_stays_none() -> None:
    # Protocol 1.3: interval_start_ms is optional, so DAY1 00:00:00 is an interval start.
    from apmbench.adapters.sdk import wire
    from apmbench.adapters.sdk.types import Query, QueryKind

    for start in (0, 5000, None):
        query = Query("q", 9000, QueryKind.DECISION, "", "", interval_start_ms=start)
        sent = wire.query_to_pb(query)
        assert sent.HasField("interval_start_ms") is (start is not None)
        assert wire.query_from_pb(sent).interval_start_ms == start
    # A 1.0-1.2 client never sets presence: its 0 reads as no interval.
    old = wire.query_to_pb(Query("q", 9000, QueryKind.DECISION, "", ""))
    old.ClearField("interval_start_ms")
    assert wire.query_from_pb(old).interval_start_ms is None
