"""The server SDK: subclass `MemorySystem`, then `serve(system, address)`.

    from apmbench.adapters.sdk import MemorySystem, serve

Method code sees only the plain types re-exported here; generated protobuf
types stay inside the SDK.

Importing this package loads no gRPC, protobuf or numpy: `serve`,
`start_server` and `RunningServer` load the server module (and gRPC) on first
use, numpy loads on the first `Frame.rgb()`. So a method's own start-up and
tools that only need the types (a harness, a test) do not pay for them.
"""

from typing import TYPE_CHECKING, Any

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
from apmbench.adapters.sdk.system import MemorySystem
from apmbench.adapters.sdk.types import (
    PROTOCOL_VERSION,
    AnswerFormat,
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
    "AnswerFormat",
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

if TYPE_CHECKING:
    from apmbench.adapters.sdk.server import RunningServer, serve, start_server

_SERVER_NAMES = frozenset({"RunningServer", "serve", "start_server"})


def __getattr__(name: str) -> Any:
    if name in _SERVER_NAMES:
        from apmbench.adapters.sdk import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
