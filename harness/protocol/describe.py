"""A server's Describe answer as the plain record a manifest and `check` keep."""

from __future__ import annotations

from apmbench.adapters.sdk.types import SystemInfo
from apmbench.harness.json_types import JsonObject


def describe_info(info: SystemInfo) -> JsonObject:
    caps = info.capabilities
    return {
        "name": info.name,
        "version": info.version,
        "protocol_version": info.protocol_version,
        "capabilities": {
            "frame_encodings": [e.value for e in caps.frame_encodings],
            "preferred_max_side": caps.preferred_max_side,
            "supports_import": caps.supports_import,
            "streaming_ingest": caps.streaming_ingest,
            "accepts_item_batches": caps.accepts_item_batches,
            "resumes_sessions": caps.resumes_sessions,
        },
        # What the harness pushes through, decided by the capability alone (R13).
        "push_rpc": push_rpc(info),
        "details": dict(info.details),
    }


def push_rpc(info: SystemInfo) -> str:
    """The RPC the harness pushes items through for this system (R13)."""
    return "PushItemBatches" if info.capabilities.accepts_item_batches else "PushFrames"
