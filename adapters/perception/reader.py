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
from apmbench.adapters.perception.font import GLYPH_H, GLYPH_W, advance, read_cell

Image = npt.NDArray[np.uint8]


def _to_layout_size(rgb: Image) -> Image:
    h, w = rgb.shape[:2]
    if (w, h) == (layout.WIDTH, layout.HEIGHT):
        return rgb
    rows = (np.arange(layout.HEIGHT) * h // layout.HEIGHT).clip(0, h - 1)
    cols = (np.arange(layout.WIDTH) * w // layout.WIDTH).clip(0, w - 1)
    resized: Image = rgb[rows][:, cols]
    return resized


def _text(luma: npt.NDArray[np.float32], row: tuple[int, int, int]) -> str:
    x, y, chars = row
    s = layout.SCALE
    height, width = GLYPH_H * s, GLYPH_W * s
    out = []
    for i in range(chars):
        left = x + i * advance(s)
        block = luma[y : y + height, left : left + width]
        cell = block.reshape(GLYPH_H, s, GLYPH_W, s).mean(axis=(1, 3)) > 128
        out.append(read_cell(cell))
    return "".join(out).strip()


def _count(rgb: Image, index: int) -> int:
    panel = np.array(layout.PANEL, dtype=np.int16)
    half = layout.ITEM_SIZE // 2
    count = 0
    for x, y in layout.item_cells(index):
        centre = rgb[y + half - 2 : y + half + 2, x + half - 2 : x + half + 2].astype(np.int16)
        if np.abs(centre.mean(axis=(0, 1)) - panel).sum() > 60:
            count += 1
    return count


def read_scene(rgb: Image) -> layout.Scene:
    rgb = _to_layout_size(rgb)
    luma = rgb.astype(np.float32) @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
    slots = []
    for i in range(layout.SLOTS):
        label = _text(luma, layout.label_row(i))
        if label:
            slots.append(layout.SlotView(label, _text(luma, layout.state_row(i)), _count(rgb, i)))
        else:
            slots.append(layout.SlotView("", "", 0))
    hand = _text(luma, layout.HAND_ROW)
    return layout.Scene(
        clock=_text(luma, layout.TIME_ROW),
        place=_text(luma, layout.PLACE_ROW),
        screen=_text(luma, layout.SCREEN_ROW),
        slots=tuple(slots),
        hand=hand.removeprefix("HAND").strip(),
    )
