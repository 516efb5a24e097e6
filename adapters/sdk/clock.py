"""The trajectory clock shared by the harness and the systems.

Every `time_ms` on the wire is milliseconds since DAY1 00:00:00 of the
trajectory, so a day is a fixed number of milliseconds and a time can be
shown as "DAY4 18:39:09" without any other context.
"""

from __future__ import annotations

MS_PER_DAY = 86_400_000


def format_ms(time_ms: int) -> str:
    """ "DAY4 18:39:09" (milliseconds shown only when not zero)."""
    day, rest = divmod(time_ms, MS_PER_DAY)
    seconds, ms = divmod(rest, 1000)
    h, rem = divmod(seconds, 3600)
    mi, s = divmod(rem, 60)
    text = f"DAY{day + 1} {h:02d}:{mi:02d}:{s:02d}"
    return f"{text}.{ms:03d}" if ms else text
