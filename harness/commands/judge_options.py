"""The --judge options that `evaluate` and `score` share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from apmbench.harness.errors import ConfigError
from apmbench.harness.orchestrate.settings import AUTO_JUDGE
from apmbench.harness.scoring.judge.config import JudgeConfig, parse_judge_spec
from apmbench.harness.wording import counted

if TYPE_CHECKING:
    from apmbench.harness.suites.base import OpaqueSuite

F = TypeVar("F", bound=Callable[..., object])
_DEFAULTS = JudgeConfig()
EXIT_JUDGE_UNREACHABLE = 4
"""A judge was configured but could not be reached: the report is written, its
judge-dependent numbers are null, and a rerun of `score` retries."""

JUDGE_OPTIONS = (
    "--judge",
    "--judge-model",
    "--judge-base-url",
    "--judge-api-key-env",
    "--judge-max-tokens",
    "--judge-attempts",
    "--judge-concurrency",
    "--judge-timeout",
    "--judge-http-retries",
    "--judge-optional",
    "--judge-cache",
    "--strict-answers",
)
"""What `judge_options` adds, for the help's Judge section."""
JUDGE_SECTION = (
    "Judge",
    "who grades the open-ended answers, and how answers are read (docs/judges.md)",
    JUDGE_OPTIONS,
)

AUTO = AUTO_JUDGE
AUTO_HELP = "auto (synthetic on the built-in synthetic benchmark, else none). "


def judge_options(default_judge: str | None) -> Callable[[F], F]:
    """Decorate a command with the judge options; `default_judge` None means "as recorded"
    (`score RUN_DIR`), and auto where nothing was recorded (`score --labels`)."""
    spec_help = (
        "none | openai | transformers:PATH | synthetic (the built-in synthetic benchmark's "
        f"reference judge, not the paper's LLM judge) | {AUTO_HELP}"
        + (
            f"Default: {default_judge}."
            if default_judge
            else "Default: the judge the run was last scored with; with --labels, auto."
        )
    )
    options = [
        click.option("--judge", "judge", default=default_judge, help=spec_help),
        click.option("--judge-model", help="openai: the model name the endpoint serves."),
        click.option(
            "--judge-base-url",
            help='openai: API root that "/chat/completions" is appended to (e.g. http://host/v1).',
        ),
        click.option(
            "--judge-api-key-env",
            default=None,
            help=f"openai: environment variable holding the key. Default: {_DEFAULTS.api_key_env}.",
        ),
        click.option(
            "--judge-max-tokens",
            type=int,
            default=None,
            help=f"Longest judge reply. Default: {_DEFAULTS.max_tokens}.",
        ),
        click.option(
            "--judge-attempts",
            type=int,
            default=None,
            help="Tries per probe when the reply is not the rubric's JSON; then the failure is "
            f"recorded. Default: {_DEFAULTS.attempts}.",
        ),
        click.option(
            "--judge-concurrency",
            type=int,
            default=None,
            help=f"Judge calls in flight at once. Default: {_DEFAULTS.concurrency}.",
        ),
        click.option(
            "--judge-timeout",
            type=float,
            default=None,
            help=f"Seconds per HTTP call. Default: {_DEFAULTS.timeout_s:g}.",
        ),
        click.option(
            "--judge-http-retries",
            type=int,
            default=None,
            help="Retries after timeouts, connection errors, 408/409/429/5xx. "
            f"Default: {_DEFAULTS.http_retries}.",
        ),
        click.option(
            "--judge-optional",
            is_flag=True,
            default=False,
            help="Finish with exit status 0 even when the configured judge could not be "
            "reached (its numbers are then reported as not computed). Default: such a run "
            f"exits with status {EXIT_JUDGE_UNREACHABLE}.",
        ),
        click.option(
            "--judge-cache",
            type=click.Path(path_type=Path),
            default=None,
            help="Reply cache directory. Default: judge-cache/ in the run directory.",
        ),
        click.option(
            "--strict-answers/--repaired-answers",
            "strict_answers",
            default=None,
            help=(
                "--strict-answers counts an answer that could be read only by deterministic "
                "repair (prose, a label for an option id) as a format failure; "
                "--repaired-answers scores it as read, as the APM-Bench paper's appendix B.5 "
                "does. Default: "
                + ("repaired." if default_judge else "as recorded (repaired if never set).")
            ),
        ),
    ]

    def decorate(f: F) -> F:
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def judge_config(recorded: JudgeConfig | None = None, **given: Any) -> JudgeConfig:
    """A JudgeConfig from the options; unset options keep `recorded` (or the defaults)."""
    base = recorded or JudgeConfig()
    spec = given.pop("judge")
    given.pop("judge_optional", None)
    fields: dict[str, object] = {}
    if spec is not None:
        try:
            kind, path = parse_judge_spec(spec)
        except ConfigError as e:
            raise click.BadParameter(str(e), param_hint="--judge") from None
        fields = {"kind": kind, "path": path}
        if kind != base.kind:
            # Another judge: nothing of the recorded one (model, URL, path) carries over.
            base = JudgeConfig()
    names = {
        "judge_model": "model",
        "judge_base_url": "base_url",
        "judge_api_key_env": "api_key_env",
        "judge_max_tokens": "max_tokens",
        "judge_attempts": "attempts",
        "judge_concurrency": "concurrency",
        "judge_timeout": "timeout_s",
        "judge_http_retries": "http_retries",
        "judge_cache": "cache_dir",
    }
    strict = given.get("strict_answers")
    if strict is None:  # as recorded, whichever judge grades now
        strict = (recorded or JudgeConfig()).strict_answers
    for option, field_name in names.items():
        if given.get(option) is not None:
            fields[field_name] = given[option]
    merged = {**JudgeConfig.as_dict(base), **fields}
    merged["path"] = fields.get("path", base.path)
    merged["cache_dir"] = fields.get("cache_dir", base.cache_dir)
    merged["strict_answers"] = bool(strict)
    return JudgeConfig.from_dict(merged)


