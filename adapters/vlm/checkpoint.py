"""A local Qwen-VL model directory, checked before torch is imported.

Reads only JSON, so a wrong path or a checkpoint of another family is
reported in a fraction of a second with what to fix, not after a long
import or a stack trace from deep inside transformers.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apmbench.adapters.vlm.settings import PREFIX, VlmConfigError
from apmbench.adapters.vlm.video import VisionGeometry


@dataclass(frozen=True)
class Family:
    model_type: str
    model_class: str
    """The transformers class that loads it."""
    timestamps: bool
    """Qwen3-VL: each temporal patch is preceded by its time as text ("<1.5 seconds>")."""
    seconds_per_grid: bool
    """Qwen2.5-VL: temporal rope positions are spaced by `second_per_grid_ts`."""
    since: str
    """The first transformers release with the class, for the error message."""


FAMILIES = {
    f.model_type: f
    for f in (
        Family("qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration", False, True, "4.49"),
        Family("qwen3_vl", "Qwen3VLForConditionalGeneration", True, False, "4.57"),
        Family("qwen3_vl_moe", "Qwen3VLMoeForConditionalGeneration", True, False, "4.57"),
    )
}
WEIGHTS = ("*.safetensors", "*.bin")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json")
# Searched in this order for the normalisation constants: the video processor's own first.
PREPROCESSOR_FILES = ("video_preprocessor_config.json", "preprocessor_config.json")


@dataclass(frozen=True)
class Checkpoint:
    path: Path
    family: Family
    geometry: VisionGeometry
    config: dict[str, object]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise VlmConfigError(f"{path}: cannot read it as JSON ({e})") from e
    if not isinstance(data, dict):
        raise VlmConfigError(f"{path}: expected a JSON object")
    return data


def inspect_checkpoint(path: Path) -> Checkpoint:
    """The family and vision geometry of the Qwen-VL checkpoint at `path`, or VlmConfigError."""
    where = f"{PREFIX}MODEL={path}"
    if not path.exists():
        raise VlmConfigError(
            f"{where}: no such directory. Put a Qwen-VL checkpoint in Hugging Face format there "
            "(e.g. `huggingface-cli download Qwen/Qwen2.5-VL-7B-Instruct --local-dir DIR` on a "
            "machine with network), or mount it into the container (--mount DIR:/models/vlm)"
        )
    if not path.is_dir():
        raise VlmConfigError(f"{where}: is a file; give the model's directory")
    if not (path / "config.json").is_file():
        raise VlmConfigError(
            f"{where}: not a Hugging Face model directory (no config.json); give the directory "
            "that holds config.json, the *.safetensors weights and the tokenizer files"
        )
    config = _read_json(path / "config.json")
    model_type = str(config.get("model_type", ""))
    family = FAMILIES.get(model_type)
    if family is None:
        known = ", ".join(sorted(FAMILIES))
        raise VlmConfigError(
            f"{where}: model_type {model_type!r} is not a Qwen-VL checkpoint this backend runs "
            f"({known}); for another model use {PREFIX}BACKEND=openai with a server that runs it"
        )
    if not any(next(path.glob(pattern), None) for pattern in WEIGHTS):
        raise VlmConfigError(
            f"{where}: no weights (*.safetensors or *.bin); the download is incomplete"
        )
    if not any((path / name).is_file() for name in TOKENIZER_FILES):
        raise VlmConfigError(f"{where}: no tokenizer files ({', '.join(TOKENIZER_FILES)})")
    return Checkpoint(path, family, _geometry(path, config), config)


def _geometry(path: Path, config: dict[str, object]) -> VisionGeometry:
    vision = config.get("vision_config")
    if not isinstance(vision, dict):
        raise VlmConfigError(f"{path / 'config.json'}: no vision_config; not a Qwen-VL checkpoint")
    preprocessor = next((path / n for n in PREPROCESSOR_FILES if (path / n).is_file()), None)
    if preprocessor is None:
        raise VlmConfigError(
            f"{PREFIX}MODEL={path}: no {' or '.join(PREPROCESSOR_FILES)}; copy it from the "
            "model's release (it holds the normalisation the vision encoder was trained with)"
        )
    pre = _read_json(preprocessor)
    try:
        geometry = VisionGeometry(
            patch_size=int(vision.get("patch_size", 14)),
            temporal_patch_size=int(vision.get("temporal_patch_size", 2)),
            merge_size=int(vision.get("spatial_merge_size", 2)),
            mean=_triple(pre["image_mean"]),
            std=_triple(pre["image_std"]),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise VlmConfigError(f"{preprocessor}: image_mean/image_std missing or malformed") from e
    for key, value in (
        ("patch_size", geometry.patch_size),
        ("temporal_patch_size", geometry.temporal_patch_size),
        ("merge_size", geometry.merge_size),
    ):
        # The model's config decides the shapes; a preprocessor that disagrees would feed
        # patches of the wrong size, so it is refused rather than followed.
        if key in pre and int(pre[key]) != value:
            raise VlmConfigError(
                f"{preprocessor}: {key}={pre[key]} disagrees with config.json's vision_config "
                f"({value}); the two files come from different checkpoints"
            )
    return geometry


def _triple(values: Any) -> tuple[float, float, float]:
    a, b, c = (float(v) for v in values)
    return (a, b, c)


_FULL_HASH_LIMIT = 16 << 20


def model_fingerprint(root: Path) -> str:
    """Content hash of a model directory: small files fully, weights by size and first/last MiB.

    Keys the reply cache, so a changed checkpoint under the same path never
    reuses replies of the old one; hashing whole multi-GB weights would take
    longer than judging.
    """
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(".") or "/." in rel:
            continue
        size = path.stat().st_size
        digest.update(f"{rel}\0{size}\0".encode())
        with path.open("rb") as f:
            if size <= _FULL_HASH_LIMIT:
                digest.update(f.read())
            else:
                digest.update(f.read(1 << 20))
                f.seek(size - (1 << 20))
                digest.update(f.read(1 << 20))
    return digest.hexdigest()
