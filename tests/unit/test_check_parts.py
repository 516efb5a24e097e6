"""The check suite's parts that need no server: rules, selection, judging helpers, the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from apmbench.adapters.perception.reader import read_scene
from apmbench.adapters.sdk.types import (
    AnswerFormat,
    Capabilities,
    Frame,
    FrameEncoding,
    QueryKind,
    SystemInfo,
    UserTurn,
)
from apmbench.harness.check import CHECKS, CheckReport, CheckResult, Outcome, probes, select
from apmbench.harness.check.checks_frames import frame_sizes
from apmbench.harness.check.checks_query import format_problem
from apmbench.harness.check.checks_state import first_difference
from apmbench.harness.check.render import failures, to_json
from apmbench.harness.check.rules import RULES
from apmbench.harness.errors import ConfigError
from apmbench.harness.protocol.client import QueryResult
from apmbench.harness.protocol.streaming import streaming_problem

PROTO = Path(__file__).resolve().parents[2] / "proto" / "apmbench" / "v1" / "memory_system.proto"


def proto_comments() -> str:
    lines = [line.split("//", 1)[1] for line in PROTO.read_text().splitlines() if "//" in line]
    return " ".join(" ".join(lines).split())


@pytest.mark.parametrize("rule", list(RULES.values()), ids=lambda r: r.id)
def test_every_rule_quotes_the_proto(rule: object) -> None:
    assert hasattr(rule, "quote")
    assert " ".join(rule.quote.split()) in proto_comments()  # type: ignore[attr-defined]


def test_numbered_rules_are_the_protos_own() -> None:
    numbered = set(re.findall(r"^// (R\d) ", PROTO.read_text(), re.M))
    assert numbered == {r for r in RULES if re.fullmatch(r"R\d", r)}


def test_checks_have_unique_names_and_known_rules() -> None:
    names = [c.name for c in CHECKS]
    assert len(names) == len(set(names))
    assert all(c.rule is RULES[c.rule.id] and c.summary for c in CHECKS)
    # The list, each present by name.
    for needed in ("health", "reflection", "describe-version", "misuse-time-backwards",
                   "frames-encodings", "query-format", "query-read-only", "export-deterministic",
                   "state-round-trip", "state-large-transfer", "persistence-restart", "query-cancel"):  # fmt: skip
        assert needed in names


def test_selection() -> None:
    assert [c.name for c in select()] == [c.name for c in CHECKS]
    quick = [c.name for c in select(quick=True)]
    assert "persistence-restart" not in quick and "state-large-transfer" not in quick
    assert [c.name for c in select(only=["reflection"])] == ["reflection"]  # needs no Describe
    assert [c.name for c in select(only=["query-format"])] == ["describe-version", "query-format"]
    assert [c.name for c in select(only=["persistence-restart"], quick=True)] == [
        "describe-version",
        "persistence-restart",
    ]  # named explicitly: --quick does not drop it
    assert "lifecycle" not in [c.name for c in select(skip=["lifecycle"])]
    with pytest.raises(ConfigError, match="unknown check nope, nada: the checks are health"):
        select(only=["nope"], skip=["nada"])


def test_first_difference_shows_where_and_around() -> None:
    text = first_difference(b'{"at": 123, "x": 1}', b'{"at": 124, "x": 1}')
    assert "19 vs 19 bytes, first difference at byte 9" in text
    assert 'b\'{"at": 123, "x": 1}\' vs b\'{"at": 124' in text
    assert "first difference at byte 3" in first_difference(b"abc", b"abcd")


def result(*pieces: str) -> QueryResult:
    arrivals = tuple(0.001 * (i + 1) for i in range(len(pieces)))
    return QueryResult("".join(pieces), len(pieces), arrivals[0] if pieces else None, 0.01,
                       pieces, arrivals)  # fmt: skip


def teststreaming_problems() -> None:
    assert streaming_problem(result('{"answer":', '"A"}')) is None
    assert streaming_problem(result('{"answer":"A"}')) is None
    assert streaming_problem(result()) == "streamed no text"
    whitespace = streaming_problem(result(" ", '{"answer":"A"}'))
    assert whitespace is not None and "only whitespace" in whitespace
    cumulative = streaming_problem(result('{"ans', '{"answer":', '{"answer":"A"}'))
    assert cumulative is not None and "cumulative snapshots" in cumulative
    same_time = QueryResult("ab", 2, 0.1, 0.1, ("a", "b"), (0.1, 0.1))
    assert streaming_problem(same_time) == "the first chunk did not arrive before the last"


def test_format_problems_per_kind() -> None:
    mc, ea, decision, era = probes.probe_queries()
    assert format_problem(mc, '{"answer":"B"}') is None
    assert format_problem(mc, "Answer: B") is None  # repaired is readable
    assert "several options" in (format_problem(mc, "(A) or maybe (C)") or "")
    assert format_problem(ea, '{"answer":"E"}') is None
    assert "names no single option" in (format_problem(mc, '{"answer":"E"}') or "")
    assert format_problem(decision, '{"decision":"SILENT","reason":"x"}') is None
    assert "neither" in (format_problem(decision, '{"decision":"MAYBE"}') or "")
    # The ERA checkpoint (protocol 1.1's DECISION_WITH_OPTION): an INTERVENE names an option.
    assert format_problem(era, '{"decision":"INTERVENE","answer":"A","reason":"x"}') is None
    assert "without a single option" in (format_problem(era, '{"decision":"INTERVENE"}') or "")


def test_frame_sizes_keep_within_the_declared_side() -> None:
    assert frame_sizes(448) == [(448, 336), (336, 448), (448, 448), (224, 168)]
    assert all(max(s) <= 64 for s in frame_sizes(64))
    assert max(max(s) for s in frame_sizes(0)) == probes.DEFAULT_SIDE


def test_the_probe_session_is_time_ordered_and_readable() -> None:
    info = SystemInfo(
        "x", "1", Capabilities(frame_encodings=(FrameEncoding.RGB24,), preferred_max_side=0)
    )
    items = probes.session_items(probes.SESSION_1, info)
    times = [i.time_ms for i in items]
    assert times == sorted(times) and sum(isinstance(i, UserTurn) for i in items) == 1
    frames = [i for i in items if isinstance(i, Frame)]
    assert len(frames) == probes.SESSION_1.seconds
    # The renderer's own reader sees what the script says: the MUG goes from hand to desk.
    first, last = (read_scene(f.rgb()) for f in (frames[0], frames[-1]))
    assert (first.place, first.hand, last.hand) == ("DESK", "MUG", "")
    assert "MUG" in [s.label for s in last.slots]
    kinds = [q.kind for q in probes.probe_queries()]
    assert kinds == [QueryKind.MULTIPLE_CHOICE, QueryKind.EVIDENCE_AVAILABILITY, QueryKind.DECISION,
                     QueryKind.DECISION]  # fmt: skip
    formats = [q.answer_format for q in probes.probe_queries()]
    assert formats[2:] == [AnswerFormat.DECISION, AnswerFormat.DECISION_WITH_OPTION]


def test_the_report_as_json_and_failure_lines() -> None:
    rule = RULES["R5"]
    report = CheckReport(
        {"runtime": {"kind": "endpoint"}},
        (CheckResult("query-read-only", Outcome.FAIL, rule, "changed", "work on a copy", 0.5),
         CheckResult("health", Outcome.PASS, RULES["HEALTH"], "SERVING")),
        1.0,
    )  # fmt: skip
    assert not report.ok and report.counts() == {"pass": 1, "fail": 1, "n/a": 0, "warn": 0}
    data = json.loads(to_json(report))
    assert data["ok"] is False and data["checks"][0]["rule"] == "R5"
    assert data["checks"][0]["rule_text"] == rule.quote
    [line] = failures(report)
    assert line.startswith("FAIL query-read-only: breaks R5 Query is read-only")
    assert line.endswith("changed. Hint: work on a copy")
