"""The LLM judges by `--judge` name, through the one registry (`apmbench.adapters.sdk.registry`).

A judge is a class built from a `JudgeConfig` into a `ChatBackend`, with a classmethod
`check_config(config)` that refuses settings it cannot work with before any work is done.
`none` (no judge) and `synthetic` (the suite's own reference judge, built from the run's
dataset) are not judges of this kind. An installed distribution adds one under the
`apmbench_grpc.judges` entry-point group; `--judge NAME[:PATH]` then picks it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from apmbench.adapters.sdk.registry import Registry
from apmbench.harness.errors import ConfigError

if TYPE_CHECKING:
    from apmbench.harness.scoring.judge.backend import ChatBackend
    from apmbench.harness.scoring.judge.config import JudgeConfig


class Judge(Protocol):
    """What a registered judge is: a factory with its own check of the settings."""

    def __call__(self, config: JudgeConfig) -> ChatBackend: ...

    def check_config(self, config: JudgeConfig) -> None: ...


BUILTIN: dict[str, str] = {
    "openai": "apmbench.harness.scoring.judge.openai_chat:OpenAIChatJudge",
    "transformers": "apmbench.harness.scoring.judge.local_model:TransformersJudge",
}
JUDGE_REGISTRY: Registry[Judge] = Registry(
    "judge", BUILTIN, "collections.abc:Callable", classes=False, error=ConfigError,
    also=", or none or synthetic",
)  # fmt: skip
NOT_JUDGES = ("none", "synthetic")
"""`--judge` values that name no registered judge: no judge, the suite's reference judge."""

JudgeFactory = Callable[["JudgeConfig"], "ChatBackend"]
