"""The rules of memory_system.proto that the checks hold a server to.

Each rule carries a phrase quoted from the .proto comments; a unit test keeps
every quote present in the .proto, so a failing check always names a rule
that the protocol really states, in its words.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    id: str
    """"R1".."R9" as numbered in the .proto, or the name of an unnumbered paragraph."""
    title: str
    quote: str
    """Words of the .proto comments (whitespace aside) that state the rule."""

    def label(self) -> str:
        return f"{self.id} {self.title}"


_RULES = (
    Rule("R1", "Trajectory clock", "Every time is `time_ms`: wall-clock milliseconds since"),
    Rule("R2", "Time order", "An earlier time is INVALID_ARGUMENT"),
    Rule(
        "R3",
        "Lifecycle",
        "PushFrames, Query and EndSession outside an open session, and StartSession while one "
        "is open, are FAILED_PRECONDITION.",
    ),
    Rule(
        "R4",
        "Ingest is synchronous",
        "PushFrames returns only when every item of the stream has been ingested",
    ),
    Rule(
        "R5",
        "Query is read-only",
        "it must not change what later calls see, nor what ExportState returns.",
    ),
    Rule(
        "R6",
        "Export is the whole memory",
        "After Reset + ImportState (in this process or a new one) the system behaves as it did "
        "before the export. Exporting the same memory twice gives byte-identical data.",
    ),
    Rule(
        "R7",
        "Chunking",
        "state travels in chunks of at most `max_chunk_bytes` (default 1 MiB).",
    ),
    Rule(
        "MANIFEST",
        "State manifest",
        "Exact number of data bytes that follow.",
    ),
    Rule(
        "STATE-STREAM",
        "State stream shape",
        "The first chunk carries only the manifest, the following ones only data.",
    ),
    Rule(
        "R8",
        "Capabilities",
        "A frame in an undeclared encoding is INVALID_ARGUMENT; ImportState on a system that "
        "declares `supports_import = false` is UNIMPLEMENTED.",
    ),
    Rule(
        "R10",
        "Well-formed items",
        "a frame has an encoding, a size and data (RGB24: width*height*3 bytes; JPEG: data "
        "that begins with the SOI marker FF D8); a user turn has a kind. Anything else is "
        "INVALID_ARGUMENT.",
    ),
    Rule(
        "R11",
        "Streaming answers",
        "each QueryChunk carries only new text (never the text so far), the concatenation of "
        "all chunks is the answer, and the first chunk is not blank: it has a visible "
        "character",
    ),
    Rule(
        "R12",
        "Answer formats",
        "The answer is exactly one JSON object in the format `QueryRequest.answer_format` names",
    ),
    Rule(
        "R13",
        "Item batches",
        "A server that declares `accepts_item_batches` implements PushItemBatches: the items of "
        "its batches, in order, are ingested exactly as the same items sent one per message to "
        "PushFrames",
    ),
    Rule(
        "R14",
        "Resumed sessions",
        "A server that declares `resumes_sessions` includes the open session in a state exported "
        "while it is open; after ImportState of such a state (in this process or a new one) that "
        "session is open again, with the same session_id and the clock at its last item "
        "(StartSession, frame or user turn: a Query is not part of the state, R5), and the system "
        "behaves as it did at the export",
    ),
    Rule(
        "R15",
        "Describe strings",
        "`name` and `version` are identifiers: 1 to 64 characters, each a letter, a digit, `.`, "
        "`_`, `+` or `-`, the first a letter or a digit",
    ),
    Rule(
        "R16",
        "State label",
        "An exported state's `content_type` is a MIME type of at most 64 lower-case characters "
        "without parameters, and every export within one trajectory carries the `content_type` "
        "and `format_version` of its first: at most two labels per trajectory, as every "
        "export between sessions carries the label of the first such export and every export "
        "in the middle of a session that of the first such one (the two may differ).",
    ),
    Rule(
        "PRECEDENCE",
        "Status precedence",
        "when a call breaks several rules, the first that applies in this order is answered: "
        "UNIMPLEMENTED, then FAILED_PRECONDITION, then INVALID_ARGUMENT, then DATA_LOSS.",
    ),
    Rule(
        "SESSION-ID",
        "EndSession names the open session",
        "EndSession whose session_id is not the open session's is INVALID_ARGUMENT and leaves "
        "the session open.",
    ),
    Rule(
        "R9",
        "Versioning",
        'names the protocol the server implements ("1.<minor>"). The harness refuses a different '
        "major version.",
    ),
    Rule("RESET", "Reset forgets", "Forget everything: an empty memory for a new trajectory."),
    Rule(
        "HEALTH",
        "Health service",
        "the empty service name reports SERVING once the system is loaded and ready",
    ),
    Rule("REFLECTION", "Server reflection", "It is recommended to serve server reflection"),
    Rule(
        "STATUS",
        "Status codes",
        "DATA_LOSS ImportState data whose length or sha256 does not match its manifest.",
    ),
    Rule(
        "CANCEL", "Cancellation", "a cancelled Query stops its work and leaves the server usable."
    ),
    Rule(
        "DIALOGUE",
        "Dialogue turns",
        "like any Query it runs on an isolated branch (R5), so no turn of a dialogue is "
        "remembered by the system. A system that ignores this field still answers the "
        "follow-up, only without its context.",
    ),
)
RULES: dict[str, Rule] = {r.id: r for r in _RULES}
