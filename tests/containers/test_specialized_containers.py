"""kv-memory and event-memory as :cpu images, a tiny Qwen2.5-VL mounted, in restart mode.

Built like the other VLM images (`make images-vlm-cpu`): the same recipe on
apmbench/vlm-base-cpu, the model only through `--mount DIR:/models/vlm`, no
network. Restart mode is the point: each session's memory leaves one container
as its export and enters the next one by import.
"""

from __future__ import annotations

import json
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
        "APMBENCH_VLM_CAPTION_MAX_NEW_TOKENS=6", "APMBENCH_VLM_TOP_K=3")  # fmt: skip


@pytest.fixture(scope="module")
def vlm_images(builder: Builder, images: dict[str, str]) -> dict[str, str]:
    try:
        return build_cpu(builder, images[BASE])
    except ApmbenchError as e:  # e.g. no CPU torch wheel on this host
        unavailable(f"the VLM :cpu images cannot be built ({e})")
        raise AssertionError("unreachable") from e


@pytest.fixture(scope="module")
def model(tiny_vlm: Callable[[str], Path]) -> Path:
    return tiny_vlm("qwen2_5_vl")  # readable by the container's own uid


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# A model in a fresh container at every start: past the suite's 300 s on a loaded 2-core
# machine (CI shares its machine); the run itself is bounded by the CLI's 900 s. The run is
# on `tiny_one_fork` (tests/conftest.py): each session's export crossing into a new
# container and a fork importing one need 7 starts, not the 21 of all of `tiny`.
@pytest.mark.timeout(960)
@pytest.mark.parametrize("system", ["kv-memory", "event-memory"])
def test_each_specialised_image_runs_the_tiny_benchmark_in_restart_mode(
    system: str, tiny_one_fork: Path, model: Path, tmp_path: Path, vlm_images: dict[str, str],
    engine: docker.DockerClient,
) -> None:  # fmt: skip
    image = vlm_image(system, "cpu")
    out = tmp_path / system
    envs = [x for pair in FAST for x in ("--env", pair)]
    done = cli("--image", image, "--dataset", str(tiny_one_fork), "--out", str(out),
               "--persistence", "restart", *envs, "--mount", f"{model}:/models/vlm",
               timeout=900)  # fmt: skip
    log = (out / "logs" / "system.log").read_text() if (out / "logs").exists() else ""
    assert done.returncode == 0, done.stderr + log
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["runtime"]["image"]["id"] == vlm_images[image]
    details = manifest["system"]["details"]
    assert details["vlm.model"] == "/models/vlm" and details["vlm.top_k"] == "3"
    assert details["vlm.device"] == "cpu" and details["vlm.torch"].endswith("+cpu")
    instances = lines(out / "instances.jsonl")
    assert instances and all(r["raw_output"] and r["ttft_s"] for r in instances)
    assert {r["pass"] for r in instances} == {"main", "fork"}  # the forks answered too
    sizes = [s["state_bytes"] for s in lines(out / "sessions.jsonl")]
    assert len(sizes) == 4 and all(s > 0 for s in sizes)
    if system == "kv-memory":
        # 512 B a token for the tiny model in float32; 14 tokens a block of 2 frames.
        assert details["kv.bytes_per_token"] == "512" and sizes == sorted(sizes)
    assert run_containers(engine, out) == []
