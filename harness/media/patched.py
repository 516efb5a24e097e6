"""A rendered frame given as a shared base image with one band of rows replaced.

The synthetic renderers draw everything but the clock once per scene; between two
events a frame differs from the one before it in the clock's rows only. A renderer may
say so by yielding a `Patched` instead of a whole image: the JPEG row coder then codes
the band alone without copying or comparing the whole frame (see `jpeg_rows`), about a
tenth of a synthetic frame's CPU (`make bench`, section `frames`, `synthetic_band`:
305 -> 274 us per paper frame, rendered and coded; what is left is mostly libjpeg's and
Pillow's cost per call). Everything else takes `pixels(frame)`, the same image a
whole-frame renderer would have given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

Image: TypeAlias = npt.NDArray[np.uint8]


@dataclass(frozen=True, eq=False)
class Patched:
    """`base` (read-only, shared by consecutive frames of a scene) with its rows from `top`
    on replaced by `rows` (as many rows as `rows` has, the full width)."""

    base: Image
    top: int
    rows: Image

    def __post_init__(self) -> None:
        if self.base.flags.writeable:
            raise ValueError("a Patched frame's base must be read-only: frames share it")
        height = self.base.shape[0]
        if not (self.top >= 0 and self.top + self.rows.shape[0] <= height):
            raise ValueError(
                f"rows {self.top}..{self.top + self.rows.shape[0]} lie outside a {height}-row image"
            )
        if self.rows.shape[1:] != self.base.shape[1:]:
            raise ValueError(f"a band of shape {self.rows.shape} does not fit {self.base.shape}")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.base.shape)

    @property
    def bottom(self) -> int:
        return self.top + int(self.rows.shape[0])

    def pixels(self) -> Image:
        image = self.base.copy()
        image[self.top : self.bottom] = self.rows
        return image


Rendered: TypeAlias = Image | Patched
"""What a renderer yields per frame."""


def pixels(frame: Rendered) -> Image:
    """The whole image of a rendered frame."""
    return frame.pixels() if isinstance(frame, Patched) else frame
