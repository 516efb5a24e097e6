"""Plain Python types of the protocol, shared by method code and the harness.

Generated protobuf classes never reach method code: the SDK converts every
request into these dataclasses (see `wire.py`) and every answer back.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

PROTOCOL_VERSION = "1.0"


class FrameEncoding(enum.Enum):
    JPEG = "jpeg"
    RGB24 = "rgb24"


class UserTurnKind(enum.Enum):
    QUESTION = "question"
    REGISTRATION = "registration"
    INTERVAL_MARKER = "interval_marker"


class QueryKind(enum.Enum):
    MULTIPLE_CHOICE = "multiple_choice"
    EVIDENCE_AVAILABILITY = "evidence_availability"
    DECISION = "decision"


@dataclass(frozen=True)
class Capabilities:
    """What a system accepts; see the `Capabilities` message in the .proto."""

    frame_encodings: tuple[FrameEncoding, ...] = (FrameEncoding.JPEG,)
    preferred_max_side: int = 448
    supports_import: bool = True
    streaming_ingest: bool = True


@dataclass(frozen=True)
class SystemInfo:
    name: str
    version: str
    capabilities: Capabilities
    details: Mapping[str, str] = field(default_factory=dict)
    protocol_version: str = PROTOCOL_VERSION


@dataclass(frozen=True)
class SessionStart:
    trajectory_id: str
    session_id: str
    day_id: str
    time_ms: int


@dataclass(frozen=True)
class SessionEnd:
    session_id: str
    time_ms: int


@dataclass(frozen=True)
class Frame:
    """One video frame at `time_ms` on the trajectory clock.

    `data` is JPEG bytes or raw RGB24 bytes, as `encoding` says; `rgb()` gives
    the pixels as an (height, width, 3) uint8 array either way.
    """

    time_ms: int
    encoding: FrameEncoding
    width: int
    height: int
    data: bytes

    def rgb(self) -> npt.NDArray[np.uint8]:
        if self.encoding is FrameEncoding.RGB24:
            return np.frombuffer(self.data, dtype=np.uint8).reshape(self.height, self.width, 3)
        import simplejpeg

        pixels: npt.NDArray[np.uint8] = simplejpeg.decode_jpeg(self.data, colorspace="RGB")
        return pixels


@dataclass(frozen=True)
class UserTurn:
    time_ms: int
    kind: UserTurnKind
    text: str


StreamItem = Frame | UserTurn


@dataclass(frozen=True)
class Choice:
    option_id: str
    text: str


@dataclass(frozen=True)
class Query:
    """A question or probe at `time_ms`; see `QueryRequest` in the .proto."""

    query_id: str
    time_ms: int
    kind: QueryKind
    system_prompt: str
    prompt: str
    question: str = ""
    choices: tuple[Choice, ...] = ()
    interval_start_ms: int | None = None
    max_output_chars: int = 0


@dataclass(frozen=True)
class ExportedState:
    """The complete persistent memory of a system, as bytes it can re-import."""

    data: bytes
    content_type: str = "application/octet-stream"
    format_version: int = 1


@dataclass(frozen=True)
class StateManifest:
    total_bytes: int
    sha256: str
    content_type: str
    format_version: int
