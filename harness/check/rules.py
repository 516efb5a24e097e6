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
    Rule("REFLECTION", "Server reflection", "and ready) and server reflection."),
    Rule(
        "STATUS",
        "Status codes",
        "DATA_LOSS ImportState data whose length or sha256 does not match its manifest.",
    ),
    Rule(
        "CANCEL", "Cancellation", "a cancelled Query stops its work and leaves the server usable."
    ),
    Rule(
        "QUERY",
        "Query streams its answer",
        "Streams the answer text as it is produced; the concatenation of all chunks is the answer.",
    ),
    Rule(
        "QUERY-KIND",
        "Answer formats",
        'Four options, answer {"answer": "A|B|C|D"}.',
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
