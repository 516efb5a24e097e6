"""The contract a method author implements: one small abstract class.

Lifecycle, as the harness drives it (rules R1-R9 of memory_system.proto):

    describe()                       any time
    reset(trajectory_id)             a new trajectory: forget everything
    start_session(SessionStart)
        ingest_frame(Frame) / ingest_user_turn(UserTurn)   in time order
        query(Query) -> Iterator[str]                       read-only
    end_session(SessionEnd)          finish the session's memory
    export_state() -> ExportedState  the complete persistent memory
    import_state(ExportedState)      replace the memory (if supported)

The SDK enforces order and time before any of these is called: method code
never sees a push outside a session, a time going backwards, an undeclared
frame encoding, or an import it did not declare support for. Calls never
overlap: the SDK serialises them.

Any method may raise a subclass of `apmbench.adapters.sdk.errors.ProtocolError`
to answer with that status code (e.g. `ResourceExhausted`); any other
exception is reported as INTERNAL with its message.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator

from apmbench.adapters.sdk import errors
from apmbench.adapters.sdk.types import (
    ExportedState,
    Frame,
    Query,
    SessionEnd,
    SessionStart,
    SystemInfo,
    UserTurn,
)


class MemorySystem(ABC):
    """Base class of every memory system served over the protocol."""

    @abstractmethod
    def describe(self) -> SystemInfo:
        """Name, version and capabilities. Must not change while serving."""

    @abstractmethod
    def reset(self, trajectory_id: str) -> None:
        """Forget everything; the next call starts a new trajectory."""

    @abstractmethod
    def start_session(self, start: SessionStart) -> None:
        """A session begins. Times are ms on the trajectory clock."""

    @abstractmethod
    def ingest_frame(self, frame: Frame) -> None:
        """Update memory with one frame; return when it is ingested (R4)."""

    @abstractmethod
    def ingest_user_turn(self, turn: UserTurn) -> None:
        """Take the user's words (a question, a registration, an interval marker)."""

    @abstractmethod
    def end_session(self, end: SessionEnd) -> None:
        """The session is over: finish its contribution to persistent memory."""

    @abstractmethod
    def query(self, query: Query) -> Iterator[str]:
        """Yield the answer text in pieces as it is produced. Must not change memory (R5)."""

    @abstractmethod
    def export_state(self) -> ExportedState:
        """The complete persistent memory, byte-identical for the same memory (R6)."""

    def import_state(self, state: ExportedState) -> None:
        """Replace the memory with `state`. Only called when capabilities say so."""
        raise errors.Unimplemented(f"{type(self).__name__} does not implement import_state")
