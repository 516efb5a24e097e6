"""The Kubernetes and Slurm templates (deploy/) are valid and run shards, then `merge`."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from apmbench.harness.commands.evaluate import evaluate as evaluate_command
from apmbench.harness.commands.merge import merge as merge_command

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S_VERSION = "1.33.0"


def manifests() -> dict[str, dict[str, Any]]:
    return {p.name: yaml.safe_load(p.read_text()) for p in sorted((DEPLOY / "k8s").glob("*.yaml"))}


def _options(command: Any) -> set[str]:
    return {opt for param in command.params for opt in getattr(param, "opts", [])}


def _flags(words: list[str]) -> set[str]:
    return {w for w in words if w.startswith("--")}


@pytest.mark.parametrize("name", sorted(manifests()))
def test_each_manifest_passes_the_kubernetes_schema_strictly(name: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    # Strict: an unknown or misspelt field (say `completionsMode`) fails too.
    kubernetes_validate.validate(manifests()[name], K8S_VERSION, strict=True)


def test_a_misspelt_field_fails_the_schema_check() -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    broken = manifests()["evaluate-job.yaml"]
    broken["spec"]["completionsMode"] = broken["spec"].pop("completionMode")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_the_indexed_job_runs_one_shard_per_index_with_the_harness_options() -> None:
    job = manifests()["evaluate-job.yaml"]
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    pod = spec["template"]["spec"]
    (harness,) = pod["containers"]
    script = harness["args"][0]
    words = shlex.split(script)
    assert words[:3] == ["exec", "apmbench-grpc", "evaluate"]
    shard = words[words.index("--shard") + 1]
    assert shard == f"${{JOB_COMPLETION_INDEX}}/{spec['completions']}"
    assert _flags(words) <= _options(evaluate_command), _flags(words) - _options(evaluate_command)
    (method,) = pod["initContainers"]
    assert method["restartPolicy"] == "Always", "the method is a native sidecar"
    env = {e["name"]: e["value"] for e in method["env"]}
    assert words[words.index("--endpoint") + 1] == env["APMBENCH_ADDRESS"]
    assert "nvidia.com/gpu" in method["resources"]["limits"]
    merge = manifests()["merge-job.yaml"]["spec"]["template"]["spec"]["containers"][0]
    assert merge["command"][:2] == ["apmbench-grpc", "merge"]
    assert _flags(merge["command"]) <= _options(merge_command)
    assert words[words.index("--out") + 1] in merge["command"]


def test_the_slurm_script_parses_and_runs_array_shards_then_merge() -> None:
    script = DEPLOY / "slurm" / "evaluate.sbatch"
    bash = shutil.which("bash")
    assert bash is not None
    subprocess.run([bash, "-n", str(script)], check=True)
    text = script.read_text()
    assert '--shard "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT"' in text
    evaluate_call = re.search(r"^apmbench-grpc evaluate \\\n((?:.*\\\n)*.*)$", text, re.M)
    assert evaluate_call is not None
    assert _flags(evaluate_call.group(1).split()) <= _options(evaluate_command)
    assert "apmbench-grpc merge '$OUT/shards' --out" in text
    assert '--dependency="afterok:$SLURM_ARRAY_JOB_ID"' in text
    shellcheck = shutil.which("shellcheck")
    if shellcheck is not None:
        subprocess.run([shellcheck, "-S", "warning", str(script)], check=True)
