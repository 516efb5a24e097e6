"""The rules of memory_system.proto that every reply from a server must keep, as pure tests.

The harness client applies them to every call, so `evaluate` refuses a
server that breaks one exactly as `check` does; `check` gets the same refusal
through the same client. Each function returns None when the rule is kept,
else what was seen; `violation` turns that into the error that names the rule.
Rule ids and titles are those of `apmbench.harness.check.rules.RULES`.
"""

from __future__ import annotations

import re

from apmbench.harness.errors import WireRuleError

DEFAULT_CHUNK_BYTES = 1 << 20
"""What `max_chunk_bytes` = 0 asks for (R7)."""
MAX_CHUNK_BYTES = 2 << 20
"""The cap on any state chunk, whatever `max_chunk_bytes` asks for (R7)."""

TITLES = {
    "R7": "Chunking",
    "STATUS": "Status codes",
    "MANIFEST": "State manifest",
    "STATE-STREAM": "State stream shape",
    "R16": "State label",
}
HINTS = {
    "R7": "split the state into chunks of at most max_chunk_bytes (0 means 1 MiB); "
    "the SDK's serve() does",
    "STATUS": "answer only with the status codes memory_system.proto lists for this call; "
    "the SDK maps its errors to them",
    "MANIFEST": "send total_bytes and the lower-case hex sha256 of exactly the data that follows",
    "STATE-STREAM": "send the manifest alone first, then only data chunks (the SDK does)",
    "R16": "give every export of a trajectory the same content_type, a MIME type of at most "
    "64 characters without parameters (e.g. application/x-my-memory), and the same "
    "format_version: put everything the state holds in its data",
}

