"""What every report says about a synthetic reference judge.

A suite may offer a deterministic judge for its own synthetic benchmark: it
knows the generated facts, so a demo can show every column offline. Its
numbers are not the paper's (no LLM read the responses), so the judge's
identity carries `LABEL` and every report that shows a judge-dependent number
repeats it; `compare` keeps such runs apart from LLM-judged ones because the
judge is part of the scoring signature.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KIND = "synthetic_reference"
LABEL = "synthetic reference judge, not the paper's LLM judge"


def reference_note(report: Mapping[str, Any]) -> str | None:
    """LABEL when `report` (report.json) was scored by a synthetic reference judge."""
    judge = (report.get("scoring") or {}).get("judge") or {}
    if judge.get("kind") == KIND:
        return str(judge.get("label") or LABEL)
    return None
