"""The VLM systems' :cpu images with a tiny Qwen-VL model mounted read-only.

The images are built (or found up to date) with `make images-vlm-cpu`'s own
code: apmbench/base plus a CPU torch wheel from this host and transformers.
The model directory is built offline in the test and reaches the container
only through `--mount DIR:/models/vlm`; the container has no network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import pytest
from containertools import cli, run_containers, unavailable

from apmbench.adapters.sdk.errors import ApmbenchError
from apmbench.harness.build.images import BASE, Builder
from apmbench.harness.build.vlm_images import build_cpu, vlm_image

pytest.importorskip("transformers", reason="the models extra builds the tiny model")
pytestmark = [pytest.mark.containers, pytest.mark.slow]

FAST = ("APMBENCH_VLM_MAX_PIXELS=9408", "APMBENCH_VLM_MAX_NEW_TOKENS=8",
        "APMBENCH_VLM_SUMMARY_MAX_NEW_TOKENS=24")  # fmt: skip


@pytest.fixture(scope="module")
def vlm_images(builder: Builder, images: dict[str, str]) -> dict[str, str]:
    try:
        return build_cpu(builder, images[BASE])
    except ApmbenchError as e:  # e.g. no CPU torch wheel on this host
        unavailable(f"the VLM :cpu images cannot be built ({e})")
        raise AssertionError("unreachable") from e


@pytest.fixture(scope="module")
def model(tiny_vlm: Callable[[str], Path]) -> Path:
    return tiny_vlm("qwen3_vl")  # readable by the container's own uid


def run(image: str, tiny: Path, out: Path, *options: str) -> subprocess.CompletedProcess[str]:
    envs = [x for pair in FAST for x in ("--env", pair)]
    return cli("--image", image, "--dataset", str(tiny), "--out", str(out),
               "--persistence", "reset", *envs, *options, timeout=600)  # fmt: skip


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("system", ["vlm-simplestream", "vlm-video-memory", "vlm-text-memory"])
def test_each_vlm_image_runs_the_tiny_benchmark_with_a_mounted_model(
    system: str, tiny: Path, model: Path, tmp_path: Path, vlm_images: dict[str, str],
    engine: docker.DockerClient,
) -> None:  # fmt: skip
    image = vlm_image(system, "cpu")
    out = tmp_path / system
    done = run(image, tiny, out, "--mount", f"{model}:/models/vlm")
    log = (out / "logs" / "system.log").read_text() if (out / "logs").exists() else ""
    assert done.returncode == 0, done.stderr + log
    manifest = json.loads((out / "manifest.json").read_text())
    container = manifest["runtime"]["container"]
    assert container["mounts"] == [f"{model}:/models/vlm:ro"]
    assert container["network"] == "none" and container["relaxations"] == []
    assert manifest["runtime"]["image"]["id"] == vlm_images[image]
    details = manifest["system"]["details"]
    assert details["vlm.model"] == "/models/vlm" and details["vlm.model_type"] == "qwen3_vl"
    assert details["vlm.device"] == "cpu" and details["vlm.torch"].endswith("+cpu")
    instances = lines(out / "instances.jsonl")
    assert instances and all(r["raw_output"] and r["ttft_s"] for r in instances)
    sizes = [s["state_bytes"] for s in lines(out / "sessions.jsonl")]
    if system == "vlm-simplestream":
        assert sizes == [0, 0, 0, 0]
    elif system == "vlm-video-memory":
        assert sizes == sorted(set(sizes)) and sizes[0] > 60_000
    else:
        assert sizes == sorted(set(sizes)) and sizes[-1] < 20_000
    assert run_containers(engine, out) == []


def test_the_container_answers_exactly_as_the_process(
    tiny: Path, model: Path, tmp_path: Path, vlm_images: dict[str, str]
) -> None:
    """Same wheel, same weights, greedy decoding: the same text, in a container or not."""
    contained = tmp_path / "image"
    done = run(
        vlm_image("vlm-simplestream", "cpu"), tiny, contained, "--mount", f"{model}:/models/vlm"
    )
    assert done.returncode == 0, done.stderr
    env = {**os.environ, "APMBENCH_VLM_MODEL": str(model)}
    env.update(pair.split("=", 1) for pair in FAST)
    process = tmp_path / "process"
    subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(tiny),
         "--system", "vlm-simplestream", "--out", str(process), "--persistence", "reset"],
        check=True, capture_output=True, timeout=600, env=env,
    )  # fmt: skip
    answers = [(r["instance_id"], r["raw_output"]) for r in lines(contained / "instances.jsonl")]
    assert answers == [
        (r["instance_id"], r["raw_output"]) for r in lines(process / "instances.jsonl")
    ]


def test_without_the_mount_the_start_fails_saying_how_to_mount(
    tiny: Path, tmp_path: Path, vlm_images: dict[str, str]
) -> None:
    out = tmp_path / "run"
    done = run(vlm_image("vlm-text-memory", "cpu"), tiny, out)
    assert done.returncode == 3
    log = (out / "logs" / "system.log").read_text()
    assert "APMBENCH_VLM_MODEL=/models/vlm: no such directory" in log and "--mount" in log


def test_an_api_backend_needs_the_network_allowed(
    tiny: Path, tmp_path: Path, vlm_images: dict[str, str]
) -> None:
    out = tmp_path / "run"
    done = run(vlm_image("vlm-simplestream", "cpu"), tiny, out,
               "--env", "APMBENCH_VLM_BACKEND=openai",
               "--env", "APMBENCH_VLM_API_BASE=http://127.0.0.1:8000/v1",
               "--env", "APMBENCH_VLM_API_MODEL=qwen")  # fmt: skip
    assert done.returncode == 3
    log = (out / "logs" / "system.log").read_text()
    assert "cannot connect to 127.0.0.1:8000" in log and "--allow-network" in log