def resolve_auto(spec: str | None, reference_available: Callable[[], bool]) -> str | None:
    """`--judge auto`: the reference judge where the dataset has one, else none."""
    if spec != AUTO:
        return spec
    return "synthetic" if reference_available() else "none"


def has_reference_judge(suite: OpaqueSuite, dataset: Path) -> bool:
    """Whether `suite` has a synthetic reference judge for `dataset`: the resolve stage's
    rule for `--judge auto` (orchestrate/resolve.py), which `score` follows too."""
    from apmbench.harness.orchestrate.resolve import auto_judge

    return auto_judge(suite, dataset) == "synthetic"


def _at(value: object, *keys: str) -> Mapping[str, object]:
    """The JSON object at `keys` under `value` (empty where one is missing: a suite whose
    report has no judge summary, a run scored without a judge)."""
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _count(value: object) -> int:
    return value if isinstance(value, int) else 0


def judge_warnings(report: Mapping[str, object]) -> list[str]:
    """Say plainly when the judge left numbers uncomputed, and how to retry."""
    by_status = _at(report, "judge", "by_status")
    out = []
    if by_status.get("invalid"):
        out.append(
            f"the judge's reply for {counted(_count(by_status['invalid']), 'probe')} was never "
            "the rubric's JSON "
            "(see `judge.problems` in instances.jsonl; try more --judge-attempts or another judge)"
        )
    if by_status.get("error"):
        out.append(
            f"the judge could not be reached for {counted(_count(by_status['error']), 'probe')}; "
            "rerun `apmbench-grpc score RUN_DIR` (answered calls are cached)"
        )
    return out


def judge_unreachable(report: Mapping[str, object]) -> str | None:
    """What to tell the user when a configured judge could not be reached, else None.

    A run whose judge was down would otherwise end "successfully" with null
    headline numbers, which a script cannot tell from a finished evaluation.
    """
    errors = _at(report, "judge", "by_status").get("error", 0)
    if not isinstance(errors, int) or not errors:
        return None
    judge = _at(report, "scoring", "judge")
    where = judge.get("base_url") or judge.get("path") or judge.get("kind", "the judge")
    return (
        f"the judge ({where}) could not be reached for {counted(errors, 'probe')}, so the adaptive "
        "scores, Adaptive Response and Overall are not computed. Fix the judge (URL, key, "
        "server) and rerun `apmbench-grpc score RUN_DIR` (answered calls are cached), or pass "
        "--judge-optional to accept a report without those numbers"
    )
