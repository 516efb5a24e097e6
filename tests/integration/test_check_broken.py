"""Each deliberately broken server fails exactly the check aimed at it, and nothing else."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
from helpers import broken_servers
from helpers.broken_servers import TimeBlindServicer, serve_raw
from helpers.broken_systems import DeclaresOlder, Honest
from helpers.systems import JsonMemory, RawFrames

from apmbench.adapters.sdk import (
    PROTOCOL_VERSION,
    Capabilities,
    FrameEncoding,
    RunningServer,
    SystemInfo,
    start_server,
)
from apmbench.adapters.sdk.server import MemorySystemServicer
from apmbench.adapters.sdk.types import StateManifest
from apmbench.harness.check import CheckReport, Outcome, run_suite, select
from apmbench.harness.check.render import failures, table, to_json
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.protocol.client import Deadlines, SystemClient
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.endpoint import EndpointRuntime
from apmbench.harness.runtimes.process import ProcessRuntime
from apmbench.v1 import memory_system_pb2 as pb
from apmbench.v1 import memory_system_pb2_grpc as pb_grpc

pytestmark = pytest.mark.usefixtures("helper_env")
DEADLINES = Deadlines(control=30, push=60, query=30, state=120, end_session=60)


def on_process(spec: str, tmp_path: Path) -> CheckReport:
    with ProcessRuntime(spec, tmp_path / "system.log", DEADLINES, 30) as runtime:
        return run_suite(runtime, select())


def on_endpoint(address: str) -> CheckReport:
    with EndpointRuntime(address, DEADLINES, 10) as runtime:
        return run_suite(runtime, select())


def outcomes(report: CheckReport, outcome: Outcome) -> set[str]:
    return {r.name for r in report.results if r.outcome is outcome}


def explain(report: CheckReport) -> str:
    return "\n".join(failures(report)) or "no failures"


@pytest.fixture
def raw(sock_dir: Path) -> Iterator[list[RunningServer]]:
    servers: list[RunningServer] = []
    yield servers
    for s in servers:
        s.stop(grace=None)


@pytest.mark.parametrize(
    ("name", "aimed"),
    [
        ("Honest", set()),
        ("MutatesInQuery", {"query-read-only"}),
        ("NondeterministicExport", {"export-deterministic"}),
        ("ForgetsOnRestart", {"persistence-restart"}),
        ("ResumesSessions", set()),
        ("LosesOpenSession", {"resume-session"}),
        pytest.param("WorksPastDeadline", {"query-cancel"}, marks=pytest.mark.slow),
        ("PadsFirstChunk", {"query-streams"}),
        # The same pad as a zero-width space, which `str.strip()` keeps: blank all the same.
        ("PadsFirstChunkZeroWidth", {"query-streams"}),
        # Aimed at the caching audit of real runs: the conformance checks cannot see them.
        pytest.param("CachesByQueryId", set(), marks=pytest.mark.slow),
        ("AnswersById", set()),
    ],
)
def test_a_broken_system_fails_exactly_its_check(
    name: str, aimed: set[str], tmp_path: Path
) -> None:
    report = on_process(f"helpers.broken_systems:{name}", tmp_path)
    assert outcomes(report, Outcome.FAIL) == aimed, explain(report)
    assert report.ok is (not aimed)
    for result, line in zip(report.failed, failures(report), strict=True):
        # Every failure names the rule it broke, in the .proto's words, and what to do.
        assert f"breaks {result.rule.label()} (memory_system.proto: " in line
        assert result.rule.quote in line and result.hint and "Hint: " in line


def test_a_nondeterministic_export_is_not_blamed_on_other_rules(tmp_path: Path) -> None:
    report = on_process("helpers.broken_systems:NondeterministicExport", tmp_path)
    dependent = {"query-read-only", "state-round-trip", "reset-forgets"}
    assert dependent <= outcomes(report, Outcome.NOT_APPLICABLE)
    for r in report.results:
        if r.name in dependent:
            assert "export-deterministic" in r.reason, r
    failed = next(r for r in report.results if r.name == "export-deterministic")
    assert "first difference at byte" in failed.reason and "exported_at_ns" in failed.reason
    assert "timestamps" in failed.hint


def test_a_server_that_ignores_time_order(raw: list[RunningServer], sock_dir: Path) -> None:
    raw.append(serve_raw(TimeBlindServicer(Honest()), f"unix:{sock_dir}/blind"))
    report = on_endpoint(f"unix:{sock_dir}/blind")
    assert outcomes(report, Outcome.FAIL) == {"misuse-time-backwards"}, explain(report)
    failed = report.failed[0]
    assert failed.rule.id == "R2"
    assert "accepted; expected INVALID_ARGUMENT" in failed.reason
    # An endpoint cannot be restarted: said, not failed.
    assert "persistence-restart" in outcomes(report, Outcome.NOT_APPLICABLE)


@pytest.mark.parametrize(
    ("servicer", "aimed", "rule"),
    [
        ("EndsAnySessionServicer", "misuse-end-other-session", "SESSION-ID"),
        ("KindBlindServicer", "misuse-malformed-items", "R10"),
        ("LaxShaServicer", "misuse-import-bad-manifest", "MANIFEST"),
        ("FieldsFirstServicer", "status-precedence", "PRECEDENCE"),
        ("FirstOfBatchServicer", "push-batches", "R13"),
    ],
)
def test_a_server_breaking_one_rule_of_protocol_1_1_or_1_2_fails_exactly_that_check(
    servicer: str, aimed: str, rule: str, raw: list[RunningServer], sock_dir: Path
) -> None:
    address = f"unix:{sock_dir}/one-rule"
    raw.append(serve_raw(getattr(broken_servers, servicer)(Honest()), address))
    report = on_endpoint(address)
    assert outcomes(report, Outcome.FAIL) == {aimed}, explain(report)
    [line] = failures(report)
    assert f"FAIL {aimed}: breaks {rule} " in line, line


@pytest.mark.parametrize(
    ("servicer", "declared", "aimed", "since"),
    [
        ("QueryKeepsClockServicer", "1.2", "misuse-time-backwards", "1.3"),
        ("EndsAnySessionServicer", "1.0", "misuse-end-other-session", "1.1"),
        ("KindBlindServicer", "1.0", "misuse-malformed-items", "1.1"),
        ("LaxShaServicer", "1.0", "misuse-import-bad-manifest", "1.1"),
    ],
)
def test_a_server_is_judged_by_the_version_it_declares(
    servicer: str,
    declared: str,
    aimed: str,
    since: str,
    raw: list[RunningServer],
    sock_dir: Path,
) -> None:
    """A rule newer than the declared version is a warning naming the version that added it;
    the same server declaring that version fails it (the gate is not a blanket pass)."""
    reports = {}
    for version in (declared, since):
        address = f"unix:{sock_dir}/v{version}"
        raw.append(serve_raw(getattr(broken_servers, servicer)(DeclaresOlder(version)), address))
        reports[version] = on_endpoint(address)
    old, new = reports[declared], reports[since]
    assert not old.failed, explain(old)
    warned = next(r for r in old.results if r.name == aimed)
    assert warned.outcome is Outcome.WARN
    assert warned.reason.startswith(f"rule new in {since}: "), warned.reason
    assert f"declares protocol {declared}" in warned.reason
    assert old.target["judged_by"] == declared and new.target["judged_by"] == since
    assert f"judged by protocol {declared}" in str(table(old).title)
    assert outcomes(new, Outcome.FAIL) == {aimed}, explain(new)


def test_a_server_without_health_or_reflection(raw: list[RunningServer], sock_dir: Path) -> None:
    address = f"unix:{sock_dir}/bare"
    servicer = MemorySystemServicer(Honest())
    raw.append(serve_raw(servicer, address, with_health=False, with_reflection=False))
    report = on_endpoint(address)
    # Health is required; reflection only recommended (evaluate never uses it).
    assert outcomes(report, Outcome.FAIL) == {"health"}, explain(report)
    assert outcomes(report, Outcome.WARN) == {"reflection"}
    health = report.results[0]
    assert "no grpc.health.v1.Health service" in health.reason and "serve()" in health.hint
    warned = next(r for r in report.results if r.name == "reflection")
    assert "neither v1 nor v1alpha" in warned.reason
    assert "@grpc/reflection" in warned.hint and "grpcio-reflection" in warned.hint


def test_the_sdk_serves_reflection_v1_and_v1alpha(raw: list[RunningServer], sock_dir: Path) -> None:
    raw.append(start_server(Honest(), f"unix:{sock_dir}/sdk"))
    report = on_endpoint(f"unix:{sock_dir}/sdk")
    passed = next(r for r in report.results if r.name == "reflection")
    assert passed.outcome is Outcome.PASS and passed.details["reflection"] == ["v1", "v1alpha"]


class SecondMajor(JsonMemory):
    def describe(self) -> SystemInfo:
        caps = Capabilities(frame_encodings=(FrameEncoding.JPEG,))
        return SystemInfo("second-major", "1", caps, protocol_version="2.3")


def test_another_major_version_is_a_clear_refusal(raw: list[RunningServer], sock_dir: Path) -> None:
    raw.append(start_server(SecondMajor(), f"unix:{sock_dir}/v2"))
    report = on_endpoint(f"unix:{sock_dir}/v2")
    assert outcomes(report, Outcome.FAIL) == {"describe-version"}, explain(report)
    refusal = next(r for r in report.results if r.name == "describe-version")
    assert f"speaks protocol 2.3; this harness speaks {PROTOCOL_VERSION}" in refusal.reason
    assert "protocol 1.x" in refusal.hint
    later = [
        r for r in report.results if r.name not in ("health", "reflection", "describe-version")
    ]
    assert later and all(r.outcome is Outcome.NOT_APPLICABLE for r in later)
    assert '"ok": false' in to_json(report)


class SpeaksOneZero(Honest):
    """A protocol 1.0 server: it reports "1.0" and never reads the 1.1 answer fields."""

    def describe(self) -> SystemInfo:
        return replace(super().describe(), protocol_version="1.0")


def test_a_1_0_server_is_still_checked_and_evaluated(
    raw: list[RunningServer], sock_dir: Path, mini: Path, tmp_path: Path
) -> None:
    address = f"unix:{sock_dir}/v10"
    raw.append(start_server(SpeaksOneZero(), address))
    report = on_endpoint(address)
    assert report.ok, explain(report)
    assert report.target["system"]["protocol_version"] == "1.0"  # type: ignore[index]
    out = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=mini,
            out=out,
            runtime=runtime_spec(endpoint=address),
            persistence=Persistence.RESET,
        )
    )
    manifest = json.loads((out / "manifest.json").read_text())
    # Both versions are on record: the harness's and the one the server speaks.
    assert (manifest["protocol_version"], manifest["system"]["protocol_version"]) == (
        PROTOCOL_VERSION,
        "1.0",
    )
    # The capabilities in full, and which RPC the pushes went through (R13).
    assert manifest["system"]["capabilities"]["accepts_item_batches"] is True
    assert manifest["system"]["push_rpc"] == "PushItemBatches"


@pytest.mark.parametrize(
    ("servicer", "aimed", "rule", "dependent"),
    [
        # One defect, one failure under its own rule; the checks that needed a valid export
        # say why they could not run, naming the rule and the check that failed.
        ("UpperShaServicer", "export-manifest", "MANIFEST", "misuse-import-malformed"),
        pytest.param(
            "IgnoresChunkSizeServicer",
            "export-chunking",
            "R7",
            "export-deterministic",
            marks=pytest.mark.slow,
        ),
        ("QueryKeepsClockServicer", "misuse-time-backwards", "R2", None),
    ],
)
def test_one_defect_is_blamed_once_under_its_own_rule(
    servicer: str,
    aimed: str,
    rule: str,
    dependent: str | None,
    raw: list[RunningServer],
    sock_dir: Path,
) -> None:
    address = f"unix:{sock_dir}/one-defect"
    # A state past 4 KiB, so that export-deterministic's 4 KiB export needs several chunks.
    system = RawFrames() if servicer == "IgnoresChunkSizeServicer" else Honest()
    raw.append(serve_raw(getattr(broken_servers, servicer)(system), address))
    report = on_endpoint(address)
    assert outcomes(report, Outcome.FAIL) == {aimed}, explain(report)
    [failed] = report.failed
    assert failed.rule.id == rule, failed
    [line] = failures(report)
    assert f"FAIL {aimed}: breaks {rule} " in line, line
    if dependent is not None:
        skipped = next(r for r in report.results if r.name == dependent)
        assert skipped.outcome is Outcome.NOT_APPLICABLE, skipped
        assert f"breaks rule {rule}" in skipped.reason and aimed in skipped.reason


def test_a_fenced_answer_is_a_warning_naming_r12(raw: list[RunningServer], sock_dir: Path) -> None:
    address = f"unix:{sock_dir}/fenced"
    raw.append(serve_raw(broken_servers.FencedServicer(Honest()), address))
    report = on_endpoint(address)
    assert report.ok, explain(report)
    warned = next(r for r in report.results if r.name == "query-format")
    assert warned.outcome is Outcome.WARN, warned
    assert warned.reason.startswith("R12:") and "fence" in warned.reason


@pytest.mark.slow
def test_every_call_check_makes_keeps_every_rule_even_with_a_state_past_2_mib(
    raw: list[RunningServer], sock_dir: Path
) -> None:
    address = f"unix:{sock_dir}/strict"
    strict = broken_servers.StrictServicer(RawFrames())
    raw.append(serve_raw(strict, address))
    with EndpointRuntime(address, DEADLINES, 10) as runtime:
        report = run_suite(runtime, select())
    assert report.ok, explain(report)
    assert strict.violations == []
    for name in ("misuse-import-malformed", "misuse-import-bad-manifest", "state-large-transfer"):
        result = next(r for r in report.results if r.name == name)
        assert result.outcome is Outcome.PASS, result
    big = next(r for r in report.results if r.name == "export-manifest")
    # The state really is past the 2 MiB cap, so the imports above were chunked.
    assert int(big.reason.split("manifest of ")[1].split(" bytes")[0]) > 2 << 20, big.reason


def test_the_strict_server_sees_a_client_that_breaks_a_rule(
    raw: list[RunningServer], sock_dir: Path
) -> None:
    # Its other half: a 3 MiB chunk sent as one message is recorded (and refused), while
    # import_raw, which check uses, splits the same state at the 2 MiB cap.
    address = f"unix:{sock_dir}/strict2"
    strict = broken_servers.StrictServicer(RawFrames())
    raw.append(serve_raw(strict, address))
    pixels = "A" * (3 << 20)
    data = json.dumps(
        {"frames": 1, "pixels": [pixels], "sessions": [], "turns": []}, sort_keys=True
    ).encode()
    manifest = StateManifest(len(data), hashlib.sha256(data).hexdigest(), "application/json", 1)
    head = pb.StateChunk(manifest=pb.StateManifest(total_bytes=len(data), sha256=manifest.sha256))
    with SystemClient(address) as client:
        client.reset("t")
        with pytest.raises(grpc.RpcError) as refused:
            pb_grpc.MemorySystemStub(client._channel).ImportState(
                iter([head, pb.StateChunk(data=data)]), timeout=30
            )
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
        assert client.import_raw(manifest, [data]) == len(data)
    assert strict.violations == [f"an ImportState chunk of {len(data)} bytes"]


def test_a_whole_run_makes_one_call_at_a_time_and_never_sends_an_item_before_a_query(
    raw: list[RunningServer], sock_dir: Path, mini: Path, tmp_path: Path
) -> None:
    # R3 and R2 as the harness keeps them in a run (main pass, forks, replays, audits): the
    # strict server records any overlapping call, and its lifecycle (the SDK's) refuses an
    # item earlier than a Query already answered, which would fail the run.
    address = f"unix:{sock_dir}/strict-run"
    strict = broken_servers.StrictServicer(Honest())
    raw.append(serve_raw(strict, address))
    evaluate(
        EvaluateOptions(
            dataset=mini,
            out=tmp_path / "run",
            runtime=runtime_spec(endpoint=address),
            persistence=Persistence.RESET,
        )
    )
    rows = (tmp_path / "run" / "instances.jsonl").read_text().splitlines()
    assert rows and strict.violations == []
