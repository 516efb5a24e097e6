"""The resolve stage: what the settings leave open is decided once, and a resolved record
resolves to itself (a Ray task and each system of the embedded comparison pass it again)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from apmbench.harness.errors import ConfigError
from apmbench.harness.orchestrate.resolve import resolve
from apmbench.harness.orchestrate.settings import (
    AUTO_JUDGE,
    EvaluateOptions,
    SyntheticOrigin,
    SyntheticRequest,
)
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.scoring.judge import JudgeConfig

NULL = runtime_spec(system="null", sandbox=False)


def test_a_resolved_record_resolves_to_itself(tiny: Path) -> None:
    first = resolve(EvaluateOptions(dataset=tiny, out=None, runtime=NULL))
    again = resolve(first.options)
    assert again.options == first.options
    assert first.options.benchmark == "apmbench"
    assert first.options.out == Path("runs") / tiny.name / NULL.label
    assert first.dataset.content_hash == again.dataset.content_hash


def test_judge_auto_is_the_reference_judge_where_the_dataset_has_one(
    tiny: Path, mini: Path
) -> None:
    auto = JudgeConfig(kind=AUTO_JUDGE)
    on_synthetic = resolve(EvaluateOptions(dataset=tiny, out=None, runtime=NULL, judge=auto))
    assert on_synthetic.options.judge.kind == "synthetic"
    on_mini = resolve(EvaluateOptions(dataset=mini, out=None, runtime=NULL, judge=auto))
    assert on_mini.options.judge.kind == "none"


def test_a_given_seed_is_generated_and_recorded_as_known(tiny: Path) -> None:
    opts = EvaluateOptions(
        dataset=None, out=None, runtime=NULL, generate=SyntheticRequest("tiny", 0)
    )
    resolved = resolve(opts)
    assert resolved.options.dataset is not None
    assert resolved.options.dataset.resolve() == tiny.resolve()
    assert resolved.options.synthetic == SyntheticOrigin("tiny", 0, seed_drawn=False)
    assert resolved.options.generate is None


def test_an_unknown_variant_names_the_known_ones(tiny: Path) -> None:
    with pytest.raises(ConfigError, match=r"no variant 'sideways'.*oracle"):
        resolve(EvaluateOptions(dataset=tiny, out=None, runtime=NULL, variant="sideways"))


def test_resume_reads_the_seed_the_run_recorded(tmp_path: Path, tiny: Path) -> None:
    out = tmp_path / "run"
    opts = EvaluateOptions(
        dataset=None, out=out, runtime=NULL, resume=True, generate=SyntheticRequest("tiny")
    )
    with pytest.raises(ConfigError, match="needs its seed"):
        resolve(opts)
    out.mkdir()
    manifest = {"dataset": {"synthetic": {"preset": "tiny", "seed": 0, "seed_drawn": True}}}
    (out / "manifest.json").write_text(json.dumps(manifest))
    resolved = resolve(opts)
    assert resolved.options.synthetic == SyntheticOrigin("tiny", 0, seed_drawn=True)
    with pytest.raises(ConfigError, match="--seed 0"):
        resolve(replace(opts, generate=SyntheticRequest("tiny", 7)))


def test_resume_finds_the_seed_a_ray_runs_parts_recorded(tmp_path: Path, tiny: Path) -> None:
    """A Ray run keeps its finished trajectories in OUT.parts/<trajectory>/ until merged:
    `--resume --out OUT` must find the seed there (OUT itself is still empty)."""
    out = tmp_path / "run"
    part = tmp_path / "run.parts" / "t1" / "shards"
    part.mkdir(parents=True)
    manifest = {"dataset": {"synthetic": {"preset": "tiny", "seed": 0, "seed_drawn": True}}}
    (part / "0-of-1.json").write_text(json.dumps(manifest))
    opts = EvaluateOptions(
        dataset=None, out=out, runtime=NULL, resume=True, generate=SyntheticRequest("tiny")
    )
    assert resolve(opts).options.synthetic == SyntheticOrigin("tiny", 0, seed_drawn=True)
