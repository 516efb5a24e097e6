"""Harness errors: part of the one hierarchy rooted at `ApmbenchError`."""

from __future__ import annotations

from apmbench.adapters.sdk.errors import ApmbenchError


class DatasetError(ApmbenchError):
    """The dataset on disk is missing, malformed or inconsistent; the message says where."""


class VideoError(DatasetError):
    """A session video is missing, unreadable, or shorter than its session."""


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


class ImageBuildError(ApmbenchError):
    """An image could not be built; the message names the step and what to install or fix."""
