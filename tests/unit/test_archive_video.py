"""The raw-video reference systems store video (issue 11, item 9).

APM-Bench (arXiv 2609.37559) section 4.1: "Raw Video as Memory stores all
prior-session videos and replays them at query time" (B.4: 2,316.01 MiB mean
trajectory peak). `frame-archive` and `vlm-video-memory` share one memory; its
export must be a video any decoder reads, holding exactly the frames received.
"""

from __future__ import annotations

import io

import av
import numpy as np
import simplejpeg

from apmbench.adapters.sdk import Frame, FrameEncoding, SessionEnd, SessionStart, UserTurn
from apmbench.adapters.sdk.types import UserTurnKind
from apmbench.adapters.systems.frame_archive import FrameArchive

W, H = 448, 336


def image(i: int) -> np.ndarray:
    img = np.zeros((H, W, 3), np.uint8)
    img[:, : 40 + 30 * i] = (200, 30 * i, 90)
    return img


def jpeg(t: int, i: int) -> Frame:
    return Frame(t, FrameEncoding.JPEG, W, H, simplejpeg.encode_jpeg(image(i), colorspace="RGB"))


def rgb(t: int, i: int) -> Frame:
    return Frame(t, FrameEncoding.RGB24, W, H, image(i).tobytes())


def fill(system: FrameArchive) -> list[Frame]:
    sent = []
    system.reset("T")
    for s, (day, base) in enumerate((("DAY1", 0), ("DAY2", 86_400_000))):
        system.start_session(SessionStart("T", f"S{s}", day, base))
        if s == 0:
            system.ingest_user_turn(UserTurn(base + 500, UserTurnKind.REGISTRATION, "remind me"))
        for k in range(3):
            frame = (jpeg if k % 2 == 0 else rgb)(base + 1000 * k, 3 * s + k)
            system.ingest_frame(frame)
            sent.append(frame)
        system.end_session(SessionEnd(f"S{s}", base + 3000))
    return sent


def test_the_export_is_a_video_of_the_received_frames() -> None:
    system = FrameArchive()
    sent = fill(system)
    state = system.export_state()
    assert state.content_type == "video/x-matroska"
    with av.open(io.BytesIO(state.data), "r") as container:
        stream = container.streams.video[0]
        assert stream.codec_context.name == "mjpeg"
        packets = [p for p in container.demux(stream) if p.size]
        assert [int((p.pts or 0) * (p.time_base or 0) * 1000) for p in packets] == [
            f.time_ms for f in sent
        ]
        # JPEG frames are stored exactly as received, not re-encoded.
        assert [
            bytes(p) for p, f in zip(packets, sent, strict=True) if f.encoding.value == "jpeg"
        ] == [f.data for f in sent if f.encoding is FrameEncoding.JPEG]
    with av.open(io.BytesIO(state.data), "r") as container:
        decoded = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(decoded) == len(sent) and decoded[0].shape == (H, W, 3)
    # RGB24 frames were JPEG-encoded once: the archive is far below raw size.
    assert len(state.data) < sum(W * H * 3 for f in sent if f.encoding is FrameEncoding.RGB24)
    for got, f in zip(decoded, sent, strict=True):
        assert np.abs(got.astype(int) - f.rgb().astype(int)).mean() < 8


def test_import_gives_back_the_same_memory_and_the_same_bytes() -> None:
    first = FrameArchive()
    fill(first)
    state = first.export_state()
    second = FrameArchive()
    second.import_state(state)
    assert second.frames == first.frames
    assert second.registrations == [(0, "remind me")]
    assert second.session_index == first.session_index
    assert second.export_state().data == state.data  # byte-identical for the same memory
