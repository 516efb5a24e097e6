"""Counts in messages agree with their nouns: "1 finished trajectory is kept", "2 probes",
and no message falls back on "chunk(s)"."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from apmbench.harness.commands.evaluate import _what_works
from apmbench.harness.commands.judge_options import judge_unreachable, judge_warnings
from apmbench.harness.wording import counted, plural

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("n", "noun", "said"),
    [
        (0, "probe", "0 probes"),
        (1, "probe", "1 probe"),
        (2, "finished trajectory", "2 finished trajectories"),
        (1, "finished trajectory", "1 finished trajectory"),
        (3, "day", "3 days"),
        (2, "box", "2 boxes"),
    ],
)
def test_counted(n: int, noun: str, said: str) -> None:
    assert counted(n, noun) == said


def test_an_irregular_plural_is_given() -> None:
    assert counted(2, "datum", "data") == "2 data" and plural("query") == "queries"


def test_one_finished_trajectory_is_kept(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{}")
    (tmp_path / "trajectories").mkdir()
    (tmp_path / "trajectories" / "T1.json").write_text("{}")
    assert _what_works(tmp_path).startswith(f"1 finished trajectory is kept in {tmp_path};")
    (tmp_path / "trajectories" / "T2.json").write_text("{}")
    assert _what_works(tmp_path).startswith("2 finished trajectories are kept")


def test_the_judge_counts_its_probes() -> None:
    report = {"judge": {"by_status": {"error": 1, "invalid": 1}}, "scoring": {"judge": {}}}
    said = " ".join([*judge_warnings(report), str(judge_unreachable(report))])
    assert "for 1 probe " in said and "for 1 probe;" in said and "1 probes" not in said


NOT_YET = {"harness/orchestrate/html/view.py"}
"""The viewer's audit line ("2 flag(s)"): its page is being reworked elsewhere; it moves to
`counted` with that work, and this list empties."""


def test_no_message_counts_with_a_parenthesised_plural() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "harness").rglob("*.py"))
        if path.relative_to(ROOT).as_posix() not in NOT_YET
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\{[^}]+\} [\w ]*\w\(s\)", line)
    ]
    assert not found, found
