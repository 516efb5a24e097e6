"""The annotations' clock: ("DAY4", "18:39:09") <-> ms since DAY1 00:00:00.

Shared by every suite's dataset loader.
"""

from __future__ import annotations

import re

from apmbench.adapters.sdk.clock import MS_PER_DAY, format_ms
from apmbench.harness.errors import DatasetError

__all__ = ["MS_PER_DAY", "day_index", "format_ms", "to_ms"]

_DAY = re.compile(r"^DAY(\d+)$")
_TIME = re.compile(r"^(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?$")


def day_index(day_id: str) -> int:
    m = _DAY.match(day_id)
    if not m or int(m.group(1)) < 1:
        raise DatasetError(f"day_id {day_id!r} is not of the form DAY1, DAY2, ...")
    return int(m.group(1)) - 1


def to_ms(day_id: str, clock: str) -> int:
    """Milliseconds on the trajectory clock for a day and an "HH:MM:SS[.fff]" time."""
    m = _TIME.match(clock)
    if not m:
        raise DatasetError(f"time {clock!r} is not of the form HH:MM:SS or HH:MM:SS.fff")
    h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if h > 23 or mi > 59 or s > 59:
        raise DatasetError(f"time {clock!r} is out of range")
    frac = int((m.group(4) or "0").ljust(3, "0"))
    return day_index(day_id) * MS_PER_DAY + ((h * 60 + mi) * 60 + s) * 1000 + frac
