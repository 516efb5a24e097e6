"""Which judge scores the adaptive probes, and how it is called.

--judge none                 judge-dependent numbers are reported as not computed
--judge openai               any OpenAI-compatible chat-completions endpoint
--judge transformers:PATH    a local model directory with a chat template (offline)
--judge synthetic            the synthetic reference judge: the built-in synthetic benchmark only
--judge NAME[:PATH]          a judge an installed distribution registers

The judges by name go through the one registry (`apmbench.adapters.sdk.registry`): a
judge is a class built from a `JudgeConfig` into a `ChatBackend`, with a classmethod
`check_config(config)` that refuses settings it cannot work with before any work is done.
`none` (no judge) and `synthetic` (the suite's own reference judge, built from the run's
dataset) are not judges of this kind. An installed distribution adds one under the
`apmbench_grpc.judges` entry-point group.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from apmbench.adapters.sdk.registry import Registry
from apmbench.harness.errors import ConfigError

if TYPE_CHECKING:
    from apmbench.harness.scoring.judge.backend import ChatBackend


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

USE = "use none, openai, transformers:PATH or synthetic"


@dataclass(frozen=True)
class JudgeConfig:
    kind: str = "none"
    """"none", "openai", "transformers" or "synthetic"."""
    model: str | None = None
    """openai: the model name the endpoint serves (the paper used DeepSeek-V4-Flash)."""
    base_url: str | None = None
    """openai: the API root that `/chat/completions` is appended to, e.g. "http://host/v1"."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai: the environment variable holding the key (the key itself is never recorded)."""
    path: Path | None = None
    """transformers: the model directory (weights, tokenizer and chat template)."""
    max_tokens: int = 1024
    """Longest reply the judge may write."""
    attempts: int = 3
    """Tries per probe when the reply is not the rubric's JSON (then the failure is recorded)."""
    concurrency: int = 4
    """Judge calls in flight at once (a local model always runs one at a time)."""
    timeout_s: float = 120.0
    """Seconds for one HTTP call."""
    http_retries: int = 4
    """Retries of one HTTP call after a timeout, a connection error, 408, 409, 429 or 5xx."""
    backoff_s: float = 2.0
    """First retry delay; doubled per retry (a Retry-After header wins when longer)."""
    cache_dir: Path | None = field(default=None, compare=False)
    """Reply cache; None: judge-cache/ in the run directory."""
    strict_answers: bool = False
    """Count an answer that could be read only by deterministic repair (prose around the
    JSON, a label instead of an option id, ...) as a format failure, not as the answer read.
    Off by default: APM-Bench's appendix B.5 repairs, and the sibling suites follow it (their
    papers are silent). Kept with the judge's settings so that `score` keeps it."""

    def check(self) -> None:
        """Refuse settings that cannot work, saying what to fix, before any work is done."""
        if self.kind not in NOT_JUDGES and self.kind not in JUDGE_REGISTRY:
            raise ConfigError(f"--judge {self.kind!r}: {USE}{_plugins()}")
        if self.attempts < 1 or self.concurrency < 1 or self.max_tokens < 1:
            raise ConfigError(
                "--judge-attempts, --judge-concurrency and --judge-max-tokens must be >= 1"
            )
        if self.http_retries < 0 or self.timeout_s <= 0 or self.backoff_s < 0:
            raise ConfigError("--judge-timeout must be > 0 and the HTTP retries and backoff >= 0")
        if self.kind not in NOT_JUDGES:
            JUDGE_REGISTRY.load(self.kind).check_config(self)

    def as_dict(self) -> dict[str, Any]:
        """For the manifest: every setting; the API key's variable name, never the key."""
        d = asdict(self)
        d["path"] = None if self.path is None else str(self.path.resolve())
        d["cache_dir"] = None if self.cache_dir is None else str(self.cache_dir)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> JudgeConfig:
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        for key in ("path", "cache_dir"):
            if known.get(key) is not None:
                known[key] = Path(known[key])
        return cls(**known)

    def with_cache(self, cache_dir: Path) -> JudgeConfig:
        return self if self.cache_dir is not None else replace(self, cache_dir=cache_dir)


def parse_judge_spec(spec: str) -> tuple[str, Path | None]:
    """ "none" | "synthetic" | a registered judge's "NAME[:PATH]" -> (kind, path)."""
    if spec in NOT_JUDGES:
        return spec, None
    name, colon, path = spec.partition(":")
    if name in JUDGE_REGISTRY and (path or not colon):
        return name, Path(path) if path else None
    raise ConfigError(f"--judge {spec!r}: {USE}{_plugins()}")


def _plugins() -> str:
    extra = [n for n in JUDGE_REGISTRY.names() if n not in BUILTIN]
    return f" (installed: {', '.join(extra)})" if extra else ""
