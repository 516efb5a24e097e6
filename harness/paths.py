"""Where the harness keeps what it generates across runs."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """$APMBENCH_CACHE, else ~/.cache/apmbench-grpc: synthetic datasets, never seen by systems."""
    configured = os.environ.get("APMBENCH_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "apmbench-grpc"
