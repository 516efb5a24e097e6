"""A judge behind any OpenAI-compatible chat-completions endpoint (stdlib HTTP only).

POST {base_url}/chat/completions with the model, the messages, temperature 0
and max_tokens. Timeouts, connection errors, 408, 409, 429 and 5xx are
retried with exponential backoff (a longer Retry-After wins); any other
status means the request itself is wrong (bad key, unknown model), so it is
not retried and stops the whole judging pass.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import threading
import time
import urllib.error
import urllib.request

from apmbench.harness.errors import ConfigError, JudgeUnavailable
from apmbench.harness.json_types import JsonObject
from apmbench.harness.scoring.judge.backend import Messages
from apmbench.harness.scoring.judge.config import JudgeConfig

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_BACKOFF_S = 60.0


class FatalJudgeError(JudgeUnavailable):
    """Retrying cannot help (401, 403, 404, 400...): every later call would fail the same way."""


def _snippet(data: bytes, limit: int = 300) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else text[:limit] + "..."


def _content(payload: bytes) -> str:
    try:
        data = json.loads(payload)
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise FatalJudgeError(
            "the endpoint's reply is not an OpenAI chat-completions response "
            f"({type(e).__name__}: {e}): {_snippet(payload)}"
        ) from None
    # A null content (e.g. a refusal) is an empty reply, which strict parsing rejects.
    return "" if content is None else str(content)


class OpenAIChatJudge:
    max_concurrency = 1 << 16

    @classmethod
    def check_config(cls, config: JudgeConfig) -> None:
        needed = (("--judge-model", config.model), ("--judge-base-url", config.base_url))
        missing = [flag for flag, value in needed if not value]
        if missing:
            raise ConfigError("--judge openai needs " + " and ".join(missing))
        if not os.environ.get(config.api_key_env):
            raise ConfigError(
                f"--judge openai reads its API key from ${config.api_key_env}, which is not set "
                "(set it, or name another variable with --judge-api-key-env)"
            )

    def __init__(self, config: JudgeConfig) -> None:
        assert config.model and config.base_url
        self.model = config.model
        self.url = config.base_url.rstrip("/") + "/chat/completions"
        self.api_key = os.environ.get(config.api_key_env, "")
        self.max_tokens = config.max_tokens
        self.timeout_s = config.timeout_s
        self.retries = config.http_retries
        self.backoff_s = config.backoff_s
        # The endpoint is part of the judge: two servers may serve different
        # weights under one model name, so a reply cached from one must never
        # stand in for the other.
        self.cache_identity: JsonObject = {
            "kind": "openai",
            "model": self.model,
            "base_url": config.base_url.rstrip("/"),
            "temperature": 0,
            "max_tokens": self.max_tokens,
        }
        self.identity: JsonObject = {**self.cache_identity, "base_url": config.base_url}
        self.calls = 0
        self._lock = threading.Lock()

    def _post(self, body: bytes) -> bytes:
        request = urllib.request.Request(
            self.url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json",
                "Authorization": f"Bearer {self.api_key}",
            },
        )
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
            data: bytes = response.read()
            return data

    def complete(self, messages: Messages) -> str:
        body = json.dumps(
            {
                "model": self.model,
                "messages": [dict(m) for m in messages],
                "temperature": 0,
                "max_tokens": self.max_tokens,
                "stream": False,
            }
        ).encode()
        last = ""
        for attempt in range(self.retries + 1):
            wait = self.backoff_s * (2**attempt)
            try:
                with self._lock:
                    self.calls += 1
                return _content(self._post(body))
            except urllib.error.HTTPError as e:
                detail = _snippet(e.read() or b"")
                if e.code not in RETRYABLE_STATUS:
                    hint = " (check the API key)" if e.code in (401, 403) else ""
                    raise FatalJudgeError(
                        f"judge endpoint {self.url} answered HTTP {e.code}{hint}: {detail}"
                    ) from None
                last = f"HTTP {e.code}: {detail}"
                retry_after = e.headers.get("Retry-After", "") if e.headers else ""
                if retry_after.strip().isdigit():
                    wait = max(wait, float(retry_after))
            except TimeoutError:
                last = f"no reply within {self.timeout_s:g} s"
            except (urllib.error.URLError, http.client.HTTPException, ConnectionError) as e:
                last = f"{type(e).__name__}: {getattr(e, 'reason', e)}"
            if attempt < self.retries:
                # Jitter keeps concurrent workers from retrying in lockstep.
                time.sleep(min(wait, MAX_BACKOFF_S) * (1 + 0.1 * random.random()))
        raise JudgeUnavailable(
            f"judge endpoint {self.url} failed {self.retries + 1} times; last: {last}"
        )

    def close(self) -> None:
        pass
