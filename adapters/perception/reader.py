"""Reads a synthetic frame back into a `Scene`, from the pixels alone.

A reader specialised to the renderer's layout and font: it cuts the known
text rows into character cells, matches each cell to the nearest glyph, and
counts item squares by their colour against the panel. It survives JPEG
compression and resizing (frames are scaled back to the layout size first).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from apmbench.adapters.perception import layout
from apmbench.adapters.perception.font import GLYPH_H, GLYPH_W, advance, read_cells

Image = npt.NDArray[np.uint8]


def _to_layout_size(rgb: Image) -> Image:
    h, w = rgb.shape[:2]
    if (w, h) == (layout.WIDTH, layout.HEIGHT):
        return rgb
    rows = (np.arange(layout.HEIGHT) * h // layout.HEIGHT).clip(0, h - 1)
    cols = (np.arange(layout.WIDTH) * w // layout.WIDTH).clip(0, w - 1)
    resized: Image = rgb[rows][:, cols]
    return resized


_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _text(rgb: Image, row: tuple[int, int, int]) -> str:
    """All characters of a text row at once: cut cells, average each 2x2 block, match glyphs."""
    x, y, chars = row
    s = layout.SCALE
    step = advance(s)
    block = rgb[y : y + GLYPH_H * s, x : x + chars * step].astype(np.float32) @ _LUMA
    cells = block.reshape(GLYPH_H * s, chars, step)[:, :, : GLYPH_W * s]
    means = cells.reshape(GLYPH_H, s, chars, GLYPH_W, s).mean(axis=(1, 4))  # (7, chars, 5)
    binary = means.transpose(1, 0, 2).reshape(chars, GLYPH_H * GLYPH_W) > 128
    return read_cells(binary).strip()


def _count(rgb: Image, index: int) -> int:
    panel = np.array(layout.PANEL, dtype=np.float32)
    half = layout.ITEM_SIZE // 2
    corners = np.array(layout.item_cells(index))
    ys = corners[:, 1, None] + half + np.arange(-2, 2)
    xs = corners[:, 0, None] + half + np.arange(-2, 2)
    patches = rgb[ys[:, :, None], xs[:, None, :]].astype(np.float32)  # (cells, 4, 4, 3)
    distance = np.abs(patches.mean(axis=(1, 2)) - panel).sum(axis=1)
    return int(np.count_nonzero(distance > 60))


def read_scene(rgb: Image) -> layout.Scene:
    rgb = _to_layout_size(rgb)
    slots = []
    for i in range(layout.SLOTS):
        label = _text(rgb, layout.label_row(i))
        if label:
            slots.append(layout.SlotView(label, _text(rgb, layout.state_row(i)), _count(rgb, i)))
        else:
            slots.append(layout.SlotView("", "", 0))
    hand = _text(rgb, layout.HAND_ROW)
    return layout.Scene(
        clock=_text(rgb, layout.TIME_ROW),
        place=_text(rgb, layout.PLACE_ROW),
        screen=_text(rgb, layout.SCREEN_ROW),
        slots=tuple(slots),
        hand=hand.removeprefix("HAND").strip(),
    )
