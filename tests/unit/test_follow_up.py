"""A follow-up must be asked at its parent's time: no frame may come between two rounds."""

from __future__ import annotations

import pytest

from apmbench.adapters.sdk.types import Query, QueryKind
from apmbench.harness.run.plan import Ask, FollowUp


def ask(instance_id: str, time_ms: int, follow_up: FollowUp | None = None) -> Ask:
    query = Query("", time_ms, QueryKind.MULTIPLE_CHOICE, "", "p")
    return Ask(instance_id, 0, time_ms, query, {}, follow_up)


def test_a_follow_up_at_another_time_is_refused() -> None:
    ask("r1", 1000, FollowUp(ask("r2", 1000), lambda text: True))
    with pytest.raises(ValueError, match="follow-up r2 is at 2000 ms, not at its parent's 1000"):
        ask("r1", 1000, FollowUp(ask("r2", 2000), lambda text: True))
