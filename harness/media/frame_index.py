"""Which packets of a video to decode so that every sampled frame is exact.

A sampled frame must be the last video frame at or before its sampling time.
Which frame that is, and whether it is a key frame, is known from the
container's packets alone (timestamps and key flags, no decoding). A group of
pictures (a key packet and the packets after it in decode order) is sent to
the decoder whole when one of its non-key frames is sampled, as its key packet
alone when only the key frame is, and not at all otherwise; an open GOP (one
with leading pictures) is never decoded after a gap. So the cheap key-frame
path is taken exactly where the index shows it yields the right frame,
whatever the GOP structure (fixed, scene cuts, open GOPs).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from av.container import InputContainer
    from av.video.stream import VideoStream


@dataclass(frozen=True)
class PacketIndex:
    """Timestamps and key flags of a video stream's packets, in decode order."""

    time_base: Fraction
    pts: npt.NDArray[np.int64]
    key: npt.NDArray[np.bool_]
    complete: bool
    """False when reading stopped early, after the last packet that can matter."""


@dataclass
class DecodeStats:
    """What one decode did; filled in by `decode_session` when given one."""

    packets: int = 0
    """Packets in the index (or read, without one)."""
    decoded: int = 0
    """Packets sent to the decoder."""
    key_only_gops: int = 0
    """Groups of pictures of which only the key packet was decoded."""
    full_gops: int = 0
    """Groups of pictures decoded whole."""
    indexed: bool = False
    """Whether the plan came from the packet index (False: every packet decoded)."""
    lost: int = 0
    """1 when the decoder never produced a frame the index names, and the samples
    from there on came from a decode of every packet instead."""


@dataclass(frozen=True)
class DecodePlan:
    """Per sample, the frame it must show; per packet, whether to decode it."""

    limits: list[int]
    """Per sample: the largest admissible pts (the sampling time in time-base units, floored)."""
    targets: list[int]
    """Per sample: the pts of the frame to send."""
    feed: npt.NDArray[np.bool_]
    """Per packet in decode order: send it to the decoder."""
    last_fed: int
    """Decode-order position of the last packet to send; reading can stop after it."""
    last_pts: int | None
    """The pts of the video's last frame; None when the index stopped before the end."""
    key_only_gops: int
    full_gops: int


def pts_limit(offset_ms: int, time_base: Fraction) -> int:
    """The largest pts at or before `offset_ms` after pts 0, exactly (no float rounding)."""
    return (offset_ms * time_base.denominator) // (1000 * time_base.numerator)


def read_index(
    container: InputContainer, stream: VideoStream, last_limit: int
) -> PacketIndex | None:
    """Demux `stream` (no decoding) up to the last packet that can matter for `last_limit`.

    None when the index cannot prove anything: a packet without a timestamp
    or no time base; the caller then decodes every packet.
    """
    if stream.time_base is None:
        return None
    pts = array("q")
    key = bytearray()
    past_keys = 0
    complete = True
    for packet in container.demux(stream):
        if packet.size == 0:
            continue  # the demuxer's end-of-stream marker
        if packet.pts is None:
            return None
        if packet.is_keyframe and packet.pts > last_limit:
            # The GOP of the first key frame past the last sample can still hold
            # leading pictures at or before it; GOPs after that cannot.
            past_keys += 1
            if past_keys == 2:
                complete = False
                break
        pts.append(packet.pts)
        key.append(1 if packet.is_keyframe else 0)
    if not pts:
        return None
    return PacketIndex(
        Fraction(stream.time_base),
        np.frombuffer(pts, dtype=np.int64).copy(),
        np.frombuffer(bytes(key), dtype=np.uint8).astype(np.bool_),
        complete,
    )


def plan(index: PacketIndex, limits: list[int]) -> DecodePlan | None:
    """The packets to decode so that sample k shows the last frame with pts <= limits[k].

    A sample before the first frame shows the first frame. None when the index
    cannot be trusted to name frames (repeated timestamps).
    """
    pts, key = index.pts, index.key
    order = np.argsort(pts, kind="stable")
    shown = pts[order]
    if shown.size > 1 and not bool(np.all(np.diff(shown) > 0)):
        return None
    at = np.maximum(np.searchsorted(shown, np.asarray(limits, dtype=np.int64), "right") - 1, 0)
    target_pos = order[at]
    targets = [int(p) for p in shown[at]]
    last_pts = int(shown[-1]) if index.complete else None

    n = pts.size
    positions = np.arange(n)
    if not bool(key[0]):
        # Frames before the first key packet decode only from the stream's start.
        feed = positions <= int(target_pos.max())
        return DecodePlan(limits, targets, feed, int(target_pos.max()), last_pts, 0, 0)
    gop = np.cumsum(key) - 1
    starts = np.flatnonzero(key)
    n_gops = starts.size
    full = np.zeros(n_gops, dtype=np.bool_)
    keyed = np.zeros(n_gops, dtype=np.bool_)
    is_key_target = key[target_pos]
    full[gop[target_pos[~is_key_target]]] = True
    keyed[gop[target_pos[is_key_target]]] = True
    # A GOP decoded for its own frames stops at its last target in decode
    # order: nothing after it is a reference for it.
    needed = np.full(n_gops, -1, dtype=np.int64)
    np.maximum.at(needed, gop[target_pos], target_pos)
    # A GOP with leading pictures (shown before its key frame) is open: they
    # may reference any frame of the previous GOP, and its key frame is no
    # fresh start for the decoder either (H.264 infers an open-GOP I frame's
    # order count from the frames before it; after a gap FFmpeg reorders or
    # drops it). So the GOP before an open GOP that is decoded at all is
    # decoded whole, and the decoder never sees a gap before an open GOP.
    leading = np.minimum.reduceat(pts, starts) < pts[starts]
    for g in range(n_gops - 1, 0, -1):
        if (full[g] or keyed[g]) and leading[g]:
            full[g - 1] = True
            needed[g - 1] = n
    feed = (full[gop] & (positions <= needed[gop])) | (key & keyed[gop])
    fed = np.flatnonzero(feed)
    return DecodePlan(
        limits,
        targets,
        feed,
        int(fed[-1]) if fed.size else -1,
        last_pts,
        int(np.count_nonzero(keyed & ~full)),
        int(np.count_nonzero(full)),
    )
