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

from apmbench.adapters.perception.font import ROWS

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
FONT = {digit: ROWS[digit] for digit in "0123456789"}
"""The digits of the perception font (5x7 cells), which the panel draws and reads."""
