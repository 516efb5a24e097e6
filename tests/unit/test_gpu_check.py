"""The GPU check's comparisons (tests/gpu/run_gpu_check.py), on the CPU."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import apmbench.adapters.vlm.video as video_module
from apmbench.adapters.vlm.video import VisionGeometry, prepare_clip

SCRIPT = Path(__file__).resolve().parents[1] / "gpu" / "run_gpu_check.py"
QWEN3 = VisionGeometry(16, 2, 2, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5))


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    spec = importlib.util.spec_from_file_location("run_gpu_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def _clip(monkeypatch: pytest.MonkeyPatch, shift: int = 0, resample: Any = None) -> Any:
    """Our clip of random 336x448 frames (resized for Qwen3-VL), optionally shifted by
    `shift` grey levels or resized with another Pillow filter."""
    frames = np.random.default_rng(0).integers(0, 255, (4, 336, 448, 3), dtype=np.uint8)
    if resample is not None:
        from PIL import Image

        def other(frame: npt.NDArray[np.uint8], size: tuple[int, int]) -> npt.NDArray[np.uint8]:
            height, width = size
            image = Image.fromarray(frame).resize((width, height), resample)
            return np.asarray(image, dtype=np.uint8)

        monkeypatch.setattr(video_module, "_resize", other)
    clip = prepare_clip(list(frames), [0.0, 1.0, 2.0, 3.0], QWEN3, 448 * 336)
    monkeypatch.undo()
    if shift:
        clip = type(clip)(
            clip.patches + np.float32(shift / 255 / QWEN3.std[0]),
            clip.grid_thw,
            clip.group_seconds,
            clip.seconds_per_group,
        )
    return clip


def test_the_same_patches_pass_and_a_grey_level_of_rounding_too(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = _clip(monkeypatch)
    assert ours.grid_thw != (2, 336 // 16, 448 // 16)  # resized: the filter matters
    for shift in (0, 1):
        theirs = _clip(monkeypatch, shift=shift)
        diff = float(np.abs(theirs.patches - ours.patches).max())
        assert gpu_check.processor_failures(
            "qwen3_vl", ours.grid_thw, theirs.grid_thw, diff, QWEN3.std
        ) == [], shift  # fmt: skip


def test_another_resize_filter_fails_naming_the_difference(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    from PIL import Image

    ours = _clip(monkeypatch)
    theirs = _clip(monkeypatch, resample=Image.Resampling.BILINEAR)
    diff = float(np.abs(theirs.patches - ours.patches).max())
    [failure] = gpu_check.processor_failures(
        "qwen3_vl", ours.grid_thw, theirs.grid_thw, diff, QWEN3.std
    )
    assert failure.startswith("qwen3_vl processor: max |patch difference|")
    assert "(2 grey levels): the resize is not transformers'" in failure


def test_a_grid_mismatch_or_nan_fails(gpu_check: ModuleType) -> None:
    failures = gpu_check.processor_failures("qwen2_5_vl", (2, 24, 32), (2, 24, 30), 0.0, (0.3,))
    assert failures == ["qwen2_5_vl processor: grid ours (2, 24, 32) != transformers (2, 24, 30)"]
    [nan] = gpu_check.processor_failures("qwen2_5_vl", (1, 2, 2), (1, 2, 2), math.nan, (0.3,))
    assert "max |patch difference| nan" in nan


def test_run_rows_must_finish_on_the_device_with_generations(gpu_check: ModuleType) -> None:
    good = {"system": "kv-memory", "family": "qwen3_vl", "exit": 0, "device": "cuda:0 bfloat16",
            "max_video_tokens": 40, "peak_gpu_gib": 0.2,
            "starts": {"served": 5, "gpu_cap": 2}}  # fmt: skip
    assert gpu_check.run_failures(good, "cuda") == []
    assert gpu_check.run_failures({**good, "exit": 3, "error": "boom"}, "cuda") == [
        "kv-memory (qwen3_vl): evaluate exited 3"
    ]
    bad = {**good, "device": "cpu float32", "max_video_tokens": 0, "peak_gpu_gib": 0.0}
    assert gpu_check.run_failures(bad, "cuda") == [
        "kv-memory (qwen3_vl): model loaded on 'cpu float32', not cuda",
        "kv-memory (qwen3_vl): no generation logged visual tokens",
        "kv-memory (qwen3_vl): no peak GPU memory in the server's log",
    ]
    # The CPU dry run measures no GPU memory, and wants the CPU.
    assert gpu_check.run_failures({**bad, "max_video_tokens": 8}, "cpu") == []
    # A restart run: its weights must not change, and on the GPU its spares' room is measured.
    restarted = {**good, "weights_unchanged": True, "starts": {"served": 5, "gpu_cap": 3}}
    assert gpu_check.run_failures(restarted, "cuda") == []
    assert gpu_check.run_failures({**restarted, "weights_unchanged": False}, "cuda") == [
        "kv-memory (qwen3_vl): the model's weights changed during the run"
    ]
    unmeasured = {**restarted, "starts": {"served": 5, "gpu_cap": None}}
    assert gpu_check.run_failures(unmeasured, "cuda") == [
        "kv-memory (qwen3_vl): the spares' GPU memory was never measured (gpu_cap)"
    ]
    on_cpu = {**unmeasured, "device": "cpu float32"}
    assert gpu_check.run_failures(on_cpu, "cpu") == []
    assert gpu_check.run_failures({**on_cpu, "starts": {"served": 1}}, "cpu") == [
        "kv-memory (qwen3_vl): a restart run with no restart in logs/starts.json"
    ]


def test_a_model_directory_digest_sees_a_changed_byte(
    gpu_check: ModuleType, tmp_path: Path
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 4096)
    (tmp_path / "sub" / "config.json").write_text("{}")
    first = gpu_check.weights_digest(tmp_path)
    assert gpu_check.weights_digest(tmp_path) == first
    with (tmp_path / "model.safetensors").open("r+b") as f:
        f.seek(2048)
        f.write(b"\1")
    assert gpu_check.weights_digest(tmp_path) != first


def test_a_step_that_raises_is_a_failure_and_the_check_goes_on(gpu_check: ModuleType) -> None:
    check = gpu_check.Check()
    assert check.step("double", lambda x: 2 * x, 4) == 8
    assert check.step("divide", lambda x: 1 / x, 0) is None
    assert check.failures == ["divide: raised ZeroDivisionError: division by zero"]


def test_without_a_cuda_device_it_exits_saying_so(tmp_path: Path) -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no device, even on a GPU host
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("no CUDA device: torch "), done.stderr
    assert "--cpu-dry-run" in done.stderr and not (tmp_path / "out").exists()


def _main(
    gpu_check: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    out: Path,
    compared: list[str],
    row: dict[str, Any] | None = None,
) -> tuple[int, dict[str, Any]]:
    """`main --cpu-dry-run` with its model builds, dataset and runs stubbed, and a processor
    comparison whose failures are `compared`: the exit status and gpu-check.json."""
    import helpers.tiny_qwen_vl as tiny

    import apmbench.harness.suites.apmbench.synth.cache as cache

    monkeypatch.setattr(tiny, "build_tiny_qwen_vl", lambda path, family: path)
    monkeypatch.setattr(cache, "synthetic_dataset", lambda *args: out / "dataset")

    def compare(models: dict[str, Path], check: Any, required: bool) -> None:
        assert sorted(models) == ["qwen2_5_vl", "qwen3_vl"] and not required
        check.failures += compared

    good = {"exit": 0, "device": "cpu float32", "max_video_tokens": 8, "peak_gpu_gib": 0.0,
            "ttft_mean_s": 0.1, "ttft_p90_s": 0.2, "max_frames": 2, "state_bytes": [1],
            "wall_s": 1.0}  # fmt: skip
    monkeypatch.setattr(gpu_check, "compare_processor", compare)
    monkeypatch.setattr(
        gpu_check,
        "run_one",
        lambda system, family, *args: {
            "system": system,
            "family": family,
            **good,
            **({"starts": {"served": 3}} if system in gpu_check.RESTART else {}),
            **(row or {}),
        },
    )
    monkeypatch.setattr(sys, "argv", [str(SCRIPT), "--cpu-dry-run", "--out", str(out)])
    code = gpu_check.main()
    return code, json.loads((out / "gpu-check.json").read_text())


def test_a_failed_comparison_fails_the_check_with_a_non_zero_exit(
    gpu_check: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Every comparison passing: exit 0, no failure recorded.
    code, results = _main(gpu_check, monkeypatch, tmp_path / "clean", [])
    assert (code, results["failures"]) == (0, []) and len(results["rows"]) == 10
    assert "CPU dry run passed" in capsys.readouterr().out
    # The resize comparison the VLM unit tests leave to this script fails: exit 1, recorded.
    resize = gpu_check.processor_failures("qwen3_vl", (2, 21, 28), (2, 21, 28), 0.5, (0.5,))
    code, results = _main(gpu_check, monkeypatch, tmp_path / "resize", resize)
    assert code == 1 and results["failures"] == resize
    out = capsys.readouterr().out
    assert "FAILED qwen3_vl processor: max |patch difference|" in out
    assert "CPU dry run FAILED (1 failures)" in out
    # A run's comparison (the model on another device) fails it the same way.
    code, results = _main(gpu_check, monkeypatch, tmp_path / "run", [], {"device": "cuda:0"})
    assert code == 1 and len(results["failures"]) == 10
    assert results["failures"][0].endswith("model loaded on 'cuda:0', not cpu")


def test_without_torchvision_the_resize_comparison_fails_where_it_is_required(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torchvision", None)  # `import torchvision` fails
    required, dry = gpu_check.Check(), gpu_check.Check()
    gpu_check.compare_processor({}, required, True)
    gpu_check.compare_processor({}, dry, False)
    assert [f.split(" (")[0] for f in required.failures] == ["processor comparison did not run"]
    assert dry.failures == []
