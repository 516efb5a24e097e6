"""The Kubernetes and Slurm templates (deploy/) are valid and run shards, then `merge`."""

from __future__ import annotations

import json
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
from apmbench.harness.runtimes import seccomp

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


def _harness_words() -> list[str]:
    pod = manifests()["evaluate-job.yaml"]["spec"]["template"]["spec"]
    (harness,) = pod["containers"]
    return shlex.split(harness["args"][0])


def test_the_indexed_job_runs_one_shard_per_index_with_the_harness_options() -> None:
    job = manifests()["evaluate-job.yaml"]
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed"
    words = _harness_words()
    assert words[:3] == ["exec", "apmbench-grpc", "evaluate"]
    shard = words[words.index("--shard") + 1]
    assert shard == f"${{JOB_COMPLETION_INDEX}}/{spec['completions']}"
    assert _flags(words) <= _options(evaluate_command), _flags(words) - _options(evaluate_command)
    merge = manifests()["merge-job.yaml"]["spec"]["template"]["spec"]["containers"][0]
    assert merge["command"][:2] == ["apmbench-grpc", "merge"]
    assert _flags(merge["command"]) <= _options(merge_command)
    assert words[words.index("--out") + 1] in merge["command"]


def test_the_shards_restart_the_method_in_the_harness_sandbox() -> None:
    """`restart` on a cluster: the harness starts the method itself (--system or --command),
    sandboxed, a fresh process per start; no method sidecar it could only --endpoint."""
    pod = manifests()["evaluate-job.yaml"]["spec"]["template"]["spec"]
    assert "initContainers" not in pod and len(pod["containers"]) == 1
    words = _harness_words()
    assert words[words.index("--persistence") + 1] == "restart"
    assert len(_flags(words) & {"--system", "--command"}) == 1
    assert not _flags(words) & {"--endpoint", "--image", "--no-sandbox", "--sandbox-net"}


def test_the_pod_allows_bwrap_and_nothing_more() -> None:
    """What bubblewrap needs in a pod (its own user namespace, an unmasked /proc, a seccomp
    profile that allows namespaces and mounts, no AppArmor mount denials), and not a
    privilege beyond it."""
    pod = manifests()["evaluate-job.yaml"]["spec"]["template"]["spec"]
    (harness,) = pod["containers"]
    context = harness["securityContext"]
    assert pod["hostUsers"] is False  # Kubernetes admits procMount Unmasked only so
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert context["privileged"] is False
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["readOnlyRootFilesystem"] is True
    assert context["procMount"] == "Unmasked"
    assert context["appArmorProfile"] == {"type": "Unconfined"}
    profile = context["seccompProfile"]
    assert profile["type"] == "Localhost"
    shipped = DEPLOY / "k8s" / "seccomp" / Path(profile["localhostProfile"]).name
    assert shipped.read_text() == seccomp.pod_profile("x86_64"), (
        "regenerate deploy/k8s/seccomp/apmbench-harness.json from seccomp.pod_profile()"
    )
    mounts = {m["mountPath"]: m for m in harness["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]["name"]]  # the socket dirs, on a read-only root


def test_the_pod_seccomp_profile_lets_bwrap_build_and_keeps_kernel_objects_out() -> None:
    profile = json.loads(seccomp.pod_profile("x86_64"))
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    refused = {name for rule in profile["syscalls"] for name in rule["names"]}
    assert not refused & set(seccomp.BWRAP_NEEDS)
    assert {"ptrace", "bpf", "keyctl", "perf_event_open", "io_uring_setup"} <= refused
    # No call is refused by its arguments: clone must pass CLONE_NEW* to bwrap.
    assert all("args" not in rule for rule in profile["syscalls"])


def test_the_merge_pod_gets_no_relaxation() -> None:
    """The merge starts no method: none of what bwrap needs, the runtime's defaults."""
    pod = manifests()["merge-job.yaml"]["spec"]["template"]["spec"]
    (merge,) = pod["containers"]
    context = merge["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["allowPrivilegeEscalation"] is False
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "procMount" not in context and "hostUsers" not in pod


def test_the_network_policy_closes_the_shard_pods() -> None:
    policy = manifests()["network-policy.yaml"]
    template = manifests()["evaluate-job.yaml"]["spec"]["template"]
    selector = policy["spec"]["podSelector"]["matchLabels"]
    assert selector.items() <= template["metadata"]["labels"].items()
    assert sorted(policy["spec"]["policyTypes"]) == ["Egress", "Ingress"]
    assert policy["spec"]["ingress"] == [] and policy["spec"]["egress"] == []


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


def test_the_gpu_variant_differs_from_the_job_only_by_the_gpu() -> None:
    """deploy/k8s/evaluate-job-gpu.yaml: the GPU limit, the nvidia RuntimeClass, a node
    selector (and the GPU taint's toleration), --gpus on the harness's command line, and
    the same security context: passing the device opens nothing else in the pod."""
    cpu, gpu = manifests()["evaluate-job.yaml"], manifests()["evaluate-job-gpu.yaml"]
    pod, cpu_pod = gpu["spec"]["template"]["spec"], cpu["spec"]["template"]["spec"]
    (harness,), (cpu_harness,) = pod["containers"], cpu_pod["containers"]
    assert harness["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    words = shlex.split(harness["args"][0])
    assert words[words.index("--gpus") + 1] == "all"
    assert _flags(words) <= _options(evaluate_command)
    assert not _flags(words) & {"--no-sandbox", "--image", "--endpoint", "--sandbox-net"}
    assert [w for w in words if w not in ("--gpus", "all")] == _harness_words()
    assert harness["securityContext"] == cpu_harness["securityContext"]
    for key in ("hostUsers", "securityContext", "automountServiceAccountToken", "volumes"):
        assert pod[key] == cpu_pod[key]
    assert harness["volumeMounts"] == cpu_harness["volumeMounts"]
    rest = {k: v for k, v in harness.items() if k not in ("args", "resources")}
    assert rest == {k: v for k, v in cpu_harness.items() if k not in ("args", "resources")}
    assert gpu["spec"]["template"]["metadata"] == cpu["spec"]["template"]["metadata"]
