"""How much the matching parameters the paper leaves open move ProactEgoMem's metrics.

The paper (section 5.1) names the matching cost, alpha (1 - sim) + (1 - alpha)
(|delta| / W)^p, and a window, and prints no value of either. `table` rescores one run's step
outputs with each of `SETTINGS`, as they are and delayed by whole seconds (each step's output
arriving k steps later, as a slower method's would). docs/PROACTEGOMEM.md shows the table
`tests/bench/matching_sensitivity.py` prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

from apmbench.harness.suites.proactegomem import metrics
from apmbench.harness.suites.proactegomem.report import start_at
from apmbench.harness.suites.proactegomem.tools import INTERVENTION, NOTIFICATION

DEFAULT = metrics.Params()
SETTINGS: tuple[tuple[str, metrics.Params], ...] = (
    ("default: window [-2, +5] s, alpha 0.5, p 1.5, W the side", DEFAULT),
    ("window [-1, +3] s", replace(DEFAULT, early_s=1.0, late_s=3.0)),
    ("window [-3, +8] s", replace(DEFAULT, early_s=3.0, late_s=8.0)),
    ("window [-5, +5] s", replace(DEFAULT, early_s=5.0, late_s=5.0)),
    ("alpha 0.25", replace(DEFAULT, alpha=0.25)),
    ("alpha 0.75", replace(DEFAULT, alpha=0.75)),
    ("W the wider side", replace(DEFAULT, w=metrics.W_WIDER)),
)
SHIFTS_S = (0, 1, 2, 3, 4)


def shifted(rows: Sequence[metrics.Row], k: int) -> list[metrics.Row]:
    """The step rows with each output moved k steps (seconds) later; outputs moved past
    their clip's end are dropped, and the first k steps say nothing."""
    if k == 0:
        return list(rows)
    out: list[metrics.Row] = []
    by_clip = metrics.clip_groups(rows)
    for group in by_clip.values():
        end_ms = group[0]["clip_end_s"] * 1000
        times = {r["step_index"]: r["time_ms"] for r in group}
        for r in group:
            later = r["step_index"] + k
            if later in times and times[later] <= end_ms:
                out.append(cast(metrics.Row, {**r, "step_index": later, "time_ms": times[later]}))
        for r in group[:k]:
            out.append(cast(metrics.Row, {**r, "raw_output": ""}))
    return out


def figures(rows: Sequence[metrics.Row], params: metrics.Params) -> dict[str, Any]:
    levels = metrics.score_levels(rows, metrics.word_match, params)
    iv, nt = levels[INTERVENTION], levels[NOTIFICATION]
    return {
        "iv_start": start_at(iv),
        "iv_f1": iv["f1"],
        "iv_miou": iv.get("miou"),
        "iv_matched": iv["matched"],
        "truth": iv["ground_truth"],
        "nt_start": start_at(nt),
        "nt_f1": nt["f1"],
        "nt_matched": nt["matched"],
    }


def _p(value: float | None) -> str:
    return "n/c" if value is None else f"{value:.1f}"


def table(rows: Sequence[metrics.Row]) -> list[str]:
    lines = [
        "| setting | shift (s) | Int. Start@0.2 | Int. F1 | Int. mIoU | Int. matched | "
        "Notif. Start@0.2 | Notif. F1 | Notif. matched |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, params in SETTINGS:
        for k in SHIFTS_S:
            f = figures(shifted(rows, k), params)
            lines.append(
                f"| {name} | {k} | {_p(f['iv_start'])} | {_p(f['iv_f1'])} | "
                f"{_p(f['iv_miou'])} | {f['iv_matched']} of {f['truth']} | "
                f"{_p(f['nt_start'])} | {_p(f['nt_f1'])} | {f['nt_matched']} |"
            )
    return lines
