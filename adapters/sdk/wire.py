"""Conversions between generated protobuf types and the plain types in `types.py`.

This module and `apmbench.harness.protocol.client` are the only places that touch
generated code. The status-code mapping of the error hierarchy lives here.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator

import grpc

from apmbench.adapters.sdk import errors
from apmbench.adapters.sdk.types import (
    AnswerFormat,
    Capabilities,
    Choice,
    DialogueTurn,
    Frame,
    FrameEncoding,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    StateManifest,
    StreamItem,
    SystemInfo,
    UserTurn,
    UserTurnKind,
)
from apmbench.v1 import memory_system_pb2 as pb

DEFAULT_CHUNK_BYTES = 1 << 20
# Every message stays far below gRPC's 4 MiB default receive limit (rule R7).
MAX_CHUNK_BYTES = 2 << 20
_HEX64 = re.compile(r"[0-9a-f]{64}")

STATUS_BY_ERROR: dict[type[errors.ProtocolError], grpc.StatusCode] = {
    errors.InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    errors.FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    errors.Unimplemented: grpc.StatusCode.UNIMPLEMENTED,
    errors.DataLoss: grpc.StatusCode.DATA_LOSS,
    errors.ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
    errors.MethodFailure: grpc.StatusCode.INTERNAL,
    errors.DeadlineExceeded: grpc.StatusCode.DEADLINE_EXCEEDED,
    errors.Cancelled: grpc.StatusCode.CANCELLED,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
}
ERROR_BY_STATUS: dict[grpc.StatusCode, type[errors.ProtocolError]] = {
    code: cls for cls, code in STATUS_BY_ERROR.items()
}


def status_of(error: errors.ProtocolError) -> grpc.StatusCode:
    for cls in type(error).__mro__:
        if cls in STATUS_BY_ERROR:
            return STATUS_BY_ERROR[cls]
    return grpc.StatusCode.INTERNAL


def error_from_rpc(rpc: str, error: grpc.RpcError) -> errors.ProtocolError:
    """Translate a failed call into the hierarchy (the caller raises it `from` the original)."""
    # Failed calls are also grpc.Call objects; stubs cannot express that.
    code_of = getattr(error, "code", None)
    details_of = getattr(error, "details", None)
    code = code_of() if callable(code_of) else grpc.StatusCode.UNKNOWN
    details = details_of() if callable(details_of) else str(error)
    cls = ERROR_BY_STATUS.get(code, errors.MethodFailure)
    return cls(f"{code.name}: {details or 'no details'}", rpc=rpc)


_ENCODING_TO_PB = {
    FrameEncoding.JPEG: pb.FRAME_ENCODING_JPEG,
    FrameEncoding.RGB24: pb.FRAME_ENCODING_RGB24,
}
_ENCODING_FROM_PB = {v: k for k, v in _ENCODING_TO_PB.items()}
_TURN_TO_PB = {
    UserTurnKind.QUESTION: pb.USER_TURN_KIND_QUESTION,
    UserTurnKind.REGISTRATION: pb.USER_TURN_KIND_REGISTRATION,
    UserTurnKind.INTERVAL_MARKER: pb.USER_TURN_KIND_INTERVAL_MARKER,
}
_TURN_FROM_PB = {v: k for k, v in _TURN_TO_PB.items()}
_QUERY_TO_PB = {
    QueryKind.MULTIPLE_CHOICE: pb.QUERY_KIND_MULTIPLE_CHOICE,
    QueryKind.EVIDENCE_AVAILABILITY: pb.QUERY_KIND_EVIDENCE_AVAILABILITY,
    QueryKind.DECISION: pb.QUERY_KIND_DECISION,
}
_QUERY_FROM_PB = {v: k for k, v in _QUERY_TO_PB.items()}
_FORMAT_TO_PB = {
    AnswerFormat.OPTION: pb.ANSWER_FORMAT_OPTION,
    AnswerFormat.DECISION: pb.ANSWER_FORMAT_DECISION,
    AnswerFormat.DECISION_WITH_OPTION: pb.ANSWER_FORMAT_DECISION_WITH_OPTION,
}
_FORMAT_FROM_PB = {v: k for k, v in _FORMAT_TO_PB.items()}


# -- system description ------------------------------------------------------


def system_info_to_pb(info: SystemInfo, *, item_batches: bool | None = None) -> pb.SystemInfo:
    """`item_batches`: what the server declares for R13 (None: what `info` says)."""
    caps = info.capabilities
    return pb.SystemInfo(
        name=info.name,
        version=info.version,
        protocol_version=info.protocol_version,
        capabilities=pb.Capabilities(
            frame_encodings=[_ENCODING_TO_PB[e] for e in caps.frame_encodings],
            preferred_max_side=caps.preferred_max_side,
            supports_import=caps.supports_import,
            streaming_ingest=caps.streaming_ingest,
            accepts_item_batches=(
                caps.accepts_item_batches if item_batches is None else item_batches
            ),
            resumes_sessions=caps.resumes_sessions,
        ),
        details=dict(info.details),
    )


def system_info_from_pb(msg: pb.SystemInfo) -> SystemInfo:
    encodings = tuple(
        _ENCODING_FROM_PB[e] for e in msg.capabilities.frame_encodings if e in _ENCODING_FROM_PB
    )
    return SystemInfo(
        name=msg.name,
        version=msg.version,
        protocol_version=msg.protocol_version,
        capabilities=Capabilities(
            frame_encodings=encodings,
            preferred_max_side=msg.capabilities.preferred_max_side,
            supports_import=msg.capabilities.supports_import,
            streaming_ingest=msg.capabilities.streaming_ingest,
            accepts_item_batches=msg.capabilities.accepts_item_batches,
            resumes_sessions=msg.capabilities.resumes_sessions,
        ),
        details=dict(msg.details),
    )


# -- sessions -----------------------------------------------------------------


def session_start_to_pb(start: SessionStart) -> pb.StartSessionRequest:
    return pb.StartSessionRequest(
        trajectory_id=start.trajectory_id,
        session_id=start.session_id,
        day_id=start.day_id,
        time_ms=start.time_ms,
    )


def session_start_from_pb(msg: pb.StartSessionRequest) -> SessionStart:
    return SessionStart(msg.trajectory_id, msg.session_id, msg.day_id, msg.time_ms)


def session_end_to_pb(end: SessionEnd) -> pb.EndSessionRequest:
    return pb.EndSessionRequest(session_id=end.session_id, time_ms=end.time_ms)


def session_end_from_pb(msg: pb.EndSessionRequest) -> SessionEnd:
    return SessionEnd(msg.session_id, msg.time_ms)


# -- stream items -------------------------------------------------------------


def item_to_pb(item: StreamItem) -> pb.StreamItem:
    if isinstance(item, Frame):
        return pb.StreamItem(
            frame=pb.Frame(
                time_ms=item.time_ms,
                encoding=_ENCODING_TO_PB[item.encoding],
                width=item.width,
                height=item.height,
                data=item.data,
            )
        )
    return pb.StreamItem(
        user_turn=pb.UserTurn(time_ms=item.time_ms, kind=_TURN_TO_PB[item.kind], text=item.text)
    )


BATCH_BYTES = 1 << 20
"""Frame data per PushItemBatches message at most (R7, R13); a larger frame goes alone."""


def item_batches(
    items: Iterable[StreamItem], limit: int = BATCH_BYTES
) -> Iterator[pb.StreamItemBatch]:
    """The items, in order, packed into batches of at most `limit` bytes of frame data. Each
    item is written into its batch in place: building items apart and adding them copies
    each frame again (five times the CPU)."""
    batch: pb.StreamItemBatch | None = None
    size = 0
    for item in items:
        weight = len(item.data) if isinstance(item, Frame) else 0
        if batch is not None and size + weight > limit:
            yield batch
            batch = None
        if batch is None:
            batch, size = pb.StreamItemBatch(), 0
        msg = batch.items.add()
        if isinstance(item, Frame):
            frame = msg.frame
            frame.time_ms = item.time_ms
            frame.encoding = _ENCODING_TO_PB[item.encoding]
            frame.width = item.width
            frame.height = item.height
            frame.data = item.data
        else:
            turn = msg.user_turn
            turn.time_ms = item.time_ms
            turn.kind = _TURN_TO_PB[item.kind]
            turn.text = item.text
        size += weight
    if batch is not None:
        yield batch


def unbatched(batches: Iterable[pb.StreamItemBatch]) -> Iterator[pb.StreamItem]:
    for batch in batches:
        yield from batch.items


def item_from_pb(msg: pb.StreamItem) -> StreamItem:
    which = msg.WhichOneof("item")
    if which == "frame":
        f = msg.frame
        if f.encoding not in _ENCODING_FROM_PB:
            raise errors.InvalidArgument(
                f"frame at time_ms={f.time_ms} has no encoding: set FRAME_ENCODING_JPEG or _RGB24"
            )
        return Frame(f.time_ms, _ENCODING_FROM_PB[f.encoding], f.width, f.height, f.data)
    if which == "user_turn":
        t = msg.user_turn
        if t.kind not in _TURN_FROM_PB:
            raise errors.InvalidArgument(f"user turn at time_ms={t.time_ms} has no kind")
        return UserTurn(t.time_ms, _TURN_FROM_PB[t.kind], t.text)
    raise errors.InvalidArgument("stream item carries neither a frame nor a user turn")


# -- queries ------------------------------------------------------------------


def query_to_pb(query: Query) -> pb.QueryRequest:
    return pb.QueryRequest(
        query_id=query.query_id,
        time_ms=query.time_ms,
        kind=_QUERY_TO_PB[query.kind],
        system_prompt=query.system_prompt,
        prompt=query.prompt,
        question=query.question,
        choices=[pb.Choice(option_id=c.option_id, text=c.text) for c in query.choices],
        # Protocol 1.3: present exactly when there is an interval, so 0 (DAY1 00:00:00) is one.
        interval_start_ms=query.interval_start_ms,
        max_output_chars=query.max_output_chars,
        answer_format=(
            pb.ANSWER_FORMAT_UNSPECIFIED
            if query.answer_format is None
            else _FORMAT_TO_PB[query.answer_format]
        ),
        answer_schema=query.answer_schema,
        dialogue=[
            pb.DialogueTurn(prompt=t.prompt, question=t.question, answer=t.answer)
            for t in query.dialogue
        ],
    )


def query_from_pb(msg: pb.QueryRequest) -> Query:
    if msg.kind not in _QUERY_FROM_PB:
        raise errors.InvalidArgument(f"query {msg.query_id!r} has no kind")
    return Query(
        query_id=msg.query_id,
        time_ms=msg.time_ms,
        kind=_QUERY_FROM_PB[msg.kind],
        system_prompt=msg.system_prompt,
        prompt=msg.prompt,
        question=msg.question,
        choices=tuple(Choice(c.option_id, c.text) for c in msg.choices),
        # A 1.0-1.2 client sends no presence: 0 from it means no interval.
        interval_start_ms=(msg.interval_start_ms if msg.HasField("interval_start_ms") else None),
        max_output_chars=msg.max_output_chars,
        # A value from a later minor version reads as "not said": the prompt still says it.
        answer_format=_FORMAT_FROM_PB.get(msg.answer_format),
        answer_schema=msg.answer_schema,
        dialogue=tuple(DialogueTurn(t.prompt, t.question, t.answer) for t in msg.dialogue),
    )


# -- state transfer -----------------------------------------------------------


def manifest_for(data: bytes | memoryview, content_type: str, format_version: int) -> StateManifest:
    return StateManifest(
        total_bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        content_type=content_type,
        format_version=format_version,
    )


def chunk_size(requested: int) -> int:
    if requested <= 0:
        return DEFAULT_CHUNK_BYTES
    return min(requested, MAX_CHUNK_BYTES)


def state_chunks(
    manifest: StateManifest, data: Iterable[bytes | memoryview]
) -> Iterator[pb.StateChunk]:
    """The wire form of a state: the manifest first, then data chunks."""
    yield pb.StateChunk(
        manifest=pb.StateManifest(
            total_bytes=manifest.total_bytes,
            sha256=manifest.sha256,
            content_type=manifest.content_type,
            format_version=manifest.format_version,
        )
    )
    for piece in data:
        yield pb.StateChunk(data=bytes(piece))


def split(data: bytes | memoryview, size: int) -> Iterator[memoryview]:
    view = memoryview(data)
    for start in range(0, len(view), size):
        yield view[start : start + size]


def manifest_from_chunk(msg: pb.StateChunk) -> StateManifest:
    if msg.WhichOneof("chunk") != "manifest":
        raise errors.InvalidArgument("the first state chunk must carry the manifest")
    m = msg.manifest
    if _HEX64.fullmatch(m.sha256) is None:
        raise errors.InvalidArgument(
            f"state manifest sha256 {m.sha256[:80]!r} is not 64 lower-case hex digits"
        )
    return StateManifest(m.total_bytes, m.sha256, m.content_type, m.format_version)


def data_from_chunk(msg: pb.StateChunk) -> bytes:
    if msg.WhichOneof("chunk") != "data":
        raise errors.InvalidArgument("only the first state chunk may carry a manifest")
    if len(msg.data) > MAX_CHUNK_BYTES:
        raise errors.InvalidArgument(
            f"a state chunk of {len(msg.data)} bytes is over the {MAX_CHUNK_BYTES}-byte cap (R7)"
        )
    return msg.data


def check_received(manifest: StateManifest, received: int, digest: str) -> None:
    if received != manifest.total_bytes:
        raise errors.DataLoss(
            f"state manifest announced {manifest.total_bytes} bytes but {received} arrived"
        )
    if digest != manifest.sha256:
        raise errors.DataLoss(
            f"state sha256 mismatch: manifest {manifest.sha256}, received data {digest}"
        )
