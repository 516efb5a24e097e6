"""Qwen-VL video input prepared in numpy, as the Qwen video processors prepare it.

transformers' Qwen video processors need torchvision, which has no CPU build
beside the pinned CPU torch; the steps are simple, so they are done here with
numpy and Pillow, on every device alike:

1. size: Qwen's `smart_resize` (sides multiples of patch x merge, pixels
   within bounds), with the per-frame bound of qwen-vl-utils: the smaller of
   `max_pixels` and an even share of the prompt's visual-token budget, floored;
2. resize with Pillow's bicubic filter (the reference resizes with
   torchvision's antialiased bicubic, which follows Pillow's filter; values can
   differ by rounding), then rescale to [0, 1] and normalise with the
   checkpoint's mean and std;
3. pad the frame count to a multiple of the temporal patch by repeating the
   last frame, and cut into patches in the processor's exact order
   (`patchify` of Qwen2VLVideoProcessor / Qwen3VLVideoProcessor).

`tests/unit/test_vlm_video.py` checks the layout against a direct per-patch
construction, and the GPU check compares it with transformers' own processor
where torchvision is installed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

# Below this many visual tokens per temporal patch a frame shows next to nothing.
MIN_TOKENS_PER_FRAME = 4


@dataclass(frozen=True)
class VisionGeometry:
    """What the vision encoder expects: from the checkpoint's configs."""

    patch_size: int
    temporal_patch_size: int
    merge_size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]

    @property
    def factor(self) -> int:
        """Pixels per side of one visual token (one merged patch)."""
        return self.patch_size * self.merge_size


@dataclass(frozen=True)
class PreparedClip:
    patches: npt.NDArray[np.float32]
    """(grid_t * grid_h * grid_w, 3 * temporal_patch * patch * patch)"""
    grid_thw: tuple[int, int, int]
    group_seconds: tuple[float, ...]
    """Per temporal patch: the mean time of its first and last frame (Qwen3-VL's timestamps)."""
    seconds_per_group: float
    """Seconds one temporal patch spans (Qwen2.5-VL's second_per_grid_ts)."""

    def tokens(self, merge_size: int) -> int:
        t, h, w = self.grid_thw
        return t * h * w // (merge_size * merge_size)

    def tokens_per_group(self, merge_size: int) -> int:
        _, h, w = self.grid_thw
        return h * w // (merge_size * merge_size)


def smart_resize(
    height: int, width: int, factor: int, min_pixels: int, max_pixels: int
) -> tuple[int, int]:
    """Qwen2-VL's rule: both sides multiples of `factor`, pixels within bounds, aspect kept."""
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio {width}x{height} is beyond Qwen-VL's limit of 200")
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def frame_pixel_bound(
    frame_counts: Sequence[int], geometry: VisionGeometry, max_pixels: int, max_video_tokens: int
) -> int:
    """Per-frame pixel bound for a prompt with clips of these lengths.

    Each temporal patch of every clip gets an even share of `max_video_tokens`;
    a frame never exceeds `max_pixels` nor falls below `MIN_TOKENS_PER_FRAME`.
    """
    groups = sum(math.ceil(n / geometry.temporal_patch_size) for n in frame_counts if n)
    area = geometry.factor * geometry.factor
    floor = MIN_TOKENS_PER_FRAME * area
    if groups == 0:
        return max(max_pixels, floor)
    share = max_video_tokens * area // groups
    return max(min(max_pixels, share), floor)


def prepare_clip(
    frames: Sequence[npt.NDArray[np.uint8]],
    seconds: Sequence[float],
    geometry: VisionGeometry,
    max_pixels: int,
) -> PreparedClip:
    """Patches of one clip of (H, W, 3) uint8 frames taken at `seconds`."""
    if not frames:
        raise ValueError("a clip needs at least one frame")
    height, width = frames[0].shape[:2]
    floor = MIN_TOKENS_PER_FRAME * geometry.factor * geometry.factor
    size = smart_resize(height, width, geometry.factor, min(floor, max_pixels), max_pixels)
    pixels = np.stack([_resize(f, size) for f in frames]).astype(np.float32)  # (T, H, W, 3)
    pixels *= np.float32(1 / 255)
    pixels -= np.asarray(geometry.mean, dtype=np.float32)
    pixels /= np.asarray(geometry.std, dtype=np.float32)
    video = pixels.transpose(0, 3, 1, 2)  # (T, C, H, W), as the processor holds it
    times = list(seconds)
    if pad := -len(frames) % geometry.temporal_patch_size:
        video = np.concatenate([video, np.repeat(video[-1:], pad, axis=0)])
        times += [times[-1]] * pad
    patches, grid = patchify(video, geometry)
    tp = geometry.temporal_patch_size
    groups = tuple((times[i] + times[i + tp - 1]) / 2 for i in range(0, len(times), tp))
    span = (seconds[-1] - seconds[0]) / (len(seconds) - 1) if len(seconds) > 1 else 1.0
    return PreparedClip(patches, grid, groups, tp * span)


def patchify(
    video: npt.NDArray[np.float32], geometry: VisionGeometry
) -> tuple[npt.NDArray[np.float32], tuple[int, int, int]]:
    """(T, C, H, W) -> (grid_t * grid_h * grid_w, C * tp * p * p) in the processor's order:
    temporal patch, then merge blocks row by row, then the patches inside a block; each row
    holds channel, time, then the patch's pixels."""
    t, c, h, w = video.shape
    p, m, tp = geometry.patch_size, geometry.merge_size, geometry.temporal_patch_size
    gt, gh, gw = t // tp, h // p, w // p
    x = video.reshape(gt, tp, c, gh // m, m, p, gw // m, m, p)
    x = x.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return np.ascontiguousarray(x.reshape(gt * gh * gw, c * tp * p * p)), (gt, gh, gw)


def _resize(frame: npt.NDArray[np.uint8], size: tuple[int, int]) -> npt.NDArray[np.uint8]:
    height, width = size
    if frame.shape[0] == height and frame.shape[1] == width:
        return frame
    from PIL import Image

    image = Image.fromarray(frame).resize((width, height), Image.Resampling.BICUBIC)
    return np.asarray(image, dtype=np.uint8)
