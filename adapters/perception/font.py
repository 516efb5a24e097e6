"""A 5x7 bitmap font: the synthetic renderer draws with it and the reader matches against it.

Each glyph is seven rows of five bits. Text is drawn at an integer scale, so
a reader that knows the scale can cut the image into character cells and
match each cell to the nearest glyph.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy.typing as npt

ROWS: dict[str, tuple[str, ...]] = {
    "A": ("01110", "10001", "10001", "11111", "10001", "10001", "10001"),
    "B": ("11110", "10001", "10001", "11110", "10001", "10001", "11110"),
    "C": ("01110", "10001", "10000", "10000", "10000", "10001", "01110"),
    "D": ("11110", "10001", "10001", "10001", "10001", "10001", "11110"),
    "E": ("11111", "10000", "10000", "11110", "10000", "10000", "11111"),
    "F": ("11111", "10000", "10000", "11110", "10000", "10000", "10000"),
    "G": ("01110", "10001", "10000", "10111", "10001", "10001", "01111"),
    "H": ("10001", "10001", "10001", "11111", "10001", "10001", "10001"),
    "I": ("01110", "00100", "00100", "00100", "00100", "00100", "01110"),
    "J": ("00111", "00010", "00010", "00010", "00010", "10010", "01100"),
    "K": ("10001", "10010", "10100", "11000", "10100", "10010", "10001"),
    "L": ("10000", "10000", "10000", "10000", "10000", "10000", "11111"),
    "M": ("10001", "11011", "10101", "10101", "10001", "10001", "10001"),
    "N": ("10001", "10001", "11001", "10101", "10011", "10001", "10001"),
    "O": ("01110", "10001", "10001", "10001", "10001", "10001", "01110"),
    "P": ("11110", "10001", "10001", "11110", "10000", "10000", "10000"),
    "Q": ("01110", "10001", "10001", "10001", "10101", "10010", "01101"),
    "R": ("11110", "10001", "10001", "11110", "10100", "10010", "10001"),
    "S": ("01111", "10000", "10000", "01110", "00001", "00001", "11110"),
    "T": ("11111", "00100", "00100", "00100", "00100", "00100", "00100"),
    "U": ("10001", "10001", "10001", "10001", "10001", "10001", "01110"),
    "V": ("10001", "10001", "10001", "10001", "10001", "01010", "00100"),
    "W": ("10001", "10001", "10001", "10101", "10101", "10101", "01010"),
    "X": ("10001", "10001", "01010", "00100", "01010", "10001", "10001"),
    "Y": ("10001", "10001", "01010", "00100", "00100", "00100", "00100"),
    "Z": ("11111", "00001", "00010", "00100", "01000", "10000", "11111"),
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
    ":": ("00000", "01100", "01100", "00000", "01100", "01100", "00000"),
    "-": ("00000", "00000", "00000", "11111", "00000", "00000", "00000"),
    " ": ("00000",) * 7,
}

CHARSET = "".join(ROWS)
GLYPHS: dict[str, npt.NDArray[np.bool_]] = {
    ch: np.array([[c == "1" for c in row] for row in rows], dtype=bool) for ch, rows in ROWS.items()
}
GLYPH_W, GLYPH_H = 5, 7
_STACK = np.stack([GLYPHS[ch] for ch in CHARSET]).reshape(len(CHARSET), -1)


def advance(scale: int) -> int:
    """Horizontal distance between neighbouring characters, in pixels."""
    return (GLYPH_W + 1) * scale


@functools.cache
def _scaled(ch: str, scale: int) -> npt.NDArray[np.bool_]:
    # The paper-scale synthetic run draws millions of characters: scale each glyph once.
    big = np.kron(GLYPHS[ch], np.ones((scale, scale), dtype=bool))
    big.flags.writeable = False
    return big


def draw_text(
    image: npt.NDArray[np.uint8],
    x: int,
    y: int,
    text: str,
    scale: int,
    color: tuple[int, int, int] = (255, 255, 255),
) -> None:
    """Draw `text` (characters of CHARSET) with its top-left corner at (x, y)."""
    for i, ch in enumerate(text):
        if ch not in GLYPHS:
            raise ValueError(f"character {ch!r} is not in the font")
        big = _scaled(ch, scale)
        left = x + i * advance(scale)
        region = image[y : y + big.shape[0], left : left + big.shape[1]]
        region[big[: region.shape[0], : region.shape[1]]] = color


def read_cells(cells: npt.NDArray[np.bool_]) -> str:
    """The nearest glyph (Hamming distance) to each row of `cells`: binarised 7x5 cells, flat."""
    distances = np.count_nonzero(cells[:, None, :] != _STACK[None, :, :], axis=2)
    return "".join(CHARSET[i] for i in np.argmin(distances, axis=1))
