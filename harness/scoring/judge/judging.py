"""Judging the gate-passing probes: cache, bounded retry, concurrency, recorded outcomes.

Every probe ends with exactly one recorded outcome:

- "scored": a verdict that passed strict parsing; its score is g_r in Eq. 1;
- "invalid": `attempts` replies, none the rubric's JSON (each problem kept);
- "error": the judge could not be reached (transport failure after HTTP
  retries), or a fatal error (bad key, unknown model) stopped the pass.

A retry sends the original request, the unusable reply and what was wrong
with it, so a deterministic (temperature 0) judge is not asked the identical
question again; each attempt's messages are their own cache key.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from apmbench.harness.errors import JudgeReplyError, JudgeUnavailable
from apmbench.harness.scoring.judge.backend import ChatBackend
from apmbench.harness.scoring.judge.cache import ReplyCache, cache_key
from apmbench.harness.scoring.judge.openai_chat import FatalJudgeError
from apmbench.harness.scoring.judge.verdict import parse_verdict

SCORED = "scored"
INVALID = "invalid"
ERROR = "error"


@dataclass(frozen=True)
class JudgeRequest:
    instance_id: str
    messages: list[dict[str, str]]
    correction: str
    """The suite's retry instruction after an unusable reply; "{problem}" is filled in."""
    read: Callable[[str], dict[str, Any]] | None = None
    """The suite's strict reader of a reply (raises JudgeReplyError); None: the rubric's
    verdict. What it returns is the outcome's `verdict`, with no score."""


def correction_messages(request: JudgeRequest, reply: str, problem: str) -> list[dict[str, str]]:
    """A retry: the original request, the unusable reply, and what was wrong with it."""
    return [
        *request.messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": request.correction.format(problem=problem)},
    ]


@dataclass
class JudgeOutcome:
    status: str
    score: int | None = None
    verdict: dict[str, Any] | None = None
    attempts: int = 0
    cached_attempts: int = 0
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "score": self.score,
            "verdict": self.verdict,
            "attempts": self.attempts,
            "cached_attempts": self.cached_attempts,
            "problems": self.problems,
        }


class _Pass:
    """One judging pass over many requests; stops calling after a fatal error."""

    def __init__(self, backend: ChatBackend, cache: ReplyCache, attempts: int) -> None:
        self.backend = backend
        self.cache = cache
        self.attempts = attempts
        self.fatal: str | None = None
        self._lock = threading.Lock()

    def _reply(self, messages: list[dict[str, str]]) -> tuple[str, bool]:
        key = cache_key(self.backend.cache_identity, messages)
        cached = self.cache.get(key)
        if cached is not None:
            return cached, True
        reply = self.backend.complete(messages)
        self.cache.put(key, self.backend.cache_identity, messages, reply)
        return reply, False

    def judge(self, request: JudgeRequest) -> JudgeOutcome:
        outcome = JudgeOutcome(INVALID)
        messages = request.messages
        for _ in range(self.attempts):
            if self.fatal is not None:
                return JudgeOutcome(ERROR, problems=[f"not judged: {self.fatal}"])
            try:
                reply, cached = self._reply(messages)
            except FatalJudgeError as e:
                with self._lock:
                    self.fatal = self.fatal or str(e)
                outcome.status = ERROR
                outcome.problems.append(str(e))
                return outcome
            except JudgeUnavailable as e:
                outcome.status = ERROR
                outcome.problems.append(str(e))
                return outcome
            outcome.attempts += 1
            outcome.cached_attempts += cached
            try:
                if request.read is not None:
                    outcome.status, outcome.verdict = SCORED, request.read(reply)
                    return outcome
                verdict = parse_verdict(reply)
            except JudgeReplyError as e:
                outcome.problems.append(str(e))
                messages = correction_messages(request, reply, str(e))
                continue
            outcome.status = SCORED
            outcome.score = verdict.score
            outcome.verdict = verdict.as_dict()
            return outcome
        return outcome


def judge_requests(
    requests: Sequence[JudgeRequest],
    backend: ChatBackend,
    cache: ReplyCache,
    *,
    attempts: int,
    concurrency: int,
    on_done: Callable[[str, JudgeOutcome], None] = lambda instance_id, outcome: None,
) -> dict[str, JudgeOutcome]:
    """Judge every request; the result maps instance ids to their recorded outcomes."""
    judging = _Pass(backend, cache, attempts)
    workers = max(1, min(concurrency, backend.max_concurrency, len(requests) or 1))
    results: dict[str, JudgeOutcome] = {}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
        futures = [(r.instance_id, pool.submit(judging.judge, r)) for r in requests]
        for instance_id, future in futures:
            results[instance_id] = future.result()
            on_done(instance_id, results[instance_id])
    return results
