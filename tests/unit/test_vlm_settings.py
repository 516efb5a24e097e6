"""VLM settings from the environment and the model-directory checks: errors say what to fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apmbench.adapters.vlm.checkpoint import inspect_checkpoint
from apmbench.adapters.vlm.settings import VlmConfigError, VlmSettings


def test_defaults_follow_the_paper_and_read_from_the_environment() -> None:
    s = VlmSettings.from_env({"APMBENCH_VLM_MODEL": "/models/q", "APMBENCH_VLM_MAX_FRAMES": "64"})
    assert s.model == "/models/q" and s.max_frames == 64
    assert VlmSettings.from_env({"APMBENCH_VLM_MODEL": "/m"}).max_frames == 1024
    assert s.temperature == 0.0  # greedy unless asked
    assert s.record()["vlm.max_frames"] == "64"


def test_the_key_is_read_from_its_variable_and_never_recorded() -> None:
    env = {
        "APMBENCH_VLM_BACKEND": "openai",
        "APMBENCH_VLM_API_BASE": "http://127.0.0.1:9/v1",
        "APMBENCH_VLM_API_MODEL": "qwen",
        "MY_KEY": "sk-secret",
        "APMBENCH_VLM_API_KEY_ENV": "MY_KEY",
    }
    s = VlmSettings.from_env(env)
    assert s.api_key(env) == "sk-secret"
    assert "sk-secret" not in json.dumps(s.record())


@pytest.mark.parametrize(
    "env,names",
    [
        ({}, "APMBENCH_VLM_MODEL is not set"),
        (
            {"APMBENCH_VLM_MODEL": "/m", "APMBENCH_VLM_MAX_FRAMES": "many"},
            "APMBENCH_VLM_MAX_FRAMES='many'",
        ),
        ({"APMBENCH_VLM_MODEL": "/m", "APMBENCH_VLM_MAX_FRAMES": "0"}, "APMBENCH_VLM_MAX_FRAMES=0"),
        ({"APMBENCH_VLM_MODEL": "/m", "APMBENCH_VLM_DEVICE": "tpu"}, "APMBENCH_VLM_DEVICE='tpu'"),
        (
            {"APMBENCH_VLM_MODEL": "/m", "APMBENCH_VLM_TEMPERATURE": "-1"},
            "APMBENCH_VLM_TEMPERATURE",
        ),
        ({"APMBENCH_VLM_BACKEND": "tgi"}, "APMBENCH_VLM_BACKEND='tgi'"),
        ({"APMBENCH_VLM_BACKEND": "openai"}, "APMBENCH_VLM_API_BASE"),
    ],
)
def test_unusable_settings_name_the_variable(env: dict[str, str], names: str) -> None:
    with pytest.raises(VlmConfigError, match=names.replace("(", r"\(")):
        VlmSettings.from_env(env)


def _checkpoint(root: Path, model_type: str = "qwen2_5_vl") -> Path:
    root.mkdir()
    vision = {"patch_size": 14, "temporal_patch_size": 2, "spatial_merge_size": 2}
    (root / "config.json").write_text(
        json.dumps({"model_type": model_type, "vision_config": vision})
    )
    (root / "model.safetensors").write_bytes(b"weights")
    (root / "tokenizer.json").write_text("{}")
    pre = {"image_mean": [0.5] * 3, "image_std": [0.5] * 3, "patch_size": 14, "merge_size": 2}
    (root / "preprocessor_config.json").write_text(json.dumps(pre))
    return root


def test_a_complete_directory_gives_family_and_geometry(tmp_path: Path) -> None:
    checkpoint = inspect_checkpoint(_checkpoint(tmp_path / "q"))
    assert checkpoint.family.model_class == "Qwen2_5_VLForConditionalGeneration"
    assert checkpoint.geometry.factor == 28 and checkpoint.geometry.mean == (0.5, 0.5, 0.5)


@pytest.mark.parametrize(
    "breakage,message",
    [
        ("missing", "no such directory"),
        ("file", "is a file"),
        ("no-config", "no config.json"),
        ("llama", "model_type 'llama' is not a Qwen-VL checkpoint"),
        ("no-weights", "no weights"),
        ("no-tokenizer", "no tokenizer files"),
        ("no-preprocessor", "no video_preprocessor_config.json or preprocessor_config.json"),
        ("mismatch", "patch_size=16 disagrees with config.json"),
    ],
)
def test_a_broken_directory_is_refused_with_what_to_fix(
    tmp_path: Path, breakage: str, message: str
) -> None:
    root = tmp_path / "q"
    if breakage == "file":
        root.write_text("not a directory")
    elif breakage != "missing":
        _checkpoint(root, "llama" if breakage == "llama" else "qwen2_5_vl")
        removed = {
            "no-config": "config.json",
            "no-weights": "model.safetensors",
            "no-tokenizer": "tokenizer.json",
            "no-preprocessor": "preprocessor_config.json",
        }
        if breakage in removed:
            (root / removed[breakage]).unlink()
        if breakage == "mismatch":
            pre = json.loads((root / "preprocessor_config.json").read_text())
            (root / "preprocessor_config.json").write_text(json.dumps({**pre, "patch_size": 16}))
    with pytest.raises(VlmConfigError, match=message) as caught:
        inspect_checkpoint(root)
    assert "APMBENCH_VLM_MODEL" in str(caught.value) or "preprocessor_config.json" in str(
        caught.value
    )


def test_the_default_comparison_adds_the_vlm_systems_only_when_a_model_is_named() -> None:
    from apmbench.adapters.systems import REFERENCE_SYSTEMS, VLM_SYSTEMS, compared_systems

    assert compared_systems({}) == REFERENCE_SYSTEMS
    local = compared_systems({"APMBENCH_VLM_MODEL": "/models/q"})
    assert local == REFERENCE_SYSTEMS + VLM_SYSTEMS + ("kv-memory", "event-memory")
    assert compared_systems({"APMBENCH_VLM_API_BASE": "http://h/v1"})[-3:] == VLM_SYSTEMS
