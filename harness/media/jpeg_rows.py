"""JPEG frames coded row by row, so that a frame which differs from the previous one in a
few rows costs the encoding of those rows only.

Every JPEG frame the harness sends is baseline, 4:4:4, at the settings' quality, with a
restart marker after each MCU row (8 pixel rows). A restart marker resets the entropy
coder's DC prediction, so each MCU row is coded from its own pixels alone: the coded bytes
of a row are the same whichever image they were coded in. `RowCoder` keeps the previous
frame's rows and codes again only the span of rows whose pixels changed; the frame it
returns is byte for byte the frame a whole-image encoding gives (`encode` below; a test
compares the two on whole sessions). The synthetic benchmark's frames change in the clock
row only between two events, so a paper-scale dry run codes about a tenth of its pixels
instead of all of them (the JPEG encoding was the largest share of the harness's CPU).

Restart markers are part of baseline JPEG: every decoder reads them, and the decoded
pixels are those of the same image coded without them.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from PIL import Image

from apmbench.harness.media.patched import Patched, Rendered, pixels

MCU_ROWS = 8
"""Pixel rows per MCU row at 4:4:4 (no chroma subsampling)."""

_SOF0, _SOS, _EOI = 0xC0, 0xDA, b"\xff\xd9"
_RESTART = re.compile(rb"\xff[\xd0-\xd7]")
_MARKERS = tuple(bytes((0xFF, 0xD0 + k)) for k in range(8))


@dataclass(frozen=True)
class _Coded:
    """An image's JPEG split into its header (up to the scan data) and its MCU rows' bytes."""

    header: bytes
    sof_height_at: int
    rows: list[bytes]

    def header_for(self, height: int) -> bytes:
        """The header with another image height: the tables and everything else stay."""
        at = self.sof_height_at
        return self.header[:at] + height.to_bytes(2, "big") + self.header[at + 2 :]


def encode(rgb: npt.NDArray[np.uint8], quality: int) -> bytes:
    """The whole image as one JPEG with a restart marker after each MCU row."""
    out = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb), "RGB").save(
        out, "JPEG", quality=quality, subsampling=0, restart_marker_rows=1
    )
    return out.getvalue()


def _split(data: bytes) -> _Coded:
    position, sof_height_at = 2, -1
    while True:  # the segments before the scan: JFIF, tables, frame header, restart interval
        marker = data[position + 1]
        length = int.from_bytes(data[position + 2 : position + 4], "big")
        if marker == _SOF0:
            sof_height_at = position + 5  # after marker, length and sample precision
        position += 2 + length
        if marker == _SOS:
            break
    if sof_height_at < 0 or not data.endswith(_EOI):
        raise ValueError("not a baseline JPEG with one scan")
    return _Coded(data[:position], sof_height_at, _RESTART.split(data[position:-2]))


def _join(header: bytes, rows: list[bytes]) -> bytes:
    parts = [header]
    for k, row in enumerate(rows):
        if k:
            parts.append(_MARKERS[(k - 1) % 8])
        parts.append(row)
    parts.append(_EOI)
    return b"".join(parts)


def _changed_rows(
    previous: npt.NDArray[np.uint8], current: npt.NDArray[np.uint8], mcu_rows: int
) -> npt.NDArray[np.bool_]:
    """Which MCU rows differ. A whole MCU row is 8 x width x 3 bytes, a multiple of 8, so
    whole rows compare as 64-bit words (a quarter of the time of comparing bytes)."""
    a, b = previous.reshape(-1), current.reshape(-1)
    whole = previous.shape[0] // MCU_ROWS
    split = whole * (a.size // previous.shape[0]) * MCU_ROWS
    changed = np.ones(mcu_rows, dtype=np.bool_)
    if whole:
        words_a = a[:split].view(np.uint64).reshape(whole, -1)
        words_b = b[:split].view(np.uint64).reshape(whole, -1)
        changed[:whole] = np.not_equal(words_a, words_b).any(axis=1)
    if mcu_rows > whole:
        changed[whole] = not np.array_equal(a[split:], b[split:])
    return changed


MERGE_GAP = 2
"""Unchanged rows between two changed spans that are coded along rather than splitting the
span: each encoder call costs about as much as coding a few rows."""


def _spans(changed: npt.NDArray[np.bool_]) -> list[tuple[int, int]]:
    """The changed rows as (first, last) spans, nearby spans joined."""
    spans: list[tuple[int, int]] = []
    for row in np.flatnonzero(changed).tolist():
        if spans and row - spans[-1][1] <= MERGE_GAP + 1:
            spans[-1] = (spans[-1][0], row)
        else:
            spans.append((row, row))
    return spans


class RowCoder:
    """Codes a sequence of same-size frames, each from the rows that changed since the last.

    A frame is an RGB image, or a `Patched` one: when it shares its base with the frame
    before it, only its band can have changed, so only the band's rows are compared and
    coded, and the whole image is never assembled. One per stream of frames (a session);
    not shared between threads."""

    def __init__(self, quality: int) -> None:
        self.quality = quality
        self._previous: Rendered | None = None
        self._band: npt.NDArray[np.uint8] | None = None
        """The previous frame's band rows as whole MCU rows, when it was `Patched`."""
        self._coded: _Coded | None = None
        self.rows_coded = 0
        self.rows_total = 0
        self.bands = 0
        """Frames coded from their band alone (what a test counts)."""

    def encode(self, frame: Rendered) -> bytes:
        if isinstance(frame, Patched):
            return self._encode_patched(frame)
        rgb = np.ascontiguousarray(frame)
        # Kept to compare the next frame with: a caller writing into it afterwards would
        # make that comparison wrong, so such a write fails instead.
        rgb.flags.writeable = False
        mcu_rows = -(-rgb.shape[0] // MCU_ROWS)
        self.rows_total += mcu_rows
        previous, coded = self._previous, self._coded
        self._previous, self._band = rgb, None
        if previous is None or coded is None or previous.shape != rgb.shape:
            return self._whole(rgb, mcu_rows)
        spans = _spans(_changed_rows(pixels(previous), rgb, mcu_rows))
        if sum(last - first + 1 for first, last in spans) == mcu_rows:
            return self._whole(rgb, mcu_rows)
        return self._code_spans(rgb, 0, spans, coded) or self._whole(rgb, mcu_rows)

    def _encode_patched(self, frame: Patched) -> bytes:
        previous, band = self._previous, self._band
        same_base = (
            isinstance(previous, Patched)
            and previous.base is frame.base
            and previous.top == frame.top
            and previous.bottom == frame.bottom
            and band is not None
            and self._coded is not None
        )
        if not same_base:
            data = self.encode(frame.pixels())
            self._previous, self._band = frame, _mcu_band(frame)
            return data
        assert band is not None and self._coded is not None
        height = frame.shape[0]
        mcu_rows = -(-height // MCU_ROWS)
        self.rows_total += mcu_rows
        first_row = frame.top // MCU_ROWS
        current = _mcu_band(frame)
        changed = _changed_rows(band, current, -(-current.shape[0] // MCU_ROWS))
        spans = [(first + first_row, last + first_row) for first, last in _spans(changed)]
        self._previous, self._band = frame, current
        self.bands += 1
        spliced = self._code_spans(current, first_row, spans, self._coded)
        if spliced is None:
            whole = frame.pixels()
            whole.flags.writeable = False
            return self._whole(whole, mcu_rows)
        return spliced

    def _code_spans(
        self,
        pixels: npt.NDArray[np.uint8],
        first_row: int,
        spans: list[tuple[int, int]],
        coded: _Coded,
    ) -> bytes | None:
        """The frame with the MCU rows of `spans` coded again from `pixels`, whose first
        row is MCU row `first_row`; None if the encoder's output cannot be spliced."""
        rows = list(coded.rows)
        for first, last in spans:
            top = (first - first_row) * MCU_ROWS
            strip = pixels[top : top + (last - first + 1) * MCU_ROWS]
            part = _split(encode(strip, self.quality))
            if part.header != coded.header_for(strip.shape[0]) or len(part.rows) != len(
                range(first, last + 1)
            ):
                return None  # never expected (same encoder, same settings)
            rows[first : last + 1] = part.rows
            self.rows_coded += len(part.rows)
        self._coded = _Coded(coded.header, coded.sof_height_at, rows)
        return _join(coded.header, rows)

    def _whole(self, rgb: npt.NDArray[np.uint8], mcu_rows: int) -> bytes:
        data = encode(rgb, self.quality)
        coded = _split(data)
        if len(coded.rows) != mcu_rows:
            raise ValueError(f"the encoder wrote {len(coded.rows)} restart rows, not {mcu_rows}")
        self._coded = coded
        self.rows_coded += mcu_rows
        return data


def _mcu_band(frame: Patched) -> npt.NDArray[np.uint8]:
    """The whole MCU rows that hold `frame`'s band, with the band in them."""
    top = frame.top // MCU_ROWS * MCU_ROWS
    bottom = min(-(-frame.bottom // MCU_ROWS) * MCU_ROWS, frame.shape[0])
    band = frame.base[top:bottom].copy()
    band[frame.top - top : frame.bottom - top] = frame.rows
    return band
