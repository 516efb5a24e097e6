from __future__ import annotations

import pytest

from apmbench.harness.errors import DatasetError
from apmbench.harness.media.timecode import MS_PER_DAY, format_ms, to_ms


def test_days_are_real_gaps_on_the_clock() -> None:
    assert to_ms("DAY1", "00:00:00") == 0
    assert to_ms("DAY4", "18:39:09") == 3 * MS_PER_DAY + (18 * 3600 + 39 * 60 + 9) * 1000
    assert to_ms("DAY2", "00:00:00.5") - to_ms("DAY1", "23:59:59") == 1500


def test_format_round_trips() -> None:
    for day, clock in (("DAY1", "08:00:00"), ("DAY12", "23:59:59.250")):
        assert format_ms(to_ms(day, clock)) == f"{day} {clock}"


@pytest.mark.parametrize(
    ("day", "clock", "message"),
    [
        ("Day1", "08:00:00", "DAY1, DAY2"),
        ("DAY0", "08:00:00", "DAY1, DAY2"),
        ("DAY1", "8h", "HH:MM:SS"),
        ("DAY1", "24:00:00", "out of range"),
    ],
)
def test_bad_times_say_what_to_fix(day: str, clock: str, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        to_ms(day, clock)
