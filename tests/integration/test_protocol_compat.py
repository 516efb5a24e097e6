"""The compatibility promise, run: the newest harness serves with a server built from the
previous release's wire description, and refuses one of another protocol major.

tests/fixtures/proto/v1.0 and v1.2 are the .proto as protocols 1.0 and 1.2
shipped it, frozen: each is compiled here with grpcio-tools into a temp dir and served by a minimal
servicer in its own process (tests/helpers/old_proto_server.py), so nothing of
this tree's SDK or generated code stands between the old wire and the harness.
"""

from __future__ import annotations

import io
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from apmbench.adapters.sdk import (
    PROTOCOL_VERSION,
    Frame,
    FrameEncoding,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    UserTurn,
    UserTurnKind,
)
from apmbench.adapters.sdk.errors import FailedPrecondition
from apmbench.harness.protocol.client import SystemClient

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "proto"
SERVER = ROOT / "tests" / "helpers" / "old_proto_server.py"
# Releases whose wire the current harness must still serve with (same major).
PREVIOUS = ("v1.0", "v1.2")


def compile_fixture(release: str, into: Path) -> Path:
    from grpc_tools import protoc  # type: ignore[import-untyped]

    source = FIXTURES / release
    into.mkdir(parents=True)
    include = Path(protoc.__file__).parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{source}",
        f"-I{include}",
        f"--python_out={into}",
        f"--grpc_python_out={into}",
        "apmbench/v1/memory_system.proto",
    ]
    assert protoc.main(args) == 0, f"protoc failed on {source}"
    # Regular packages: they win over this checkout's installed `apmbench` namespace.
    for pkg in (into / "apmbench", into / "apmbench" / "v1"):
        (pkg / "__init__.py").touch()
    return into


def start_old_server(generated: Path, workdir: Path, version: str) -> subprocess.Popen[bytes]:
    address = f"unix:{workdir / 'old.sock'}"
    log = (workdir / "old.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), str(generated), address, version],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=workdir,
    )
    deadline = time.monotonic() + 60
    while b"serving old wire" not in (workdir / "old.log").read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"old-wire server did not start:\n{(workdir / 'old.log').read_text()}")
        time.sleep(0.05)
    return proc


@pytest.fixture(params=PREVIOUS)
def old_client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SystemClient]:
    generated = compile_fixture(request.param, tmp_path / "gen")
    proc = start_old_server(generated, tmp_path, request.param.removeprefix("v"))
    try:
        with SystemClient(f"unix:{tmp_path / 'old.sock'}") as client:
            client.wait_serving(30)
            yield client
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_fixture_is_a_previous_release_of_this_major() -> None:
    for release in PREVIOUS:
        assert (FIXTURES / release / "apmbench" / "v1" / "memory_system.proto").is_file()
        assert release.removeprefix("v").split(".")[0] == PROTOCOL_VERSION.split(".")[0]


def test_newest_harness_runs_a_session_against_the_previous_wire(
    old_client: SystemClient,
) -> None:
    info = old_client.describe()  # refuses another major; 1.0 must pass
    assert info.name == "old-proto" and info.protocol_version in ("1.0", "1.2")
    old_client.reset("t1")
    old_client.start_session(SessionStart("t1", "s1", "d1", 0))
    pixels = bytes(16 * 8 * 3)
    pushed = old_client.push(
        [
            Frame(0, FrameEncoding.RGB24, 16, 8, pixels),
            UserTurn(500, UserTurnKind.REGISTRATION, "this is my red mug"),
        ]
    )
    assert (pushed.frames, pushed.user_turns) == (1, 1)
    query = Query("q1", 1000, QueryKind.MULTIPLE_CHOICE, "system", "Which mug?", "Which mug?")
    assert old_client.query(query).text == '{"answer": "A"}'
    old_client.end_session(SessionEnd("s1", 2000))
    sink = io.BytesIO()
    exported = old_client.export_state(sink)
    assert b"this is my red mug" in sink.getvalue()
    old_client.reset("t1")
    sink.seek(0)
    assert old_client.import_state(exported.manifest, sink) == len(sink.getvalue())


def test_a_server_of_another_major_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    generated = compile_fixture(PREVIOUS[0], tmp_path / "gen")
    proc = start_old_server(generated, tmp_path, "2.0")
    try:
        with SystemClient(f"unix:{tmp_path / 'old.sock'}") as client:
            client.wait_serving(30)
            with pytest.raises(FailedPrecondition, match=r"speaks protocol 2\.0.*matching SDK"):
                client.describe()
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("release", PREVIOUS)
def test_a_previous_wire_still_evaluates(release: str, tmp_path: Path, mini: Path) -> None:
    """A whole run (main pass, forks, replays) against each frozen wire: 1.3's additions
    (an `optional` interval start, the 1.3 status rules) reach an old server unharmed."""
    import json

    from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
    from apmbench.harness.run.executor import Persistence
    from apmbench.harness.runtimes import runtime_spec

    generated = compile_fixture(release, tmp_path / "gen")
    version = release.removeprefix("v")
    proc = start_old_server(generated, tmp_path, version)
    try:
        out = tmp_path / "run"
        evaluate(
            EvaluateOptions(
                dataset=mini,
                out=out,
                runtime=runtime_spec(endpoint=f"unix:{tmp_path / 'old.sock'}"),
                persistence=Persistence.RESET,
            )
        )
    finally:
        proc.terminate()
        proc.wait(10)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["system"]["protocol_version"] == version
    assert manifest["system"]["push_rpc"] == "PushFrames"
    assert manifest["system"]["capabilities"]["accepts_item_batches"] is False
    # The report's head says which version the system declared and was judged by.
    head = (out / "report.md").read_text().split("\n## ")[0]
    assert (
        f"The system declares protocol `{version}` (this harness speaks `{PROTOCOL_VERSION}`)"
        in (head)
    )
