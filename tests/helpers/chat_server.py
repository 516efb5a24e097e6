"""A real HTTP server on loopback that speaks the OpenAI chat-completions API, for judge tests.

What it answers is up to the test: `policy(request, n)` gets the decoded
request body and the 1-based number of this call, and returns a `Reply`.
The default policy plays a well-behaved judge that scores 5 at positive
probes and 3 at negative ones, so gated scores can be computed by hand.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

API_KEY = "sk-apmbench-test"


@dataclass(frozen=True)
class Reply:
    content: str | None = None
    status: int = 200
    delay_s: float = 0.0
    raw_body: bytes | None = None
    """Sent instead of a chat-completions envelope (for a broken endpoint)."""


def verdict(score: int, why: str = "Grounded in the annotations.") -> str:
    return json.dumps(
        {
            "score": score,
            "criterion_checks": {
                "task_fidelity": "pass",
                "historical_or_registration_grounding": "not_applicable",
                "current_trigger_or_silence_grounding": "pass",
                "factual_support": "pass",
                "usefulness": "pass",
            },
            "critical_issues": [],
            "justification": why,
        }
    )


def user_text(request: dict[str, Any]) -> str:
    return str(request["messages"][1]["content"])


def is_retry(request: dict[str, Any]) -> bool:
    return len(request["messages"]) > 2


def polarity_judge(request: dict[str, Any], n: int) -> Reply:
    positive = "Reference decision at this probe: INTERVENE" in user_text(request)
    return Reply(verdict(5 if positive else 3))


Policy = Callable[[dict[str, Any], int], Reply]


@dataclass
class ChatServer:
    url: str
    policy: Policy = polarity_judge
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Every authorised request, in arrival order."""
    posts: int = 0
    """Every POST, refused ones included."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def calls(self) -> int:
        return len(self.requests)


@contextmanager
def chat_server(policy: Policy = polarity_judge) -> Iterator[ChatServer]:
    state = ChatServer(url="", policy=policy)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            with state.lock:
                state.posts += 1
            if self.path != "/v1/chat/completions":
                self._send(404, b'{"error": {"message": "unknown path"}}')
                return
            if self.headers.get("Authorization") != f"Bearer {API_KEY}":
                self._send(401, b'{"error": {"message": "invalid api key"}}')
                return
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with state.lock:
                state.requests.append(request)
                n = len(state.requests)
            reply = state.policy(request, n)
            time.sleep(reply.delay_s)
            if reply.raw_body is not None:
                self._send(reply.status, reply.raw_body)
                return
            if reply.status != 200:
                self._send(reply.status, b'{"error": {"message": "try again"}}')
                return
            body = {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "model": request["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": reply.content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
            self._send(200, json.dumps(body).encode())

    class QuietServer(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            # A client that timed out has closed its end; the late write fails. Expected.
            pass

    server = QuietServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
