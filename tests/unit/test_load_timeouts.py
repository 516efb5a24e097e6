"""Each test's time limit is its quiet limit times the machine's slowdown (tests/load_timeouts.py)."""

from __future__ import annotations

import load_timeouts
import pytest

REFERENCE = 0.02


def test_a_quiet_or_faster_machine_keeps_the_quiet_limit() -> None:
    assert load_timeouts.slowdown([], REFERENCE) == 1.0
    assert load_timeouts.slowdown([0.01, 0.012, 0.011], REFERENCE) == 1.0


def test_a_loaded_machine_scales_the_limit_by_its_slowdown() -> None:
    # Quiet for the run so far, loaded for the last probes: the recent median counts.
    samples = [0.02] * 20 + [0.1] * load_timeouts.RECENT
    assert load_timeouts.slowdown(samples, REFERENCE) == pytest.approx(5.0)
    # Loaded for most of the run, one quiet moment: the whole run's median counts.
    assert load_timeouts.slowdown([0.06] * 30 + [0.02] * 2, REFERENCE) == pytest.approx(3.0)


def test_a_hung_test_still_fails_within_a_bounded_multiple() -> None:
    assert load_timeouts.slowdown([5.0] * 10, REFERENCE) == load_timeouts.MAX_SCALE


@pytest.mark.timeout(7)
def test_the_limit_this_test_runs_under_is_its_mark_scaled(request: pytest.FixtureRequest) -> None:
    assert request.config.pluginmanager.has_plugin(load_timeouts.NAME)  # here, in this process
    marks = list(request.node.iter_markers("timeout"))
    assert len(marks) == 2, marks  # the plugin's in front of the test's own
    marker = marks[0]
    # The mark the plugin put in front of this test's own, scaled by at least 1.
    assert 7 <= marker.args[0] <= 7 * load_timeouts.MAX_SCALE
    assert load_timeouts.limit_of(request.node) == marker.args[0]
