"""Eq. 2 when the peak repeats: one documented rule, and B_peak / D_peak per trajectory.

APM-Bench (arXiv 2609.37559), section 3.3: Storage/hr is the mean over
trajectories of B_peak / D_peak, "the peak prior-session storage footprint
normalized by the cumulative prior-session duration". The paper does not say
which occurrence of a repeated peak defines D_peak.
"""

from __future__ import annotations

from typing import Any

import pytest

from apmbench.harness.scoring import measures
from apmbench.harness.suites.apmbench import metrics


def session(tid: str, index: int, hours: float, state: int) -> dict[str, Any]:
    return {"trajectory_id": tid, "index": index, "duration_s": hours * 3600, "state_bytes": state}


def test_growing_memory_peaks_at_the_end() -> None:
    # A raw-video memory grows with every session: 1, 2, 3 GB over 1 h sessions.
    gb = 1 << 30
    rows = [session("grow", i, 1.0, (i + 1) * gb) for i in range(3)] + [session("grow", 3, 1, 0)]
    out = measures.storage(rows)
    (t,) = out["trajectories"]
    assert t["B_peak_bytes"] == 3 * gb and t["D_peak_hours"] == pytest.approx(3.0)
    assert out["storage_per_hour_bytes"] == pytest.approx(gb)


def test_constant_memory_is_charged_for_all_the_hours_it_covers() -> None:
    # A fixed-size state (e.g. fast weights, B.4: 8,404,992 bytes) held after
    # each of three 0.5 h sessions: the rule takes the last occurrence, so
    # D_peak = 1.5 h, not 0.5 h (which the first occurrence would give).
    size = 8_404_992
    rows = [session("flat", i, 0.5, size) for i in range(3)] + [session("flat", 3, 0.5, 1)]
    out = measures.storage(rows)
    assert out["peak_rule"] == "last"
    (t,) = out["trajectories"]
    assert t["B_peak_bytes"] == size
    assert t["D_peak_hours"] == pytest.approx(1.5)
    assert t["peak_after_session"] == 2
    assert out["storage_per_hour_bytes"] == pytest.approx(size / 1.5)
    # Every prior state is recorded, so another rule can be recomputed from report.json.
    first = next(s for s in t["prior_states"] if s["bytes"] == t["B_peak_bytes"])
    assert size / first["cumulative_hours"] == pytest.approx(size / 0.5)


def test_report_names_the_rule() -> None:
    from apmbench.harness.suites.apmbench.report import render_markdown

    rows = [session("flat", i, 0.5, 100) for i in range(3)]
    report = metrics.score([], [dict(r, frames=1, user_turns=0, ingest_s=1.0) for r in rows])
    manifest = {
        "system": {"name": "s"},
        "dataset": {"name": "d"},
        "dataset_hash": "0" * 12,
        "settings": {"persistence": "export"},
        "harness_version": "x",
        "protocol_version": "y",
    }
    text = render_markdown(report, manifest)
    assert "Peak rule `last`" in text and "storage.trajectories" in text
