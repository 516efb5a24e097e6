"""The trajectory clock: ("DAY4", "18:39:09") <-> milliseconds since DAY1 00:00:00."""

from __future__ import annotations

import re

from apmbench.harness.errors import DatasetError

MS_PER_DAY = 86_400_000
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


def format_ms(time_ms: int) -> str:
    """ "DAY4 18:39:09" (milliseconds shown only when not zero)."""
    day, rest = divmod(time_ms, MS_PER_DAY)
    seconds, ms = divmod(rest, 1000)
    h, rem = divmod(seconds, 3600)
    mi, s = divmod(rem, 60)
    text = f"DAY{day + 1} {h:02d}:{mi:02d}:{s:02d}"
    return f"{text}.{ms:03d}" if ms else text
