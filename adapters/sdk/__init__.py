"""The server SDK: subclass `MemorySystem`, then `serve(system, address)`.

    from apmbench.adapters.sdk import MemorySystem, serve

Method code sees only the plain types re-exported here; generated protobuf
types stay inside the SDK.
"""

from apmbench.adapters.sdk.errors import (
    ApmbenchError,
    DataLoss,
    FailedPrecondition,
    InvalidArgument,
    MethodFailure,
    ProtocolError,
    ResourceExhausted,
    Unimplemented,
)
from apmbench.adapters.sdk.server import RunningServer, serve, start_server
from apmbench.adapters.sdk.system import MemorySystem
from apmbench.adapters.sdk.types import (
    PROTOCOL_VERSION,
    Capabilities,
    Choice,
    DialogueTurn,
    ExportedState,
    Frame,
    FrameEncoding,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    SystemInfo,
    UserTurn,
    UserTurnKind,
)

__all__ = [
    "PROTOCOL_VERSION",
    "ApmbenchError",
    "Capabilities",
    "Choice",
    "DataLoss",
    "DialogueTurn",
    "ExportedState",
    "FailedPrecondition",
    "Frame",
    "FrameEncoding",
    "InvalidArgument",
    "MemorySystem",
    "MethodFailure",
    "ProtocolError",
    "Query",
    "QueryKind",
    "ResourceExhausted",
    "RunningServer",
    "SessionEnd",
    "SessionStart",
    "SystemInfo",
    "Unimplemented",
    "UserTurn",
    "UserTurnKind",
    "serve",
    "start_server",
]
