"""The Kubernetes design, run here without a cluster: a shard's pod is one container of an
image holding the harness and the method, in which the harness starts the method per start
in its bubblewrap sandbox (`--persistence restart`). The container runs with the pod's
security settings as `docker run` options, translated from deploy/k8s/evaluate-job.yaml
itself (and network-policy.yaml), not copied by hand: a change to the manifest changes what
runs here, and a setting with no translation fails the test.

Inside it the persistence cheaters are stopped (a disk stash, memory kept in RAM across
Reset) while an honest system scores; with the protection off (`--no-sandbox`, `reset`)
each cheat works and the report says so. In a container that lacks what bwrap needs
(Docker's defaults) the harness refuses with exit 2 and names what the node must allow.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import docker
import pytest
import yaml
from containertools import ROOT

from apmbench.harness.build.images import Builder, tree_files

DEPLOY = ROOT / "deploy" / "k8s"
HARNESS_TAG = "apmbench-test/k8s-harness:latest"
POD_TAG = "apmbench-test/k8s-pod:latest"
TMP_SIZE = "2g"


@pytest.fixture(scope="module")
def pod_image(builder: Builder) -> str:
    """The harness image (containers/harness, under a test tag) and on it the method's."""
    harness_id = builder.harness(HARNESS_TAG)
    files = {
        "Dockerfile": (ROOT / "tests" / "containers" / "k8s-pod" / "Dockerfile").read_bytes(),
        **tree_files(ROOT / "tests", ["helpers"], [], ""),
    }
    builder.build(POD_TAG, files, {"HARNESS": HARNESS_TAG}, parent=harness_id)
    return POD_TAG


def _load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / name).read_text())
    return loaded


def pod_options() -> list[str]:
    """`docker run` options equivalent to the shard pod's security settings and network
    policy. A setting this does not know fails: it must not be silently left out."""
    job = _load("evaluate-job.yaml")
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    options: list[str] = []
    pod_context = dict(pod.get("securityContext") or {})
    context = dict(container.get("securityContext") or {})
    user = context.pop("runAsUser", pod_context.pop("runAsUser", None))
    group = context.pop("runAsGroup", pod_context.pop("runAsGroup", None))
    if user is not None:
        options += ["--user", f"{user}:{group if group is not None else user}"]
    if pod_context.pop("runAsNonRoot", False) or context.pop("runAsNonRoot", False):
        assert user not in (None, 0), "runAsNonRoot without a non-root runAsUser"
    if (fs_group := pod_context.pop("fsGroup", None)) is not None:
        options += ["--group-add", str(fs_group)]
    assert not pod_context, f"pod securityContext without a docker equivalent: {pod_context}"
    if context.pop("privileged", False):
        options.append("--privileged")
    if context.pop("allowPrivilegeEscalation", True) is False:
        options += ["--security-opt", "no-new-privileges"]
    caps = context.pop("capabilities", {}) or {}
    options += [f"--cap-drop={c}" for c in caps.pop("drop", [])]
    options += [f"--cap-add={c}" for c in caps.pop("add", [])]
    assert not caps, caps
    if context.pop("readOnlyRootFilesystem", False):
        options.append("--read-only")
    if context.pop("procMount", "Default") == "Unmasked":
        options += ["--security-opt", "systempaths=unconfined"]
    seccomp = context.pop("seccompProfile", {"type": "RuntimeDefault"})
    if seccomp["type"] == "Localhost":
        # The node holds it under the kubelet's seccomp root; this repository ships it.
        shipped = DEPLOY / "seccomp" / Path(seccomp["localhostProfile"]).name
        options += ["--security-opt", f"seccomp={shipped}"]
    elif seccomp["type"] == "Unconfined":
        options += ["--security-opt", "seccomp=unconfined"]
    apparmor = context.pop("appArmorProfile", {"type": "RuntimeDefault"})
    if apparmor["type"] == "Unconfined":
        options += ["--security-opt", "apparmor=unconfined"]
    assert apparmor["type"] in ("Unconfined", "RuntimeDefault"), apparmor
    assert not context, f"container securityContext without a docker equivalent: {context}"
    # hostUsers: false puts the pod in its own user namespace; Docker has none per
    # container, so the container here runs in the host's: a weaker setting than the
    # pod's, in which bwrap must work all the same.
    assert pod.get("hostUsers") is False
    volumes = {v["name"]: v for v in pod["volumes"]}
    for mount in container["volumeMounts"]:
        if "emptyDir" in volumes[mount["name"]]:
            options += ["--tmpfs", f"{mount['mountPath']}:rw,exec,nosuid,size={TMP_SIZE}"]
    policy = _load("network-policy.yaml")["spec"]
    labels = job["spec"]["template"]["metadata"]["labels"]
    if (
        policy["podSelector"]["matchLabels"].items() <= labels.items()
        and set(policy["policyTypes"]) == {"Ingress", "Egress"}
        and not policy["ingress"]
        and not policy["egress"]
    ):
        options += ["--network", "none"]
    return options


def manifest_persistence() -> str:
    (container,) = _load("evaluate-job.yaml")["spec"]["template"]["spec"]["containers"]
    words = shlex.split(container["args"][0])
    return words[words.index("--persistence") + 1]


