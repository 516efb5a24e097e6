"""Test videos whose every frame shows its own index, to check which frame a producer sent.

The index is drawn as 16 large black/white blocks in the top half (robust to
H.264 and JPEG); the bottom half holds a gradient that changes at scene
cuts, so x264's scene-cut detection places key frames where the content says.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import numpy.typing as npt

WIDTH, HEIGHT = 192, 144
BITS = 16
_COLS, _ROWS = 8, 2
_BLOCK_W, _BLOCK_H = WIDTH // _COLS, (HEIGHT // 2) // _ROWS
_DARK, _LIGHT = 16, 235


def indexed_image(index: int, scene: int) -> npt.NDArray[np.uint8]:
    img = np.empty((HEIGHT, WIDTH, 3), dtype=np.uint8)
    for bit in range(BITS):
        r, c = divmod(bit, _COLS)
        value = _LIGHT if (index >> bit) & 1 else _DARK
        img[r * _BLOCK_H : (r + 1) * _BLOCK_H, c * _BLOCK_W : (c + 1) * _BLOCK_W] = value
    # Each scene is its own smooth gradient (noise would hide cuts from x264's
    # cost-based detector) that drifts slowly, so P/B frames stay cheap.
    rng = np.random.default_rng(scene)
    yy, xx = np.mgrid[0 : HEIGHT // 2, 0:WIDTH]
    ramp = xx * rng.uniform(0.5, 3.0) + yy * rng.uniform(0.5, 3.0) + 2 * index
    img[HEIGHT // 2 :] = ((ramp[..., None] + rng.integers(0, 256, size=3)) % 256).astype(np.uint8)
    return img


def read_index(rgb: npt.NDArray[np.uint8]) -> int:
    """The index drawn by `indexed_image`, from a decoded frame of any size."""
    height, width = rgb.shape[:2]
    bw, bh = width / _COLS, (height / 2) / _ROWS
    value = 0
    for bit in range(BITS):
        r, c = divmod(bit, _COLS)
        y0, y1 = int((r + 0.25) * bh), int((r + 0.75) * bh)
        x0, x1 = int((c + 0.25) * bw), int((c + 0.75) * bw)
        if rgb[y0:y1, x0:x1].mean() > 128:
            value |= 1 << bit
    return value


def write_indexed_video(
    path: Path,
    *,
    rate: Fraction | int,
    frames: int,
    forced_keys: Iterable[int] = (),
    scene_cuts: Iterable[int] = (),
    options: Mapping[str, str] | None = None,
) -> None:
    """H.264 in MP4: frame i shows i; `forced_keys` become key frames, `scene_cuts` new scenes."""
    keys = set(forced_keys)
    cuts = sorted(set(scene_cuts))
    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream("libx264", rate=rate)
        stream.width, stream.height = WIDTH, HEIGHT
        stream.pix_fmt = "yuv420p"
        stream.options = dict(
            options or {"g": "250", "sc_threshold": "40", "preset": "veryfast", "crf": "28"}
        )
        scene = 0
        for i in range(frames):
            while scene < len(cuts) and cuts[scene] <= i:
                scene += 1
            frame = av.VideoFrame.from_ndarray(indexed_image(i, scene), format="rgb24")
            frame.pts = i
            frame.time_base = Fraction(1) / Fraction(rate)
            if i in keys:
                frame.pict_type = av.video.frame.PictureType.I
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)


def key_times(path: Path) -> list[Fraction]:
    """Presentation times of the packets the container marks as key frames."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        assert stream.time_base is not None
        return sorted(
            p.pts * stream.time_base
            for p in container.demux(stream)
            if p.pts is not None and p.is_keyframe
        )


def decode_all(path: Path) -> list[tuple[Fraction, int]]:
    """(presentation time, drawn index) of every frame, by a plain full decode."""
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        assert stream.time_base is not None
        return [
            (
                f.pts * stream.time_base,
                read_index(np.asarray(f.to_ndarray(format="rgb24"), np.uint8)),
            )
            for f in container.decode(stream)
            if f.pts is not None
        ]
