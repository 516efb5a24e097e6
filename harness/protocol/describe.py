"""A server's Describe answer as the plain record a manifest and `check` keep."""

from __future__ import annotations

from typing import Any

from apmbench.adapters.sdk.types import SystemInfo


def describe_info(info: SystemInfo) -> dict[str, Any]:
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
            "resumes_sessions": caps.resumes_sessions,
        },
        "details": dict(info.details),
    }
