"""text-log's memory text survives what a real video's perception reads: empty fields and
names with spaces (the mini fixture's OCR gave `AT IB ` and stopped every query)."""

from __future__ import annotations

from apmbench.adapters.sdk import ExportedState
from apmbench.adapters.systems.text_log import CONTENT_TYPE, TextLog, _token


def test_an_empty_place_and_a_spaced_name_read_back() -> None:
    log = TextLog()
    log.log = [
        "SESSION 0 DAY1",
        "EVENT pickup  BE - -",  # an event whose place perception read as empty
        "AT IB ",  # an object last seen at an empty place
    ]
    events, where, _ = log._recall()
    assert [(e.kind, e.place, e.subject) for e in events] == [("pickup", "", "BE")]
    assert where == {"IB": ("", 0)}


def test_a_spaced_name_is_written_as_one_field_and_read_back() -> None:
    assert _token("SHOE RACK") == "SHOE_RACK" and _token("") == "" and _token(" a  b ") == "a_b"
    state = ExportedState(
        b"SESSIONS 1\nSESSION 0 DAY1\nAT SHOE_RACK \nAT KEYS HALL", CONTENT_TYPE, 1
    )
    log = TextLog()
    log.import_state(state)
    _, where, _ = log._recall()
    assert where == {"SHOE_RACK": ("", 0), "KEYS": ("HALL", 0)}
