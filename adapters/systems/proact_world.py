"""What ProactEgoMem's synthetic clips draw, shared by the generator that draws it
(`apmbench.harness.suites.proactegomem.synth`) and the reference system that reads it
back from the pixels (`proact_rules`): one table, so the two cannot drift apart.

It lives here because the adapters never import the harness, while the harness may
import the adapters.

Every colour a detector looks for (devices lit, objects, panel headers) is at least 60
from every other colour drawn in quantity (Chebyshev distance; a test checks), so a
pixel reader with a tolerance of 40 never mistakes one for another.
"""

from __future__ import annotations

Colour = tuple[int, int, int]
# ST: device name -> its colour when on; off, it shows at a third of that.
PALETTE: dict[str, Colour] = {
    "tap": (40, 120, 240),
    "lamp": (250, 220, 40),
    "stove": (240, 60, 40),
    "fan": (50, 210, 90),
    "kettle": (200, 70, 220),
}
# LT: objects and the surfaces they are placed on.
OBJECTS: dict[str, Colour] = {
    "keys": (0, 255, 255),
    "wallet": (150, 0, 0),
    "phone": (0, 0, 140),
    "glasses": (255, 0, 150),
    "mug": (255, 140, 0),
}
SURFACES: dict[str, Colour] = {
    "table": (150, 100, 60),
    "shelf": (200, 200, 200),
    "counter": (90, 160, 150),
    "drawer": (100, 60, 120),
    "sofa": (60, 90, 40),
}
# IC: panels by their header colour; the card shows a number in a 5x7 font.
PANELS: dict[str, Colour] = {
    "receipt": (0, 150, 0),
    "timetable": (255, 255, 120),
    "label": (120, 0, 255),
    "poster": (0, 90, 180),
    "screen": (160, 255, 0),
}
HEADER_H, DIGIT_CELL, DIGIT_X, DIGIT_Y, DIGIT_PITCH = 20, 5, 27, 37, 35
"""The panel's header height; the font cell in pixels; the first digit's offset from the
panel's corner; the digit pitch."""
FONT = {
    "0": ("01110", "10001", "10011", "10101", "11001", "10001", "01110"),
    "1": ("00100", "01100", "00100", "00100", "00100", "00100", "01110"),
    "2": ("01110", "10001", "00001", "00010", "00100", "01000", "11111"),
    "3": ("11111", "00010", "00100", "00010", "00001", "10001", "01110"),
    "4": ("00010", "00110", "01010", "10010", "11111", "00010", "00010"),
    "5": ("11111", "10000", "11110", "00001", "00001", "10001", "01110"),
    "6": ("00110", "01000", "10000", "11110", "10001", "10001", "01110"),
    "7": ("11111", "00001", "00010", "00100", "01000", "01000", "01000"),
    "8": ("01110", "10001", "10001", "01110", "10001", "10001", "01110"),
    "9": ("01110", "10001", "10001", "01111", "00001", "00010", "01100"),
}
