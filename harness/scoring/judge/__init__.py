"""The LLM judge of the gated judge score (APM-Bench Eq. 1, appendix A.3).

config      which judge (none | openai | transformers:PATH | a plugin's), its settings, the registry
rubric      the A.3 rubric, task guidance, and the request for one probe
verdict     strict reading of the judge's JSON reply
cache       replies on disk, keyed by judge model + settings + exact prompt
judging     cache, bounded retry and concurrency over many probes
openai_chat any OpenAI-compatible chat-completions endpoint (stdlib HTTP)
local_model a local transformers model (optional `models` extra, imported lazily)
reference   the label and checks of a suite's synthetic reference judge (--judge synthetic)
"""

from __future__ import annotations

from collections.abc import Callable

from apmbench.harness.errors import ConfigError
from apmbench.harness.scoring.judge.backend import ChatBackend
from apmbench.harness.scoring.judge.config import JUDGE_REGISTRY, JudgeConfig


def open_judge(
    config: JudgeConfig, reference: Callable[[], ChatBackend] | None = None
) -> ChatBackend | None:
    """The backend for `config` (None for `--judge none`); refuses unusable settings.

    `reference` builds the suite's synthetic reference judge for the dataset at
    hand (`--judge synthetic`); it refuses any dataset but the suite's own
    synthetic benchmark, and without it that judge cannot be opened at all.
    """
    config.check()
    if config.kind == "none":
        return None
    if config.kind == "synthetic":
        if reference is None:
            raise ConfigError("--judge synthetic needs the run's suite and dataset")
        return reference()
    return JUDGE_REGISTRY.load(config.kind)(config)


__all__ = ["ChatBackend", "JudgeConfig", "open_judge"]
