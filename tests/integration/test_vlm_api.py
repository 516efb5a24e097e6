"""The OpenAI-compatible backend against a real streaming HTTP server on loopback.

The server speaks chat completions with `"stream": true` (server-sent events,
one delta per event, as vLLM and hosted APIs send them), records what it was
sent, and answers the E.5 writer with a memory and everything else with an
answer. No torch is needed on this path.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import simplejpeg

from apmbench.adapters.sdk import Frame, FrameEncoding, MethodFailure
from apmbench.adapters.systems.summary_prompts import text_summary_writer
from apmbench.adapters.vlm.loader import open_backend
from apmbench.adapters.vlm.prompt import Clip, Prompt, Text
from apmbench.adapters.vlm.settings import VlmConfigError, VlmSettings

pytestmark = pytest.mark.integration
KEY = "sk-vlm-test"


class Endpoint:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.status = 200
        self.delay_s = 0.0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reply(self, request: dict[str, Any]) -> list[str]:
        """A well-behaved model: the JSON each prompt asks for."""
        if request["messages"][0]["content"] == text_summary_writer():
            return ['{"memory": ', '"The user moved the MUG', ' to the DESK."}']
        if '"decision"' in request["messages"][1]["content"][-1]["text"]:
            return ['{"decision"', ':"SILENT",', '"reason":"nothing is due yet"}']
        return ['{"answer"', ':"', "B", '"}']


@contextmanager
def endpoint() -> Iterator[Endpoint]:
    state = Endpoint()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(body)
            state.headers.append(dict(self.headers))
            if self.path != "/v1/chat/completions" or state.status != 200:
                payload = b'{"error": {"message": "model not found"}}'
                self.send_response(404 if state.status == 200 else state.status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for piece in state.reply(body):
                event = {"choices": [{"index": 0, "delta": {"content": piece}}]}
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                time.sleep(state.delay_s)
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = server.server_address[1]  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def settings(base: str, **extra: Any) -> VlmSettings:
    return VlmSettings(backend="openai", api_base=base, api_model="qwen-vl", **extra)


def frame(t: int) -> Frame:
    pixels = np.full((48, 64, 3), 90, dtype=np.uint8)
    return Frame(t, FrameEncoding.JPEG, 64, 48, simplejpeg.encode_jpeg(pixels, 90))


def test_the_answer_streams_and_the_request_carries_frames_times_and_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("APMBENCH_VLM_API_KEY", KEY)
    with endpoint() as server:
        server.delay_s = 0.2
        model = open_backend(settings(server.base, max_new_tokens=64))
        prompt = Prompt("SYSTEM", (Text("Now:"), Clip((frame(1000), frame(2500)), 0), Text("Q?")))
        started = time.monotonic()
        arrivals = [(time.monotonic() - started, piece) for piece in model.stream(prompt, 64)]
    assert "".join(p for _, p in arrivals) == '{"answer":"B"}'
    assert (
        arrivals[0][0] < 0.15 and arrivals[-1][0] > 0.5
    )  # the first delta did not wait for the rest
    [request] = server.requests
    assert request["model"] == "qwen-vl" and request["stream"] is True
    assert request["max_tokens"] == 64 and request["temperature"] == 0.0
    assert request["messages"][0] == {"role": "system", "content": "SYSTEM"}
    parts = request["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["text", "text", "image_url", "text", "image_url", "text"]
    assert [parts[1]["text"], parts[3]["text"]] == ["<1.0 seconds>", "<2.5 seconds>"]
    assert parts[2]["image_url"]["url"].startswith("data:image/jpeg;base64,/9j/")
    assert server.headers[0]["Authorization"] == f"Bearer {KEY}"
    assert model.identity()["vlm.api_model"] == "qwen-vl"
    assert KEY not in json.dumps(dict(model.identity()))


def test_an_http_error_is_reported_with_its_status_and_body() -> None:
    with endpoint() as server:
        server.status = 503
        model = open_backend(settings(server.base))
        with pytest.raises(MethodFailure, match=r"HTTP 503.*model not found"):
            list(model.stream(Prompt("s", (Text("q"),)), 8))


def test_an_unreachable_endpoint_fails_at_start_saying_the_container_needs_network() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(VlmConfigError, match="--allow-network"):
        open_backend(settings(f"http://127.0.0.1:{port}/v1"))


@pytest.mark.slow
def test_text_memory_through_the_api_on_the_tiny_benchmark(tmp_path: Path, tiny: Path) -> None:
    out = tmp_path / "run"
    with endpoint() as server:
        env = {
            **os.environ,
            "APMBENCH_VLM_BACKEND": "openai",
            "APMBENCH_VLM_API_BASE": server.base,
            "APMBENCH_VLM_API_MODEL": "qwen-vl",
        }
        result = subprocess.run(
            [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(tiny),
             "--system", "vlm-text-memory", "--out", str(out), "--persistence", "reset",
             "--sandbox-net"],
            capture_output=True, text=True, timeout=300, env=env,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    instances = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    multiple_choice = [
        r for r in instances if r["task"] in ("ER", "EST", "TR", "ACR", "CT", "OCR", "STU")
    ]
    assert multiple_choice and all(
        r["answer"] == "B" and r["format"] == "clean" for r in multiple_choice
    )
    writer = [r for r in server.requests if r["messages"][0]["content"] == text_summary_writer()]
    assert len(writer) >= 4  # one per session end, forks and evidence passes included
    later = [r for r in server.requests if "The user moved the MUG to the DESK." in json.dumps(r)]
    assert later  # summaries reach later queries
    details = json.loads((out / "manifest.json").read_text())["system"]["details"]
    assert details["vlm.backend_kind"] == "openai" and details["vlm.api_base"] == server.base


@pytest.mark.slow
def test_the_default_comparison_includes_the_vlm_systems_when_a_model_is_named(
    tmp_path: Path, tiny: Path
) -> None:
    out = tmp_path / "runs"
    with endpoint() as server:
        env = {
            **os.environ,
            "APMBENCH_VLM_BACKEND": "openai",
            "APMBENCH_VLM_API_BASE": server.base,
            "APMBENCH_VLM_API_MODEL": "qwen-vl",
        }
        result = subprocess.run(
            [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(tiny),
             "--out", str(out), "--persistence", "reset", "--sandbox-net"],
            capture_output=True, text=True, timeout=600, env=env,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    for name in ("frame-archive", "vlm-simplestream", "vlm-video-memory", "vlm-text-memory"):
        assert name in result.stdout and (out / name / "report.json").is_file()
    storage = {
        name: json.loads((out / name / "report.json").read_text())["storage"][
            "storage_per_hour_bytes"
        ]
        for name in ("vlm-simplestream", "vlm-video-memory", "vlm-text-memory")
    }
    assert (
        storage["vlm-simplestream"] == 0 < storage["vlm-text-memory"] < storage["vlm-video-memory"]
    )


@pytest.mark.slow
@pytest.mark.parametrize("system", ["vlm-simplestream", "vlm-video-memory", "vlm-text-memory"])
def test_the_protocol_checks_pass_with_a_well_behaved_model(tmp_path: Path, system: str) -> None:
    with endpoint() as server:
        env = {
            **os.environ,
            "APMBENCH_VLM_BACKEND": "openai",
            "APMBENCH_VLM_API_BASE": server.base,
            "APMBENCH_VLM_API_MODEL": "qwen-vl",
        }
        result = subprocess.run(
            [sys.executable, "-m", "apmbench.harness.cli", "check", "--system", system,
             "--out", str(tmp_path / "check"), "--json", str(tmp_path / "check.json"),
             "--sandbox-net"],
            capture_output=True, text=True, timeout=600, env=env,
        )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
