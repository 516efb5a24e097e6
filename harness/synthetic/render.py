"""Draws a `Scene` as a 448x336 RGB frame (the layout in apmbench.adapters.perception.layout)."""

from __future__ import annotations

import dataclasses
import functools
import hashlib

import numpy as np
import numpy.typing as npt

from apmbench.adapters.perception import layout
from apmbench.adapters.perception.font import GLYPH_H, GLYPH_W, advance, draw_text
from apmbench.harness.media.patched import Patched

Image = npt.NDArray[np.uint8]


@functools.cache
def colour_of(label: str) -> tuple[int, int, int]:
    """A stable, saturated colour per object name, far from the panel grey."""
    digest = hashlib.sha256(label.encode()).digest()
    hue = digest[0] / 255.0
    r, g, b = (abs((hue * 6 + k) % 6 - 3) - 1 for k in (0, 4, 2))
    return tuple(int(60 + 195 * min(1.0, max(0.0, c))) for c in (r, g, b))  # type: ignore[return-value]


def _fill(image: Image, x0: int, y0: int, x1: int, y1: int, colour: tuple[int, int, int]) -> None:
    image[y0:y1, x0:x1] = _pixel(colour)


@functools.cache
def _pixel(colour: tuple[int, int, int]) -> npt.NDArray[np.uint8]:
    return np.array(colour, dtype=np.uint8)


@functools.cache
def _blank() -> Image:
    """What every frame starts from; copying it beats filling each frame anew (the
    paper-scale synthetic run draws hundreds of thousands of frames)."""
    image = np.empty((layout.HEIGHT, layout.WIDTH, 3), dtype=np.uint8)
    image[:] = layout.BACKGROUND
    _fill(image, *layout.SCREEN_BOX, layout.SCREEN)
    image.flags.writeable = False
    return image


def render(scene: layout.Scene) -> Image:
    """The frame of `scene`: pixel for pixel what `draw` gives."""
    return render_patched(scene).pixels()


def render_patched(scene: layout.Scene) -> Patched:
    """The frame of `scene` as the rest of the scene with the clock's rows drawn anew.

    Between two events only the clock changes, so everything else is drawn once per
    distinct rest-of-scene and shared; the clock is drawn on a copy of its rows. The clock
    row overlaps no other element of the layout, so drawing it last lays down the same
    pixels as drawing it first (a test compares both on whole sessions); this halves a
    rendered frame's cost, and the JPEG coder codes those rows alone.
    """
    base = _without_clock(dataclasses.replace(scene, clock=""))
    top = layout.TIME_ROW[1]
    band = base[top : top + GLYPH_H * layout.SCALE].copy()
    _draw_clock(band, scene.clock, top)
    return Patched(base, top, band)


@functools.lru_cache(maxsize=256)
def _without_clock(scene: layout.Scene) -> Image:
    image = draw(scene)
    image.flags.writeable = False
    return image


def _draw_clock(image: Image, clock: str, top: int = 0) -> None:
    """The clock, character by character, as tiles, into `image` whose first row is the
    frame's row `top`: nothing but the blank frame lies under the clock row, so each
    (position, character) tile is drawn once and then copied, the same pixels as
    `draw_text` at a fraction of its cost (the clock is the one part of a frame drawn
    anew every frame: about a third of the paper-scale dry run's rendering)."""
    x, y = layout.TIME_ROW[0], layout.TIME_ROW[1] - top
    step = advance(layout.SCALE)
    for i, ch in enumerate(clock):
        tile = _clock_tile(i, ch)
        left = x + i * step
        image[y : y + tile.shape[0], left : left + tile.shape[1]] = tile


@functools.cache
def _clock_tile(position: int, ch: str) -> Image:
    x, y = layout.TIME_ROW[0] + position * advance(layout.SCALE), layout.TIME_ROW[1]
    canvas = _blank().copy()
    draw_text(canvas, x, y, ch, layout.SCALE)
    height, width = GLYPH_H * layout.SCALE, GLYPH_W * layout.SCALE
    tile = canvas[y : y + height, x : x + width].copy()
    tile.flags.writeable = False
    return tile


def draw(scene: layout.Scene) -> Image:
    """The reference drawing of `scene`, element by element (`render` is checked against it)."""
    image = _blank().copy()
    draw_text(image, layout.TIME_ROW[0], layout.TIME_ROW[1], scene.clock, layout.SCALE)
    draw_text(image, layout.PLACE_ROW[0], layout.PLACE_ROW[1], scene.place, layout.SCALE)
    draw_text(image, layout.SCREEN_ROW[0], layout.SCREEN_ROW[1], scene.screen, layout.SCALE)
    for i, slot in enumerate(scene.slots):
        if not slot.label:
            continue
        x = layout.slot_x(i)
        _fill(
            image, x, layout.SLOT_Y, x + layout.SLOT_W, layout.SLOT_Y + layout.SLOT_H, layout.PANEL
        )
        lx, ly, _ = layout.label_row(i)
        draw_text(image, lx, ly, slot.label, layout.SCALE)
        sx, sy, _ = layout.state_row(i)
        draw_text(image, sx, sy, slot.state, layout.SCALE, (255, 230, 120))
        colour = colour_of(slot.label)
        for cx, cy in layout.item_cells(i)[: slot.count]:
            _fill(image, cx, cy, cx + layout.ITEM_SIZE, cy + layout.ITEM_SIZE, colour)
    hand = f"HAND {scene.hand}" if scene.hand else "HAND"
    draw_text(image, layout.HAND_ROW[0], layout.HAND_ROW[1], hand, layout.SCALE, (180, 220, 255))
    return image
