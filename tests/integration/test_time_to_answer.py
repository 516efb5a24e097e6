"""Time to first token can be bought with a cheap first chunk; time to answer cannot.

The cheater sends "{" at once and the answer 1.2 s later: its TTFT is a few
milliseconds, its time to answer over a second, and `--audit` flags every
audited query for it. An honest server's two times stay together.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.audits.settings import AuditSettings
from apmbench.harness.runtimes import runtime_spec

pytestmark = pytest.mark.integration


def run(mini: Path, out: Path, system: str) -> dict:  # type: ignore[type-arg]
    result = evaluate(
        EvaluateOptions(
            dataset=mini,
            out=out,
            runtime=runtime_spec(system=system),
            audit=AuditSettings(0, 0, 0),
        )
    )
    return result.report


@pytest.mark.slow
def test_a_cheap_first_chunk_is_caught(mini: Path, tmp_path: Path) -> None:
    report = run(mini, tmp_path / "cheap", "helpers.systems:CheapFirstChunk")
    latency = report["latency"]
    # Each answer's first chunk comes 1.2 s (the system's own sleep) before its rest: the
    # margin the system sets, whatever the machine's load does to both.
    first, whole = latency["time_to_first_token_s"]["p50"], latency["time_to_answer_s"]["p50"]
    assert whole >= 1.2 and whole - first >= 1.15, latency
    flagged = report["audit"]["first_token"]["flagged"]
    rows = [
        json.loads(x) for x in (tmp_path / "cheap" / "instances.jsonl").read_text().split("\n") if x
    ]
    assert len(flagged) == len(rows) > 0
    assert "not the answer's" in flagged[0]["problem"]
    assert not report["audit"]["clean"]
    # The headline shows it: time to answer beside TTFT in Table 3, and the flags at the top
    # of report.md and report.html, not only in report.json.
    markdown = (tmp_path / "cheap" / "report.md").read_text()
    head = markdown.split("## Utility, latency and storage")[0]
    assert f"**Audit: {len(flagged)} flags** (first token not the answer's {len(flagged)})" in head
    header, _, row = ("| Method |" + markdown.split("| Method |")[1]).split("\n")[:3]
    cells = dict(zip(header.split("|"), row.split("|"), strict=True))
    assert float(cells[" Answer (s) "]) >= 1.2 > 6 * float(cells[" TTFT (s) "])


@pytest.mark.slow
def test_an_honest_server_answers_with_its_first_token(mini: Path, tmp_path: Path) -> None:
    report = run(mini, tmp_path / "honest", "helpers.systems:JsonMemory")
    latency = report["latency"]
    assert latency["time_to_answer_s"]["n"] > 0
    assert latency["time_to_answer_s"]["p50"] == latency["time_to_first_token_s"]["p50"]
    assert report["audit"]["first_token"]["flagged"] == []
