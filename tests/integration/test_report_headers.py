"""Every suite's report.md header names the dataset and its hash as APM-Bench's does
("Dataset `NAME` (hash `HASH`)"), never the manifest's dict (EgoProbe printed
`Dataset {'name': ..., 'path': ...}`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.egoprobe.synth import synthetic_dataset as egoprobe_dataset
from apmbench.harness.suites.proactegomem.synth import synthetic_dataset as proact_dataset

pytestmark = [pytest.mark.integration]


def _dataset(benchmark: str, mini: Path, cache: Path) -> Path:
    if benchmark == "egoprobe":
        return egoprobe_dataset("tiny", 0, cache)
    if benchmark == "proactegomem":
        return proact_dataset("tiny", 0, cache)
    return mini


@pytest.mark.slow
@pytest.mark.parametrize("benchmark", ["apmbench", "egoprobe", "proactegomem"])
def test_report_header_names_the_dataset_and_its_hash(
    benchmark: str, mini: Path, tmp_path: Path
) -> None:
    root = _dataset(benchmark, mini, tmp_path / "cache")
    run = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=root, out=run, runtime=runtime_spec(system="null"), benchmark=benchmark
        )
    )
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["benchmark"] == benchmark
    name, digest = manifest["dataset"]["name"], manifest["dataset_hash"]
    assert name and digest
    header = (run / "report.md").read_text().split("\n## ", 1)[0]
    assert f"Dataset `{name}` (hash `{digest[:12]}`)" in header
    assert "{'" not in header and "'path'" not in header
