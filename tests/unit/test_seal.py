"""The seal names every record that changed, went missing or appeared after sealing."""

from __future__ import annotations

from apmbench.harness.run import seal

RECORDS: list[tuple[str, object]] = [("manifest", {"a": 1}), ("t1/main/q1", {"x": "A"})]


def test_unchanged_records_hold_their_seal() -> None:
    assert seal.breaks(seal.seal(RECORDS), RECORDS) == []


def test_each_edit_is_named() -> None:
    sealed = seal.seal(RECORDS)
    altered = [RECORDS[0], ("t1/main/q1", {"x": "B"})]
    assert seal.breaks(sealed, altered) == ["t1/main/q1: changed after the run"]
    assert seal.breaks(sealed, RECORDS[:1]) == ["t1/main/q1: removed after the run"]
    assert seal.breaks(sealed, [*RECORDS, RECORDS[1]]) == ["t1/main/q1: present more than once"]
    added = [*RECORDS, ("t1/main/q2", {})]
    assert seal.breaks(sealed, added) == ["t1/main/q2: not in the seal (added after the run)"]


def test_an_edited_seal_and_no_seal_are_named() -> None:
    sealed = seal.seal(RECORDS)
    sealed["records"][1]["sha256"] = "0" * 64
    problems = seal.breaks(sealed, RECORDS)
    assert "the seal's head does not match" in problems[0]
    assert seal.breaks(None, RECORDS) == ["no sha256-chain-v1 seal"]
