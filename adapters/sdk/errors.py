"""The one error hierarchy of apmbench-grpc.

Every error the project raises derives from `ApmbenchError`. Protocol errors
(`ProtocolError` and its subclasses) travel over gRPC as status codes: the SDK
turns them into statuses and the harness client turns statuses back into the
same classes, so both sides speak one vocabulary. The mapping to status codes
lives in one place, `apmbench.adapters.sdk.wire.STATUS_BY_ERROR`.

Method code may raise any `ProtocolError` subclass itself; any other exception
escaping method code becomes INTERNAL (`MethodFailure`).
"""

from __future__ import annotations


class ApmbenchError(Exception):
    """Root of every error raised by apmbench-grpc."""


class ProtocolError(ApmbenchError):
    """A call broke a rule of the protocol or could not be served.

    `rpc` names the call when the error was seen by the client.
    """

    def __init__(self, message: str, *, rpc: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.rpc = rpc

    def __str__(self) -> str:
        return f"{self.rpc}: {self.message}" if self.rpc else self.message


class InvalidArgument(ProtocolError):
    """Malformed request: time going backwards, undeclared frame encoding, bad ids."""


class FailedPrecondition(ProtocolError):
    """The call is out of lifecycle order (e.g. a push outside a session)."""


class Unimplemented(ProtocolError):
    """The system does not offer this call (e.g. ImportState without support)."""


class DataLoss(ProtocolError):
    """Transferred state does not match its manifest (length or sha256)."""


class ResourceExhausted(ProtocolError):
    """The method ran out of memory or another resource."""


class MethodFailure(ProtocolError):
    """The method failed in a way it did not anticipate (INTERNAL)."""


class DeadlineExceeded(ProtocolError):
    """The call did not finish before its deadline."""


class Cancelled(ProtocolError):
    """The call was cancelled."""


class Unavailable(ProtocolError):
    """The server cannot be reached or went away."""
