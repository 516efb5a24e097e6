"""Qwen-VL video patches in numpy, against the rules and code of transformers' Qwen processors.

torchvision cannot be loaded beside the CPU torch here, so the processors
themselves cannot run. Their pure parts can: `smart_resize`, `patchify` and
Qwen3-VL's timestamps are taken from the installed transformers source (with
`ast`, without importing the module that needs torchvision) and compared
with ours on the same inputs. The resize filter (Pillow's bicubic for
torchvision's) is the one part compared only on a GPU host, by the GPU check.
"""

from __future__ import annotations

import ast
import importlib.util
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from apmbench.adapters.vlm.video import (
    MIN_TOKENS_PER_FRAME,
    VisionGeometry,
    frame_pixel_bound,
    patchify,
    prepare_clip,
    smart_resize,
)

QWEN25 = VisionGeometry(
    14, 2, 2, (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)
)
QWEN3 = VisionGeometry(16, 2, 2, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5))


def _transformers_function(module: str, name: str, cls: str | None = None) -> Callable[..., Any]:
    """A function of transformers' source, compiled alone (its module may need torchvision)."""
    spec = importlib.util.find_spec("transformers")
    if spec is None or spec.origin is None:
        pytest.skip("transformers is not installed (the models extra)")
    path = Path(spec.origin).parent / "models" / Path(*module.split(".")).with_suffix(".py")
    tree = ast.parse(path.read_text())
    scope: list[ast.stmt] = tree.body
    if cls is not None:
        scope = next(n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    node = next((n for n in scope if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if node is None:
        pytest.skip(f"{path} has no {name}: transformers changed its layout")
    node.decorator_list = []
    torch = pytest.importorskip("torch")
    namespace: dict[str, Any] = {"math": math, "torch": torch, "np": np}
    exec(compile(ast.Module([node], []), str(path), "exec"), namespace)
    return namespace[name]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "height,width", [(336, 448), (480, 640), (100, 3000), (20, 30), (1080, 1920), (720, 405)]
)
@pytest.mark.parametrize("max_pixels", [12544, 150528, 602112])
def test_smart_resize_is_qwen2_vls(height: int, width: int, max_pixels: int) -> None:
    theirs = _transformers_function("qwen2_vl.video_processing_qwen2_vl", "smart_resize")
    assert smart_resize(height, width, 28, 3136, max_pixels) == theirs(
        height, width, 28, 3136, max_pixels
    )


@pytest.mark.parametrize(
    "geometry,cls", [(QWEN25, "Qwen2VLVideoProcessor"), (QWEN3, "Qwen3VLVideoProcessor")]
)
def test_patch_layout_is_the_processors(geometry: VisionGeometry, cls: str) -> None:
    torch = pytest.importorskip("torch")
    module = (
        "qwen2_vl.video_processing_qwen2_vl"
        if cls.startswith("Qwen2")
        else "qwen3_vl.video_processing_qwen3_vl"
    )
    theirs = _transformers_function(module, "patchify", cls)
    f = geometry.factor
    video = np.random.default_rng(1).standard_normal((4, 3, 2 * f, 3 * f)).astype(np.float32)
    ours, grid = patchify(video, geometry)
    expected, *their_grid = theirs(
        None,
        torch.from_numpy(video)[None],
        geometry.patch_size,
        geometry.merge_size,
        geometry.temporal_patch_size,
    )
    assert grid == tuple(their_grid)
    np.testing.assert_array_equal(ours, expected[0].numpy())


def test_each_patch_row_holds_its_pixels_channel_time_row_column() -> None:
    g = QWEN25
    p, m, tp = g.patch_size, g.merge_size, g.temporal_patch_size
    video = np.arange(4 * 3 * 56 * 84, dtype=np.float32).reshape(4, 3, 56, 84)
    patches, (gt, gh, gw) = patchify(video, g)
    assert (gt, gh, gw) == (2, 4, 6) and patches.shape == (2 * 4 * 6, 3 * 2 * 14 * 14)
    row = 0
    for t in range(gt):
        for bh in range(gh // m):
            for bw in range(gw // m):
                for i in range(m):
                    for j in range(m):
                        y, x = (bh * m + i) * p, (bw * m + j) * p
                        block = video[t * tp : (t + 1) * tp, :, y : y + p, x : x + p]
                        np.testing.assert_array_equal(
                            patches[row], block.transpose(1, 0, 2, 3).reshape(-1)
                        )
                        row += 1


def test_prepare_clip_normalises_pads_time_and_keeps_aligned_sizes() -> None:
    frames = [np.full((336, 448, 3), v, dtype=np.uint8) for v in (0, 255, 128)]
    clip = prepare_clip(frames, [0.0, 1.0, 2.0], QWEN25, max_pixels=448 * 336)
    # 448x336 is already a multiple of 28: no resize; 3 frames pad to 4 with the last.
    assert clip.grid_thw == (2, 336 // 14, 448 // 14)
    assert clip.patches.shape == (2 * 24 * 32, 3 * 2 * 14 * 14)
    assert clip.group_seconds == (0.5, 2.0)
    assert clip.seconds_per_group == 2.0
    black_red = (0 - QWEN25.mean[0]) / QWEN25.std[0]  # frame 0, channel R, first pixel
    assert clip.patches[0, 0] == pytest.approx(black_red, abs=1e-6)
    assert clip.tokens(2) == 2 * 24 * 32 // 4 and clip.tokens_per_group(2) == 24 * 32 // 4


def test_qwen3_timestamps_are_the_processors() -> None:
    theirs = _transformers_function(
        "qwen3_vl.processing_qwen3_vl", "_calculate_timestamps", "Qwen3VLProcessor"
    )
    indices = [0, 3, 7, 12, 20]  # frames of a 1-FPS video, sampled unevenly
    frames = [np.zeros((64, 64, 3), dtype=np.uint8)] * len(indices)
    clip = prepare_clip(frames, [float(i) for i in indices], QWEN3, max_pixels=64 * 64)
    assert list(clip.group_seconds) == theirs(None, indices, 1.0, 2)


def test_resizing_shrinks_to_the_bound_and_never_below_the_floor() -> None:
    frames = [np.random.default_rng(0).integers(0, 255, (336, 448, 3), dtype=np.uint8)]
    small = prepare_clip(frames, [0.0], QWEN3, max_pixels=128 * 96)
    _, h, w = small.grid_thw
    assert h * 16 * w * 16 <= 128 * 96 and (h * 16) % 32 == 0 and (w * 16) % 32 == 0
    tiny = prepare_clip(frames, [0.0], QWEN3, max_pixels=1)
    assert tiny.tokens_per_group(2) >= 1


def test_the_token_budget_is_shared_evenly_between_frames() -> None:
    area = QWEN25.factor**2
    assert frame_pixel_bound([1024], QWEN25, 448 * 448, 100_000) == 100_000 * area // 512
    assert frame_pixel_bound([4], QWEN25, 448 * 448, 100_000) == 448 * 448
    assert frame_pixel_bound([10_000], QWEN25, 448 * 448, 100) == MIN_TOKENS_PER_FRAME * area
    assert frame_pixel_bound([], QWEN25, 448 * 448, 100) == 448 * 448
