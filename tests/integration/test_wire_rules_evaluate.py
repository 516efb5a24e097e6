"""`evaluate` refuses a server that breaks a wire rule, naming the rule, as `check` does.

Each server below is correct but for one reply (tests/helpers/wire_breakers.py);
the run must stop with a WireRuleError that names that rule and says what to fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import wire_breakers
from helpers.broken_servers import serve_raw
from helpers.broken_systems import Honest

from apmbench.adapters.sdk import RunningServer
from apmbench.adapters.sdk.server import MemorySystemServicer
from apmbench.harness.check import run_suite, select
from apmbench.harness.cli import main
from apmbench.harness.errors import WireRuleError
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.protocol.wire_rules import TITLES
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.endpoint import EndpointRuntime
from apmbench.v1 import memory_system_pb2_grpc as pb_grpc


@pytest.fixture
def served(sock_dir: Path) -> Iterator[list[RunningServer]]:
    running: list[RunningServer] = []
    yield running
    for server in running:
        server.stop(grace=None)


def endpoint(served: list[RunningServer], sock_dir: Path, servicer: object) -> str:
    assert isinstance(servicer, pb_grpc.MemorySystemServicer)
    address = f"unix:{sock_dir}/s{len(served)}"
    served.append(serve_raw(servicer, address))
    return address


def run(mini: Path, out: Path, address: str) -> None:
    evaluate(
        EvaluateOptions(
            dataset=mini, out=out, runtime=runtime_spec(endpoint=address), startup_timeout_s=10
        )
    )


@pytest.mark.parametrize(
    ("breaker", "rule", "said"),
    [
        (
            wire_breakers.OversizeChunks,
            "R7",
            f"carries {wire_breakers.OVERSIZE_CHUNK} bytes, over the 1048576",
        ),
        (wire_breakers.ShortSha, "MANIFEST", "is not 64 lower-case hex digits"),
        (wire_breakers.UpperSha, "MANIFEST", "is not 64 lower-case hex digits"),
        (wire_breakers.OverstatesSize, "MANIFEST", "bytes but"),
        (wire_breakers.WrongDigest, "MANIFEST", "but the data's is"),
        (
            wire_breakers.ManifestTwice,
            "STATE-STREAM",
            "carries a manifest; after the manifest only data",
        ),
        (wire_breakers.EmptyChunk, "STATE-STREAM", "carries nothing"),
        (wire_breakers.NotFoundQuery, "STATUS", "Query answered NOT_FOUND"),
        (wire_breakers.DataLossExport, "STATUS", "ExportState answered DATA_LOSS"),
    ],
)
def test_evaluate_refuses_a_broken_rule(
    breaker: type[MemorySystemServicer],
    rule: str,
    said: str,
    mini: Path,
    tmp_path: Path,
    served: list[RunningServer],
    sock_dir: Path,
) -> None:
    address = endpoint(served, sock_dir, breaker())
    with pytest.raises(WireRuleError) as raised:
        run(mini, tmp_path / "run", address)
    error = raised.value
    assert error.rule == rule
    assert f"broke rule {rule} ({TITLES[rule]}) of memory_system.proto" in str(error)
    assert said in str(error)
    assert "fix: " in str(error)


def test_the_cli_names_the_rule_and_exits_as_for_a_system_error(
    mini: Path, tmp_path: Path, served: list[RunningServer], sock_dir: Path
) -> None:
    address = endpoint(served, sock_dir, wire_breakers.OversizeChunks())
    args = [
        "evaluate",
        "--dataset",
        str(mini),
        "--out",
        str(tmp_path / "run"),
        "--endpoint",
        address,
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 3, result.output
    assert "broke rule R7 (Chunking)" in " ".join(result.output.split())


def test_well_behaved_servers_are_unaffected(
    mini: Path, tmp_path: Path, served: list[RunningServer], sock_dir: Path
) -> None:
    # The padded state needs two chunks at the default size: large, but within R7.
    for name, system in (("padded", wire_breakers.Padded()), ("honest", Honest())):
        address = endpoint(served, sock_dir, MemorySystemServicer(system))
        run(mini, tmp_path / name, address)
        assert (tmp_path / name / "report.json").exists()


def test_check_fails_the_same_servers_on_the_same_rule(
    served: list[RunningServer], sock_dir: Path
) -> None:
    deadlines = Deadlines(control=30, push=60, query=30, state=60, end_session=60)
    for breaker, name in (
        (wire_breakers.OversizeChunks(), "export-chunking"),
        (wire_breakers.NotFoundQuery(), "query-streams"),
    ):
        address = endpoint(served, sock_dir, breaker)
        with EndpointRuntime(address, deadlines, 10) as runtime:
            report = run_suite(runtime, select([name]))
        failed = {r.name: r for r in report.failed}
        assert name in failed, [(r.name, r.outcome) for r in report.results]
        rule = "R7 (Chunking)" if name == "export-chunking" else "STATUS (Status codes)"
        assert f"broke rule {rule}" in failed[name].reason + failed[name].hint
