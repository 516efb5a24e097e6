"""A model served elsewhere, through an OpenAI-compatible chat-completions endpoint.

For a `vllm serve` of a model this project cannot load itself, or a hosted
API (the paper's proprietary models). Each clip becomes JPEG images, each
after its time as text ("<1.5 seconds>"), since image parts are what every
such endpoint accepts; the answer is streamed (`"stream": true`, server-sent
events) and each delta is passed on as it arrives.

The key is read from the environment variable named by
APMBENCH_VLM_API_KEY_ENV and never recorded. A container has no network
unless the run says `--allow-network` (or `--network NAME`); without it the
start-up check below fails at once, saying so, instead of every query timing
out.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import sys
import time
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

from apmbench.adapters.sdk import Frame, FrameEncoding
from apmbench.adapters.sdk.errors import MethodFailure, Unavailable
from apmbench.adapters.vlm.backend import VideoLanguageModel
from apmbench.adapters.vlm.prompt import Clip, Prompt, Text
from apmbench.adapters.vlm.settings import PREFIX, VlmConfigError, VlmSettings

CONNECT_TIMEOUT_S = 5.0
NO_NETWORK_HINT = (
    "in a container this needs the network: run with --allow-network (or --network NAME); "
    "the default container has none"
)


class OpenAIChatModel(VideoLanguageModel):
    def __init__(self, settings: VlmSettings) -> None:
        self.settings = settings
        url = urlsplit(settings.api_base.rstrip("/"))
        if url.scheme not in ("http", "https") or not url.hostname:
            raise VlmConfigError(
                f"{PREFIX}API_BASE={settings.api_base!r}: give an http(s) URL such as "
                "http://127.0.0.1:8000/v1"
            )
        self.scheme = url.scheme
        self.host = url.hostname
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.path = f"{url.path}/chat/completions"
        self.key = settings.api_key()
        self._check_reachable()

    def _check_reachable(self) -> None:
        """Fail at start-up, not at the first query, when the endpoint cannot be reached."""
        try:
            with socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT_S):
                pass
        except OSError as e:
            raise VlmConfigError(
                f"{PREFIX}API_BASE={self.settings.api_base}: cannot connect to "
                f"{self.host}:{self.port} ({e}); check the server runs there, and "
                f"{NO_NETWORK_HINT}"
            ) from e

    def identity(self) -> Mapping[str, str]:
        return {
            "vlm.backend_kind": "openai",
            "vlm.api_base": self.settings.api_base,
            "vlm.api_model": self.settings.api_model,
            "vlm.decoding": "greedy" if self.settings.temperature == 0 else "sampling",
        }

    def request_body(self, prompt: Prompt, max_new_tokens: int) -> dict[str, object]:
        content: list[dict[str, object]] = []
        for part in prompt.parts:
            if isinstance(part, Text):
                content.append({"type": "text", "text": part.text})
            else:
                content.extend(_clip_parts(part))
        body: dict[str, object] = {
            "model": self.settings.api_model,
            "messages": [
                {"role": "system", "content": prompt.system},
                {"role": "user", "content": content},
            ],
            "stream": True,
            "max_tokens": max_new_tokens,
            "temperature": self.settings.temperature,
        }
        if self.settings.temperature > 0:
            body["seed"] = self.settings.seed
        return body

    def stream(self, prompt: Prompt, max_new_tokens: int) -> Iterator[str]:
        started = time.monotonic()
        payload = json.dumps(self.request_body(prompt, max_new_tokens)).encode()
        connection_class = (
            http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        )
        connection = connection_class(self.host, self.port, timeout=self.settings.api_timeout_s)
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        first_s: float | None = None
        try:
            try:
                connection.request("POST", self.path, body=payload, headers=headers)
                response = connection.getresponse()
            except OSError as e:
                raise Unavailable(
                    f"{self.settings.api_base}: {e}; check the server, and {NO_NETWORK_HINT}"
                ) from e
            if response.status != 200:
                detail = response.read(2000).decode(errors="replace")
                raise MethodFailure(
                    f"{self.settings.api_base} answered HTTP {response.status}: {detail}"
                )
            for piece in _events(response):
                if first_s is None:
                    first_s = time.monotonic() - started
                yield piece
        finally:
            connection.close()
            first = "none" if first_s is None else f"{first_s:.3f}"
            print(
                f"vlm: api frames={prompt.frame_count()} request_bytes={len(payload)} "
                f"first_text_s={first} total_s={time.monotonic() - started:.3f}",
                file=sys.stderr,
                flush=True,
            )


def _clip_parts(clip: Clip) -> list[dict[str, object]]:
    parts: list[dict[str, object]] = []
    for seconds, frame in zip(clip.seconds(), clip.frames, strict=True):
        parts.append({"type": "text", "text": f"<{seconds:.1f} seconds>"})
        url = "data:image/jpeg;base64," + base64.b64encode(_jpeg(frame)).decode()
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _jpeg(frame: Frame) -> bytes:
    if frame.encoding is FrameEncoding.JPEG:
        return frame.data
    import simplejpeg

    data: bytes = simplejpeg.encode_jpeg(frame.rgb(), quality=90, colorspace="RGB")
    return data


def _events(response: http.client.HTTPResponse) -> Iterator[str]:
    """The text deltas of a server-sent-events chat-completions stream."""
    for raw in response:
        line = raw.decode("utf-8", errors="replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            return
        try:
            event = json.loads(data)
        except ValueError as e:
            raise MethodFailure(f"the endpoint sent an event that is not JSON: {data[:200]}") from e
        if "error" in event:
            raise MethodFailure(f"the endpoint reported an error: {event['error']}")
        for choice in event.get("choices") or []:
            text = (choice.get("delta") or {}).get("content")
            if text:
                yield str(text)
