"""Table 13's "Original Accuracy" next to EA, EU and Balanced (issue 11, item 4).

APM-Bench (arXiv 2609.37559), B.7: "Table 13 compares Original Accuracy on all
260 questions with Evidence Available Accuracy on the 130 whose evidence
remains in the two most recent sessions"; Original Accuracy "is the accuracy
on the original four-option questions under each system's main evaluation
protocol". Each EA candidate names the candidate it was derived from.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.errors import DatasetError
from apmbench.harness.suites.apmbench import metrics
from apmbench.harness.suites.apmbench.dataset import load_dataset


def linked_mini(mini: Path, tmp_path: Path, links: dict[str, str]) -> Path:
    root = tmp_path / "ds"
    shutil.copytree(mini, root)
    path = root / "candidates" / "evidence_availability.json"
    doc = json.loads(path.read_text())
    for c in doc:
        if c["candidate_id"] in links:
            c["original_candidate_id"] = links[c["candidate_id"]]
    path.write_text(json.dumps(doc))
    return root


def test_the_link_is_loaded_and_checked(mini: Path, tmp_path: Path) -> None:
    d = load_dataset(
        linked_mini(mini, tmp_path, {"T01-EA-avail": "T01-ER-0", "T01-EA-unavail": "T01-TR-2"})
    )
    links = {c.candidate_id: c.original_candidate_id for c in d.candidates if c.task == "EA"}
    assert links == {"T01-EA-avail": "T01-ER-0", "T01-EA-unavail": "T01-TR-2"}


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nope", "is not a four-option \\(MCQA\\) candidate"),
        ("T01-EA-unavail", "is not a four-option \\(MCQA\\) candidate"),
        ("T02-ER-7", "in another trajectory"),
    ],
)
def test_a_bad_link_is_refused(mini: Path, tmp_path: Path, target: str, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        load_dataset(linked_mini(mini, tmp_path, {"T01-EA-avail": target}))


def mcqa(cid: str, correct: bool) -> dict[str, Any]:
    return {"task": "ER", "candidate_id": cid, "correct": correct, "format": "clean"}


def ea(cid: str, original: str, available: bool, correct: bool) -> dict[str, Any]:
    return {
        "task": "EA",
        "candidate_id": cid,
        "original_candidate_id": original,
        "evidence_available": available,
        "correct": correct,
        "format": "clean",
    }


def test_original_accuracy_reproduces_table_13() -> None:
    # HERMES in Table 13: 38.46% originally on the 260 questions (100 of them),
    # 7.69% (10 of 130) on the evidence-available half.
    rows = [mcqa(f"q{i}", i < 100) for i in range(260)]
    rows += [ea(f"ea{i}", f"q{i}", i % 2 == 0, i % 2 == 0 and i < 20) for i in range(260)]
    out = metrics.evidence_availability(rows)
    assert out["n_original"] == 260
    assert round(out["original_accuracy"], 2) == 38.46
    assert round(out["evidence_available_accuracy"], 2) == 7.69
    assert "original_accuracy_reason" not in out


def test_without_links_original_accuracy_is_not_computed_and_says_why() -> None:
    rows = [mcqa("q0", True), {**ea("ea0", "", True, True), "original_candidate_id": None}]
    out = metrics.evidence_availability(rows)
    assert out["original_accuracy"] is None
    assert "original_candidate_id" in out["original_accuracy_reason"]