def run_in_pod(
    image: str, options: list[str], runs: dict[str, str], results: Path, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """Run each `evaluate ARGS` of `runs` in one container (they share its synthetic cache,
    as a pod's evaluations would), each into /results/NAME; its start time in NAME.t0, its
    exit code in NAME.rc."""
    results.mkdir()
    results.chmod(0o777)  # written by the image's user
    script = "\n".join(
        f"date +%s.%N > /results/{name}.t0; apmbench-grpc evaluate {args} --out /results/{name} > /results/{name}.log 2>&1; "
        f"echo $? > /results/{name}.rc"
        for name, args in runs.items()
    )
    docker_cli = shutil.which("docker")
    assert docker_cli is not None, "the docker CLI is needed (apt-get install -y docker.io)"
    name = f"apmbench-test-k8s-{uuid.uuid4().hex[:8]}"
    cmd = [
        docker_cli, "run", "--rm", "--name", name, *options,
        "-v", f"{results}:/results", "--entrypoint", "/bin/sh", image, "-c", script,
    ]  # fmt: skip
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    finally:
        subprocess.run([docker_cli, "rm", "-f", name], capture_output=True, timeout=60)


def _rows(run: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (run / "instances.jsonl").read_text().splitlines()]
    for row in rows:
        row["said"] = json.loads(row["raw_output"])
    return rows


def _finished(results: Path, name: str) -> Path:
    code = (results / f"{name}.rc").read_text().strip()
    log = (results / f"{name}.log").read_text()
    assert code == "0", f"{name}: exit {code}\n{log[-3000:]}"
    return results / name


@pytest.mark.containers
@pytest.mark.timeout(1500)
def test_the_pod_stops_the_persistence_cheaters_and_an_honest_system_scores(
    engine: docker.DockerClient, pod_image: str, tmp_path: Path
) -> None:
    persistence = manifest_persistence()
    assert persistence == "restart"
    tag = uuid.uuid4().hex[:12]
    common = f"--synthetic tiny --seed 5 --persistence {persistence}"
    stash = f"--system helpers.cheaters:DiskStash --env APMBENCH_CHEAT_TAG={tag}"
    runs = {
        "honest": f"{common} --system text-log",
        "stash": f"{common} {stash}",
        "hidden": f"{common} --system helpers.systems:HiddenState",
        # The protection off, each half: unconfined, and the process kept across sessions.
        "stash-unconfined": f"{common} {stash} --no-sandbox",
        "hidden-reset": "--synthetic tiny --seed 5 --persistence reset "
        "--system helpers.systems:HiddenState",
    }
    done = run_in_pod(pod_image, pod_options(), runs, tmp_path / "results")
    assert done.returncode == 0, done.stderr[-3000:]
    results = tmp_path / "results"

    honest = _finished(results, "honest")
    report = json.loads((honest / "report.json").read_text())
    bound = report["sandbox"].pop("host_paths")
    assert bound and all(p.startswith("/") for p in bound), bound
    assert report["sandbox"] == {"confined": True, "network": "none", "tool": "bubblewrap"}
    assert report["overall"]["score"] > 50  # text-log: 90.7 on this seed on a host
    manifest = json.loads((honest / "manifest.json").read_text())
    assert manifest["settings"]["persistence"] == "restart"
    assert "unverified" not in (honest / "report.md").read_text()

    stash_rows = _rows(_finished(results, "stash"))
    assert {w for r in stash_rows for w in r["said"]["written"]}  # it stashed every time
    assert not any(r["said"]["recalled"] for r in stash_rows), "a stash reached a later start"
    unconfined_run = _finished(results, "stash-unconfined")
    assert any(r["said"]["recalled"] for r in _rows(unconfined_run))  # caught without the box
    assert "unconfined: numbers not comparable" in (unconfined_run / "report.md").read_text()

    hidden = [r["said"]["hidden_sessions"] for r in _rows(_finished(results, "hidden"))]
    assert hidden and all(len(h) <= 1 for h in hidden), "RAM outlived a restart"
    reset_run = _finished(results, "hidden-reset")
    kept = [r["said"]["hidden_sessions"] for r in _rows(reset_run)]
    assert max(len(h) for h in kept) > 1  # the process lived on: its RAM crossed Reset
    head = (reset_run / "report.md").read_text().split("## ")[0]
    assert "**Storage/hr unverified** (persistence `reset`)" in head


@pytest.mark.containers
@pytest.mark.timeout(1500)  # the first test to run builds the images
@pytest.mark.parametrize(
    ("dropped", "cause"),
    [
        pytest.param(
            ("seccomp=", "systempaths="), "creating a user namespace is refused", id="defaults"
        ),
        pytest.param(("systempaths=",), "/proc is masked", id="masked-proc"),
    ],
)
def test_a_pod_without_what_bwrap_needs_is_refused_with_what_to_allow(
    engine: docker.DockerClient,
    pod_image: str,
    tmp_path: Path,
    dropped: tuple[str, ...],
    cause: str,
) -> None:
    options = pod_options()
    kept: list[str] = []
    for i, option in enumerate(options):
        if option == "--security-opt" and options[i + 1].startswith(dropped):
            continue
        if i and options[i - 1] == "--security-opt" and option.startswith(dropped):
            continue
        kept.append(option)
    assert len(kept) == len(options) - 2 * len(dropped)
    runs = {"refused": "--synthetic tiny --seed 5 --persistence restart --system text-log"}
    done = run_in_pod(pod_image, kept, runs, tmp_path / "results", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = tmp_path / "results"
    log = (results / "refused.log").read_text()
    assert (results / "refused.rc").read_text().strip() == "2", log[-3000:]
    assert "the sandbox cannot start here" in log and cause in log, log[-3000:]
    for need in ("hostUsers: false", "procMount: Unmasked", "apmbench-harness.json"):
        assert need in " ".join(log.split()), need
    assert not (results / "refused" / "instances.jsonl").exists()
