"""Row-by-row JPEG coding: what `RowCoder` gives equals a whole-image encoding, byte for
byte, and codes again only the rows that changed."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg

from apmbench.harness.media import jpeg_rows
from apmbench.harness.media.jpeg_rows import RowCoder
from apmbench.harness.media.patched import Patched, Rendered, pixels
from apmbench.harness.suites.apmbench.synth import live

Image = npt.NDArray[np.uint8]


def session_frames(count: int) -> list[Image]:
    return [pixels(frame) for frame in rendered_frames(count)]


def rendered_frames(count: int) -> list[Rendered]:
    plan = live.trajectory_plan("paper", 0, 0)[0]
    spec = {
        "generator": live.GENERATOR,
        "version": live.GENERATOR_VERSION,
        "preset": "paper",
        "seed": 0,
        "trajectory": 0,
        "session": 0,
    }
    times = [plan.start_ms + 1000 * k for k in range(count)]
    return list(live.render_frames(spec, times))


def test_a_whole_session_codes_byte_for_byte_as_whole_images() -> None:
    frames = session_frames(600)
    coder = RowCoder(90)
    for rgb in frames:
        assert coder.encode(rgb) == jpeg_rows.encode(rgb, 90)
    # The synthetic frames change in the clock's rows between events: most rows are reused.
    assert coder.rows_coded < coder.rows_total / 4, (coder.rows_coded, coder.rows_total)


def test_patched_frames_code_byte_for_byte_as_whole_images() -> None:
    """The renderer's frames as they come (a shared base and the clock's band): most are
    coded from their band alone, and every one equals the whole image's encoding."""
    frames = rendered_frames(600)
    assert all(isinstance(f, Patched) for f in frames)
    coder = RowCoder(90)
    for frame in frames:
        assert coder.encode(frame) == jpeg_rows.encode(pixels(frame), 90)
    assert coder.bands > 500, coder.bands
    assert coder.rows_coded < coder.rows_total / 4, (coder.rows_coded, coder.rows_total)


def frozen(image: Image) -> Image:
    image.flags.writeable = False
    return image


@pytest.mark.parametrize("height", [336, 333, 13])
def test_bands_anywhere_code_as_whole_images(height: int) -> None:
    """Bands at the top, across MCU rows, at a partial last MCU row; the same base twice,
    a new base, whole images in between, and a band that does not change."""
    bases = [frozen(rng_image(height, 40, 1)), frozen(rng_image(height, 40, 2))]
    bands = [(0, 3), (5, 11), (height - 4, height), (height - 4, height), (2, 9)]
    coder = RowCoder(85)
    sequence: list[Rendered] = []
    for k, (top, bottom) in enumerate(bands):
        for base in (bases[0], bases[0], bases[1]):
            sequence.append(Patched(base, top, rng_image(bottom - top, 40, 10 + k)))
            sequence.append(Patched(base, top, sequence[-1].rows))  # type: ignore[union-attr]
        sequence.append(rng_image(height, 40, 30 + k))
    for frame in sequence:
        assert coder.encode(frame) == jpeg_rows.encode(pixels(frame), 85)
    assert coder.bands >= len(bands) * 3


def test_a_patched_frame_needs_a_read_only_base() -> None:
    with pytest.raises(ValueError, match="read-only"):
        Patched(rng_image(16, 16, 1), 0, rng_image(2, 16, 2))
    with pytest.raises(ValueError, match="outside"):
        Patched(frozen(rng_image(16, 16, 1)), 15, rng_image(2, 16, 2))


def rng_image(height: int, width: int, seed: int) -> Image:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


@pytest.mark.parametrize("height", [336, 333, 8, 5])
def test_changes_anywhere_code_as_whole_images(height: int) -> None:
    """Partial last MCU rows, single-row images, changes at the top, bottom and middle, and
    frames that do not change at all."""
    base = rng_image(height, 70, 1)
    coder = RowCoder(85)
    edits = [(0, 1), (height - 1, height), (height // 2, height // 2 + 3), (0, height), (0, 0)]
    for k, (y0, y1) in enumerate(edits):
        frame = base.copy()
        frame[y0:y1] = rng_image(y1 - y0, 70, 10 + k)
        assert coder.encode(frame) == jpeg_rows.encode(frame, 85)


def test_a_frame_of_another_size_starts_over() -> None:
    coder = RowCoder(90)
    for shape in [(48, 64), (48, 64), (40, 64), (40, 72)]:
        frame = rng_image(*shape, seed=shape[0] + shape[1])
        assert coder.encode(frame) == jpeg_rows.encode(frame, 90)


def test_the_frames_decode_to_the_image_any_decoder_sees() -> None:
    """Restart markers are baseline JPEG: a decoder that is not the encoder's reads the
    spliced frame, and sees the same pixels as in the whole-image encoding."""
    frames = session_frames(3)
    coder = RowCoder(90)
    for rgb in frames:
        data = coder.encode(rgb)
        decoded = simplejpeg.decode_jpeg(data, colorspace="RGB")
        assert decoded.shape == rgb.shape
        # q90 JPEG of drawn text: close to the source, not equal to it
        assert np.abs(decoded.astype(int) - rgb).mean() < 3


def test_a_frame_written_after_coding_fails_loudly() -> None:
    frame = rng_image(16, 16, 3)
    RowCoder(90).encode(frame)
    with pytest.raises(ValueError):
        frame[0, 0] = 0
