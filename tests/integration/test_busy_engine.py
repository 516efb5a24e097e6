"""A busy Docker engine: calls that take longer than a client waits are asked again (reads)
or reported with what to do (exit 3, never a traceback), and the image builder's prune,
which CI saw time out while other builds ran, is given up quietly.

The engine here is a real HTTP server on a Unix socket speaking the three calls the
client makes first (version, ping, image prune), stalling the ones it is told to."""

from __future__ import annotations

import json
import os
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from apmbench.harness.build.images import Builder
from apmbench.harness.errors import ConfigError, EngineUnanswered
from apmbench.harness.runtimes.docker import engine

pytestmark = [pytest.mark.integration]

API = "1.45"


class SlowEngine(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, stalls: dict[str, int], stall_s: float) -> None:
        self.stalls = dict(stalls)  # a path's first N requests stall
        self.stall_s = stall_s
        self.seen: list[str] = []
        self.lock = threading.Lock()
        super().__init__(str(path), Handler)

    def stalled(self, path: str) -> bool:
        with self.lock:
            self.seen.append(path)
            key = next((k for k in self.stalls if path.endswith(k)), None)
            if key is None or self.stalls[key] == 0:
                return False
            self.stalls[key] -= 1
            return True


class Handler(BaseHTTPRequestHandler):
    server: SlowEngine

    def address_string(self) -> str:
        return "unix"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self) -> None:
        path = self.path.split("?", 1)[0]
        if self.server.stalled(path):
            time.sleep(self.server.stall_s)
        if path.endswith("/version"):
            body, kind = json.dumps({"ApiVersion": API, "Version": "28.2.2"}), "application/json"
        elif path.endswith("/_ping"):
            body, kind = "OK", "text/plain"
        elif path.endswith("/images/prune"):
            body, kind = (
                json.dumps({"ImagesDeleted": None, "SpaceReclaimed": 0}),
                "application/json",
            )
        else:
            self.send_error(404)
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Api-Version", API)
        self.end_headers()
        with_body = self.command != "HEAD"
        if with_body:
            self.wfile.write(data)

    do_GET = do_HEAD = do_POST = _answer


@pytest.fixture
def slow_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowEngine]:
    sock = Path(f"/tmp/apm-engine-{os.getpid()}-{time.monotonic_ns()}.sock")
    server = SlowEngine(sock, {}, 0.0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("DOCKER_HOST", f"unix://{sock}")
    monkeypatch.setattr(engine, "RETRY_PAUSE_S", 0.1)
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        sock.unlink(missing_ok=True)


def test_reads_that_time_out_are_asked_again(slow_engine: SlowEngine) -> None:
    slow_engine.stalls = {"/version": 1, "/_ping": engine.READ_TRIES - 1}
    # A stall well past the client's wait, and a wait a loaded machine's ordinary answer
    # stays within: the counts below are events (requests the server saw).
    slow_engine.stall_s = 6.0
    client = engine.connect(timeout=2)
    assert client.ping()
    # Each stalled read was sent again: one more version, READ_TRIES - 1 more pings.
    assert sum(p.endswith("/version") for p in slow_engine.seen) >= 2
    assert sum(p.endswith("/_ping") for p in slow_engine.seen) >= engine.READ_TRIES
    client.close()


def test_an_engine_that_never_answers_is_reported_naming_the_setting(
    slow_engine: SlowEngine,
) -> None:
    slow_engine.stalls = {"/_ping": 99}
    slow_engine.stall_s = 3.0
    with pytest.raises(EngineUnanswered) as raised:
        engine.connect(timeout=1)
    said = str(raised.value)
    assert "did not answer a ping" in said and f"{engine.TIMEOUT_ENV}=SECONDS (now 1 s" in said
    assert sum(p.endswith("/_ping") for p in slow_engine.seen) == engine.READ_TRIES


def test_a_prune_the_busy_engine_does_not_answer_is_given_up(
    slow_engine: SlowEngine, tmp_path: Path
) -> None:
    """CI's first failure: `images.prune` raised ReadTimeout out of `make images-vlm-cpu`.
    A POST is not asked again (a create could be made twice); the prune is optional."""
    slow_engine.stalls = {"/images/prune": 99}
    slow_engine.stall_s = 3.0
    client = engine.connect(timeout=1)
    Builder(tmp_path, client)._prune()  # raises nothing
    assert sum(p.endswith("/images/prune") for p in slow_engine.seen) == 1  # one try
    client.close()


def test_make_images_against_a_silent_engine_exits_3_with_what_to_do(
    slow_engine: SlowEngine, tmp_path: Path
) -> None:
    slow_engine.stalls = {"/version": 99}
    slow_engine.stall_s = 5.0
    done = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.build.images", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, engine.TIMEOUT_ENV: "1"},
    )
    assert done.returncode == 3, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "did not answer" in done.stderr and f"{engine.TIMEOUT_ENV}=SECONDS" in done.stderr


@pytest.mark.parametrize("given", ["soon", "0", "-5"])
def test_a_bad_timeout_setting_is_refused_with_its_name(
    given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(engine.TIMEOUT_ENV, given)
    with pytest.raises(ConfigError, match=engine.TIMEOUT_ENV):
        engine.timeout_s()
