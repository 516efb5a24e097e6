"""A deliberately leaky copy of a dataset: the first synthetic generator's shortcuts, put back.

The timing-only cheaters are meant to sit at chance because the generator draws every
value a system receives without frames independently of the label. A test that only
sees them at chance cannot tell "no shortcut" from "a cheater that could not use one".
`make_leaky` rewrites a dataset's candidates so that the label is readable off the
times, exactly as on the first generator:

- every silence interval lasts 5 s, and no ideal interval does;
- an RCR negative comes 3 s after its registration.

TimingOnlyDecider applies exactly that rule: on the leaky copy it must score far above
chance on MPA, PRM, TPG and RCR (the positive control), on the real dataset at chance.
Its third rule (an ERA fork asked its negative before its positive) is left out: the
harness now asks every probe in its own fork of the session, so a count of probes asked
is 0 at every probe whatever the order (ERA stays at 50 on both copies); the order
itself is issue 30's "position" finding, a matter for the generator.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LEAKY_TASKS = ("MPA", "PRM", "TPG", "RCR")


def _ms(clock: str) -> int:
    h, m, s = (int(x) for x in clock.split(":"))
    return ((h * 60 + m) * 60 + s) * 1000


def _clock(ms: int) -> str:
    s = ms // 1000
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


def _leak(candidate: dict[str, Any]) -> dict[str, Any]:
    task = candidate["task_type"]
    if task in ("MPA", "PRM", "TPG"):
        for w in candidate["negative_or_silence_windows"]:
            w["end_time"] = _clock(_ms(w["start_time"]) + 5000)
        ideal = candidate.get("ideal_response_windows") or [candidate["ideal_response_window"]]
        for w in ideal:
            if _ms(w["end_time"]) - _ms(w["start_time"]) == 5000:
                w["end_time"] = _clock(_ms(w["start_time"]) + 4000)
    elif task == "RCR":
        reg = _ms(candidate["registration_event"]["registration_time"])
        for h in candidate["negative_heartbeats"]:
            h["query_time"] = _clock(reg + 3000)
    return candidate


def make_leaky(dataset: Path) -> int:
    """Rewrite `dataset`'s candidate files in place; returns how many candidates leak now."""
    leaked = 0
    for path in sorted((dataset / "candidates").glob("*.json")):
        rows = json.loads(path.read_text())
        for row in rows:
            if row.get("task_type") in LEAKY_TASKS:
                _leak(row)
                leaked += 1
        path.write_text(json.dumps(rows, indent=1))
    return leaked
