"""Every seeded synthetic figure in docs/measurements.md names the generator version it was
taken on, and one taken on an older version than the suite's current generator says it was
not re-measured (and why): a generator change moves the figures, and a reader must be able
to tell a current figure from a stale one."""

from __future__ import annotations

import re
from pathlib import Path

from apmbench.harness.suites.apmbench.synth.live import GENERATOR_VERSION as APMBENCH
from apmbench.harness.suites.egoprobe.synth import GENERATOR_VERSION as EGOPROBE
from apmbench.harness.suites.proactegomem.synth import GENERATOR_VERSION as PROACTEGOMEM

ROOT = Path(__file__).resolve().parents[2]
CURRENT = {"apmbench": APMBENCH, "egoprobe": EGOPROBE, "proactegomem": PROACTEGOMEM}
VERSION = re.compile(r"generator (?:version )?(\d+)")


def seeded_figures(text: str) -> list[tuple[str, str]]:
    """(suite, paragraph) for each paragraph (or list item) that gives a seeded synthetic
    run's command."""
    out = []
    for block in re.split(r"\n\s*\n|\n(?=- )", text):
        seeded = "--seed" in block or re.search(r"\bseeds? \d", block)
        if "evaluate" in block and ("--synthetic" in block or "synth" in block) and seeded:
            named = re.search(r"--benchmark (\w+)", block)
            out.append((named.group(1) if named else "apmbench", block))
    return out


def stale_or_unnamed(text: str) -> list[str]:
    problems = []
    for suite, block in seeded_figures(text):
        versions = [int(v) for v in VERSION.findall(block)]
        head = " ".join(block.split())[:90]
        if not versions:
            problems.append(f"names no generator version: {head}")
        elif max(versions) > CURRENT[suite]:
            problems.append(f"names a generator {suite} does not have yet: {head}")
        elif max(versions) < CURRENT[suite] and "not re-measured" not in block:
            problems.append(
                f"generator {max(versions)} < {CURRENT[suite]}, not re-measured: {head}"
            )
    return problems


def test_every_seeded_synthetic_figure_names_a_current_generator_or_says_why_not() -> None:
    text = (ROOT / "docs" / "measurements.md").read_text()
    assert len(seeded_figures(text)) >= 4
    assert stale_or_unnamed(text) == []


def test_the_check_finds_an_unnamed_and_a_stale_figure() -> None:
    unnamed = "`apmbench-grpc evaluate --synthetic small --seed 0 --system x`: Overall 50."
    stale = f"On generator {APMBENCH - 1}, `apmbench-grpc evaluate --synthetic small --seed 0`: 50."
    other = "`evaluate --benchmark egoprobe --synthetic small --seed 0` (generator version 99)"
    said = stale_or_unnamed("\n\n".join([unnamed, stale, other]))
    assert [s.split(":")[0] for s in said] == [
        "names no generator version",
        f"generator {APMBENCH - 1} < {APMBENCH}, not re-measured",
        "names a generator egoprobe does not have yet",
    ]
