"""Where the synthetic renderer puts things on a 448x336 frame; the reader reads the same places.

Text is white on dark panels, drawn with the 5x7 font at scale 2 (10x14
pixels per character, 12 pixels apart).
"""

from __future__ import annotations

from dataclasses import dataclass

WIDTH, HEIGHT = 448, 336
SCALE = 2
BACKGROUND = (28, 30, 34)
PANEL = (62, 64, 70)
SCREEN = (20, 60, 90)

TIME_ROW = (6, 6, 16)  # x, y, characters
PLACE_ROW = (6, 26, 16)
SCREEN_BOX = (262, 4, 442, 40)  # x0, y0, x1, y1
SCREEN_ROW = (268, 15, 14)
HAND_ROW = (6, 300, 20)

SLOTS = 4
SLOT_W, SLOT_H = 104, 236
SLOT_Y = 52
LABEL_CHARS = 8
ITEM_COLS, ITEM_ROWS = 4, 5
ITEM_CELL, ITEM_SIZE = 22, 16
MAX_ITEMS = ITEM_COLS * ITEM_ROWS


def slot_x(index: int) -> int:
    return 6 + index * 110


def label_row(index: int) -> tuple[int, int, int]:
    return slot_x(index) + 4, SLOT_Y + 6, LABEL_CHARS


def state_row(index: int) -> tuple[int, int, int]:
    return slot_x(index) + 4, SLOT_Y + 26, LABEL_CHARS


def item_cells(index: int) -> list[tuple[int, int]]:
    """Top-left corners of the item squares of a slot, in filling order."""
    x0, y0 = slot_x(index) + 8, SLOT_Y + 52
    return [
        (x0 + c * ITEM_CELL, y0 + r * ITEM_CELL) for r in range(ITEM_ROWS) for c in range(ITEM_COLS)
    ]


@dataclass(frozen=True)
class SlotView:
    label: str
    state: str
    count: int


@dataclass(frozen=True)
class Scene:
    """Everything one frame shows. Slots are left to right; empty slots have an empty label."""

    clock: str
    place: str
    screen: str
    slots: tuple[SlotView, ...]
    hand: str

    def slot_of(self, label: str) -> int | None:
        for i, s in enumerate(self.slots):
            if s.label == label:
                return i
        return None
