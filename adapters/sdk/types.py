"""Plain Python types of the protocol, shared by method code and the harness.

Generated protobuf classes never reach method code: the SDK converts every
request into these dataclasses (see `wire.py`) and every answer back.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads on the first Frame.rgb(): a server need not pay for it at start
    import numpy as np
    import numpy.typing as npt

PROTOCOL_VERSION = "1.3"
"""What this SDK and harness speak; 1.0, 1.1 and 1.2 servers are still evaluated (R9)."""


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


class AnswerFormat(enum.Enum):
    """The JSON object an answer must be (rule R12, protocol 1.1); see `AnswerFormat` in
    the .proto and docs/PROTOCOL.md for each one's schema and examples."""

    OPTION = "option"
    DECISION = "decision"
    DECISION_WITH_OPTION = "decision_with_option"


@dataclass(frozen=True)
class Capabilities:
    """What a system accepts; see the `Capabilities` message in the .proto."""

    frame_encodings: tuple[FrameEncoding, ...] = (FrameEncoding.JPEG,)
    preferred_max_side: int = 448
    supports_import: bool = True
    streaming_ingest: bool = True
    accepts_item_batches: bool = False
    """Whether the server implements PushItemBatches (R13). The SDK's server declares it
    whatever a system sets here: it is a property of the server, not of the method."""
    resumes_sessions: bool = False
    """R14: the system's `export_state` while a session is open holds all it keeps of that
    session, and its `import_state` of such a state continues it (the SDK's server records
    and reopens the session itself). Declare it only when that holds."""


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
        import numpy as np

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
class DialogueTurn:
    """An earlier round of a query's dialogue: what was asked and the system's own answer."""

    prompt: str
    question: str
    answer: str


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
    answer_format: AnswerFormat | None = None
    """None when the client did not say (a protocol 1.0 harness): read the prompt."""
    answer_schema: str = ""
    """A JSON Schema of the answer object (protocol 1.1), "" when not given."""
    dialogue: tuple[DialogueTurn, ...] = ()
    """Earlier turns of this query's dialogue, oldest first (empty: a single-turn query)."""


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