# Raised by any call: failures of the method itself, and what gRPC reports on
# its own when the server goes away or a deadline or cancel ends the call.
_ANY_CALL = frozenset(
    {"INTERNAL", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED", "CANCELLED", "UNAVAILABLE"}
)
_TIMED = _ANY_CALL | {"INVALID_ARGUMENT", "FAILED_PRECONDITION"}
ALLOWED_STATUS: dict[str, frozenset[str]] = {
    "Describe": _ANY_CALL,
    # Protocol 1.3: Reset is never refused for its argument (trajectory_id is informational).
    "Reset": _ANY_CALL,
    "StartSession": _TIMED,
    "PushFrames": _TIMED,
    # A server that does not declare accepts_item_batches answers UNIMPLEMENTED (R13).
    "PushItemBatches": _TIMED | {"UNIMPLEMENTED"},
    "Query": _TIMED,
    "EndSession": _TIMED,
    # Callable at any time; the harness never overlaps calls (R3), so nothing to refuse.
    "ExportState": _ANY_CALL,
    "ImportState": _TIMED | {"UNIMPLEMENTED", "DATA_LOSS"},
}
"""Status codes the .proto's WHICH CALL MAY ANSWER WHICH CODE list allows each call to answer
(tests/unit/test_protocol_text.py keeps the two equal)."""

CONTENT_TYPE_MAX = 64
_CONTENT_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*")


def label_problem(content_type: str, format_version: int) -> str | None:
    """R16: a state's label is a bare MIME type of at most CONTENT_TYPE_MAX characters and a
    format version in [0, 2^31): the label comes back on ImportState without being counted
    in the storage metric, so it must not be able to carry memory (a red team kept a whole
    text log in content_type and exported 0 data bytes)."""
    if len(content_type) > CONTENT_TYPE_MAX or not _CONTENT_TYPE.fullmatch(content_type):
        shown = content_type[:CONTENT_TYPE_MAX] + (
            "..." if len(content_type) > CONTENT_TYPE_MAX else ""
        )
        return (
            f"content_type {shown!r} ({len(content_type)} characters) is not a MIME type of at "
            f"most {CONTENT_TYPE_MAX} lower-case characters without parameters"
        )
    if not 0 <= format_version < 2**31:
        return f"format_version {format_version} is outside [0, 2^31)"
    return None


def label_change_problem(first: tuple[str, int], now: tuple[str, int]) -> str | None:
    """R16: every export of one trajectory carries the label of its first export."""
    if first == now:
        return None
    return (
        f"this export's label (content_type {now[0]!r}, format_version {now[1]}) differs from "
        f"the trajectory's first export's ({first[0]!r}, {first[1]}): a label that changes "
        "carries information the storage metric does not count"
    )


MAX_MESSAGE_BYTES = 4 << 20
"""gRPC's default message limit, which neither side raises (R7)."""
FRAME_MESSAGE_OVERHEAD = 64
"""More than the bytes a StreamItem adds around a frame's data (tags, lengths, times)."""
MAX_RGB24_SIDE = 1182
"""The longest side at which a square RGB24 frame's message still fits MAX_MESSAGE_BYTES."""


def frame_fit_problem(max_side: int, rgb24: bool) -> str | None:
    """Why frames at `max_side` would not fit one gRPC message, or None (R7).

    The harness keeps the video's aspect, so a square video is the worst case; JPEG
    frames of real video stay far below the limit at any side this protocol allows."""
    if not rgb24 or max_side <= 0:
        return None
    size = max_side * max_side * 3 + FRAME_MESSAGE_OVERHEAD
    if size <= MAX_MESSAGE_BYTES:
        return None
    return (
        f"an RGB24 frame of {max_side}x{max_side} pixels is a {size:,}-byte message, over "
        f"gRPC's default {MAX_MESSAGE_BYTES:,}-byte (4 MiB) message limit that neither side "
        f"raises (R7): the largest side that fits is {MAX_RGB24_SIDE}"
    )


_SHA256 = re.compile(r"[0-9a-f]{64}")


def violation(rpc: str, rule: str, seen: str, *, status: str = "") -> WireRuleError:
    """The error for a broken rule: the call, the rule's id and title, what was seen, the fix."""
    return WireRuleError(
        f"the server broke rule {rule} ({TITLES[rule]}) of memory_system.proto: {seen}",
        rule=rule,
        rpc=rpc,
        status=status,
        hint=HINTS[rule],
    )


def status_problem(rpc: str, code: str) -> str | None:
    """Whether `rpc` may answer status `code` ("NOT_FOUND", ...); calls of other services pass."""
    allowed = ALLOWED_STATUS.get(rpc)
    if allowed is None or code in allowed:
        return None
    listed = ", ".join(sorted(allowed))
    return f"{rpc} answered {code}, which the .proto does not list for it ({listed})"


def chunk_limit(max_chunk_bytes: int) -> int:
    """The largest state chunk a client asking for `max_chunk_bytes` may receive."""
    return min(max_chunk_bytes, MAX_CHUNK_BYTES) if max_chunk_bytes > 0 else DEFAULT_CHUNK_BYTES


def chunk_problem(index: int, size: int, max_chunk_bytes: int) -> str | None:
    """Whether data chunk `index` (1 = the first after the manifest) of `size` bytes is too big."""
    limit = chunk_limit(max_chunk_bytes)
    if size <= limit:
        return None
    note = " (1 MiB)" if max_chunk_bytes <= 0 else ""
    if limit < max_chunk_bytes:
        note = " (capped at 2 MiB)"
    asked = f"max_chunk_bytes={max_chunk_bytes}{note}"
    return f"state chunk {index} carries {size} bytes, over the {limit} allowed by {asked}"


def sha256_problem(sha256: str) -> str | None:
    if _SHA256.fullmatch(sha256):
        return None
    return f"manifest sha256 {sha256[:80]!r} is not 64 lower-case hex digits"


def received_problem(total_bytes: int, sha256: str, received: int, digest: str) -> str | None:
    """Whether the data that arrived is what the manifest announced."""
    if received != total_bytes:
        return f"the manifest announced {total_bytes} bytes but {received} arrived"
    if digest != sha256:
        return f"the manifest's sha256 is {sha256} but the data's is {digest}"
    return None


def shape_problem(index: int, kind: str | None) -> str | None:
    """Whether state chunk `index` (0 = the first) carries what its place in the stream allows."""
    expected = "manifest" if index == 0 else "data"
    if kind == expected:
        return None
    got = "nothing" if kind is None else f"a {kind}"
    if index == 0:
        return f"the first state chunk carries {got}, not the manifest"
    return f"state chunk {index} carries {got}; after the manifest only data may follow"
