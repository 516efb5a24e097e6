"""Harness errors: part of the one hierarchy rooted at `ApmbenchError`."""

from __future__ import annotations

from apmbench.adapters.sdk.errors import ApmbenchError, ProtocolError


class DatasetError(ApmbenchError):
    """The dataset on disk is missing, malformed or inconsistent; the message says where."""


class VideoError(DatasetError):
    """A session video is missing, unreadable, or shorter than its session."""


class FrameWorkerError(ApmbenchError):
    """A frame worker process (harness/media/frame_worker.py) ended before its session's
    last frame."""


class ConfigError(ApmbenchError):
    """Settings that cannot work together (e.g. `restart` persistence on an endpoint)."""


class RuntimeStartError(ApmbenchError):
    """A system could not be started or did not become ready."""


class RunDirError(ApmbenchError):
    """The run directory cannot be used (e.g. --resume with different settings)."""


class JudgeError(ApmbenchError):
    """The LLM judge could not give a usable verdict for a probe."""


class JudgeReplyError(JudgeError):
    """The judge replied, but not with the one JSON object the A.3 rubric asks for."""


class JudgeUnavailable(JudgeError):
    """The judge could not be reached or refused the call (HTTP error, timeout, no model)."""


class EngineError(ConfigError):
    """The container engine cannot run what was asked: unreachable, no such image, no GPUs."""


class EngineUnanswered(RuntimeStartError):
    """The container engine did not answer a call in time, its retries spent (a busy engine):
    not the user's settings; the message names the timeout to raise."""


class ImageBuildError(ApmbenchError):
    """An image could not be built; the message names the step and what to install or fix."""


class WireRuleError(ProtocolError):
    """A server's reply broke a rule of memory_system.proto that the harness relies on.

    `rule` is the rule's id as `apmbench.harness.check.rules.RULES` numbers it
    ("R7", "STATUS", ...); `status` is the status code the server answered,
    when the broken rule is about which code it may answer; `hint` says what
    to change in the server.
    """

    def __init__(
        self, message: str, *, rule: str, rpc: str = "", status: str = "", hint: str = ""
    ) -> None:
        super().__init__(message, rpc=rpc)
        self.rule = rule
        self.status = status
        self.hint = hint

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text}; fix: {self.hint}" if self.hint else text
