"""EgoProbe's dataset format, scoring rules and the dialogue field on the wire."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from apmbench.adapters.sdk import wire
from apmbench.adapters.sdk.types import Choice, DialogueTurn, Query, QueryKind
from apmbench.harness.errors import DatasetError
from apmbench.harness.suites.egoprobe import metrics
from apmbench.harness.suites.egoprobe.dataset import bucket_of, load_dataset
from apmbench.harness.suites.egoprobe.plan import R1, R2, SINGLE, Item


def _doc() -> dict[str, Any]:
    return {
        "benchmark": "egoprobe",
        "format_version": 1,
        "videos": [
            {
                "video_id": "V1",
                "segments": [
                    {"segment_id": "S1", "file": "a.mp4", "start": "DAY1 08:00:00",
                     "end": "DAY1 08:01:00"},
                    {"segment_id": "S2", "file": "b.mp4", "start": "DAY2 09:00:00",
                     "end": "DAY2 09:01:00"},
                ],
            }
        ],
        "questions": [
            {
                "question_id": "Q1",
                "subset": "echo",
                "video_id": "V1",
                "query_time": "DAY2 09:00:30",
                "question": "On DAY1, I put one object down at the DESK. Which object was it?",
                "options": {"A": "MUG", "B": "KEYS", "C": "BOOK", "D": "PHONE"},
                "answer": "B",
                "target": {"start": "DAY1 08:00:10", "end": "DAY1 08:00:11"},
                "related_events": [
                    {"event_id": "E1", "start": "DAY2 09:00:05", "end": "DAY2 09:00:06",
                     "option": "C"}
                ],
            }
        ],
        "dialogues": [
            {"dialogue_id": "D1", "parent": "Q1",
             "r1": {"question": "Did I put something down at the DESK?", "answer": "yes"},
             "r2": {"question": "Which object was it, that day?"}}
        ],
    }  # fmt: skip


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    for name in ("a.mp4", "b.mp4"):
        (tmp_path / name).write_bytes(b"\0")
    (tmp_path / "dataset.json").write_text(json.dumps(doc))
    return tmp_path


def test_a_valid_dataset_loads(tmp_path: Path) -> None:
    ds = load_dataset(_write(tmp_path, _doc()))
    (q,) = ds.questions
    assert q.session_index == 1 and q.recall_s == 25 * 3600 - 11 + 30
    assert q.bucket == "Ultra-long" and q.distractors == ("C",)
    assert ds.dialogues[0].parent is q
    assert [s.session_id for s in ds.trajectories[0].sessions] == ["S1", "S2"]


Edit = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Edit:
    def edit(doc: dict[str, Any]) -> None:
        *head, last = path.split(".")
        node: Any = doc
        for key in head:
            node = node[int(key)] if key.isdigit() else node[key]
        if value is KeyError:
            del node[last]
        else:
            node[int(last) if last.isdigit() else last] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set("benchmark", "apmbench"), "'benchmark' must be 'egoprobe'"),
        (_set("videos.0.segments.1.start", "DAY1 08:00:30"), "before the previous segment ends"),
        (_set("videos.0.segments.0.file", "missing.mp4"), "does not exist"),
        (_set("videos.0.segments.0.end", "8am"), "is not a time of the form"),
        (_set("questions.0.query_time", "DAY1 12:00:00"), "is not inside a recorded segment"),
        (_set("questions.0.options", {"A": "X", "B": "Y", "C": "Z"}), "exactly A, B, C, D"),
        (_set("questions.0.options.D", "MUG"), "two options have the same text"),
        (_set("questions.0.answer", "E"), "answer 'E' must be one of A, B, C, D"),
        (_set("questions.0.subset", "other"), "subset 'other' must be one of base, echo"),
        (_set("questions.0.target.end", "DAY2 09:00:40"), "must end before the query time"),
        (_set("questions.0.related_events.0.option", "B"), "must be an incorrect option id"),
        (_set("questions.0.related_events.0.end", "DAY2 09:00:50"), "and the query time"),
        # Appendix B.2: related events intervene; one before the target is not related.
        (
            _set("questions.0.related_events.0.start", "DAY1 08:00:05"),
            "between the end of the target evidence",
        ),
        (_set("questions.0.related_events", []), "echo question needs a related event"),
        (_set("questions.0.question", KeyError), "missing field 'question'"),
        (_set("dialogues.0.parent", "Q9"), "parent 'Q9' is not a question id"),
        (_set("dialogues.0.r1.answer", "no"), "r1 answer must be 'yes'"),
        (_set("dialogues.0.r2", KeyError), "missing field 'r2'"),
    ],
)
def test_each_malformed_field_is_named(tmp_path: Path, edit: Edit, message: str) -> None:
    doc = copy.deepcopy(_doc())
    edit(doc)
    with pytest.raises(DatasetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_dataset(_write(tmp_path, doc))


def test_buckets_follow_the_paper() -> None:
    assert [bucket_of(s) for s in (31.6, 179.9, 180, 1799, 1800, 12 * 3600 - 1, 12 * 3600)] == [
        "Short", "Short", "Medium", "Medium", "Long", "Long", "Ultra-long"
    ]  # fmt: skip


def test_scoring_two_turn_and_event_linked(tmp_path: Path) -> None:
    ds = load_dataset(_write(tmp_path, _doc()))
    q, d = ds.questions[0], ds.dialogues[0]

    def row(item: Item, text: str, **extra: Any) -> dict[str, Any]:
        base = {"round": item.round, "subset": q.subset, "bucket": q.bucket,
                "event_distractors": len(q.distractors), "event_count": q.event_count,
                "dialogue_id": d.dialogue_id,
                "ttft_s": 0.1, "total_s": 0.1, "rtf": None, "time_to_answer_s": None}  # fmt: skip
        return {**base, **metrics.grade(item, text), **extra}

    single = Item(SINGLE, q)
    assert metrics.grade(single, '{"answer":"C"}')["event_linked_error"] is True
    assert metrics.grade(single, '{"answer":"D"}')["other_error"] is True
    assert metrics.grade(Item(R1, q, d), '{"answer":"B"}')["affirmative"] is False
    assert metrics.grade(Item(R1, q, d), "no idea")["affirmative"] is None
    # Dialogue 1: R1 yes, R2 right. Dialogue 2: R1 yes, R2 wrong. Dialogue 3: R1 no, no R2.
    rows = [
        row(single, '{"answer":"C"}'),
        row(Item(R1, q, d), '{"answer":"A"}', dialogue_id="D1"),
        row(Item(R2, q, d), '{"answer":"B"}', dialogue_id="D1"),
        row(Item(R1, q, d), '{"answer":"A"}', dialogue_id="D2"),
        row(Item(R2, q, d), '{"answer":"A"}', dialogue_id="D2"),
        row(Item(R1, q, d), '{"answer":"B"}', dialogue_id="D3"),
    ]
    report = metrics.score(rows, [])
    dl = report["dialogues"]
    assert dl["n"] == 3 and dl["reached_r2"] == 2
    assert dl["r1_accuracy"] == pytest.approx(200 / 3)
    assert dl["two_turn_accuracy"] == pytest.approx(100 / 3)
    assert dl["outcomes"] == pytest.approx(
        {"r1_wrong": 100 / 3, "r1_right_r2_wrong": 100 / 3, "both_right": 100 / 3}
    )
    one = report["event_linked"]["by_event_count"]["1"]
    assert one["n"] == 1 and one["event_error"] == 100.0 and one["other_error"] == 0.0
    assert one["random"] == {"accuracy": 25.0, "event_error": 25.0, "other_error": 50.0}
    assert report["event_linked"]["share_event_linked"] == 100.0
    assert report["single_turn"]["echo"] == {"n": 1, "accuracy": 0.0}


def test_dialogue_turns_cross_the_wire() -> None:
    turn = DialogueTurn("Did I?\nA. Yes\nB. No", "Did I?", '{"answer": "A", "why": "seen"}')
    query = Query("q1", 5, QueryKind.MULTIPLE_CHOICE, "sys", "p", "Which?",
                  (Choice("A", "MUG"),), dialogue=(turn,))  # fmt: skip
    back = wire.query_from_pb(wire.query_to_pb(query))
    assert back == query
    plain = Query("q2", 5, QueryKind.MULTIPLE_CHOICE, "sys", "p")
    assert wire.query_from_pb(wire.query_to_pb(plain)).dialogue == ()


def test_tables_render_from_a_scored_report(tmp_path: Path) -> None:
    from rich.console import Console

    from apmbench.harness.suites.egoprobe import report

    ds = load_dataset(_write(tmp_path, _doc()))
    q = ds.questions[0]
    row = {"round": SINGLE, "subset": q.subset, "bucket": q.bucket, "event_distractors": 1,
           "event_count": 1, "dialogue_id": None, "ttft_s": None, "total_s": 0.1, "rtf": None,
           **metrics.grade(Item(SINGLE, q), '{"answer":"B"}')}  # fmt: skip
    scored = metrics.score([row], [])
    text = report.render_markdown(scored, {"system": {"name": "x"}, "dataset": "d"})
    assert "| Ultra-long | n/c (n=0) | 100.0 (n=1) | 100.0 (n=1) |" in text
    console = Console(record=True, width=200)
    for table in report.summary_tables([scored], ["x"]):
        console.print(table)
    assert "Ultra-long" in console.export_text()


def _echo_row(n_events: int, k: int) -> dict[str, Any]:
    return {"round": SINGLE, "subset": "echo", "event_count": n_events, "event_distractors": k,
            "correct": False, "event_linked_error": False, "other_error": True}  # fmt: skip


def test_random_choice_reproduces_the_papers_reference() -> None:
    """Table 4's random-choice row (25.00 / 36.93 / 53.01 event-linked errors) from a set with
    the paper's event distribution. Groups are Table 8's 623, 241, 125, 67 and 173 questions
    (1, 2, 3, 4, >=5 related events). A uniform guess makes an event-linked error with
    probability k/4 (k distinct event-grounded options), so group G's reference is
    100 * sum(k) / (4 |G|): 36.93 on 241 questions needs sum(k) = 356 (115 with k = 2,
    126 with k = 1); 53.01 on 365 needs sum(k) = 774. The paper's statistics ("30.4 % contain two or
    three event-grounded distractors", 374 of 1,229) leave 374 - 115 = 259 of the >=3
    group with k >= 2, so 106 with k = 1 and 3x + 2y = 668, x + y = 259: x = 150 with
    k = 3, y = 109 with k = 2 (spread below over the 3, 4 and >=5 groups)."""
    rows = [_echo_row(1, 1) for _ in range(623)]
    rows += [_echo_row(2, 1) for _ in range(126)] + [_echo_row(2, 2) for _ in range(115)]
    ks = [1] * 106 + [2] * 109 + [3] * 150
    sizes = {3: 125, 4: 67, 7: 173}
    at = 0
    for n_events, size in sizes.items():
        rows += [_echo_row(n_events, k) for k in ks[at : at + size]]
        at += size
    assert len(rows) == 1229 and sum(r["event_distractors"] >= 2 for r in rows) == 374
    linked = metrics.event_linked(rows)
    coarse = linked["by_event_count"]
    assert [coarse[g]["n"] for g in ("1", "2", ">=3")] == [623, 241, 365]
    refs = [round(coarse[g]["random"]["event_error"], 2) for g in ("1", "2", ">=3")]
    assert refs == [25.00, 36.93, 53.01]
    others = [round(coarse[g]["random"]["other_error"], 2) for g in ("1", "2", ">=3")]
    assert others == [50.00, 38.07, 21.99]
    assert all(coarse[g]["random"]["accuracy"] == 25.0 for g in coarse)
    fine = linked["by_event_count_fine"]
    assert [fine[g]["n"] for g in ("1", "2", "3", "4", ">=5")] == [623, 241, 125, 67, 173]
    # Table 8's groups merge into Table 4's >=3 row only under this key.
    merged = sum(fine[g]["n"] * fine[g]["random"]["event_error"] for g in ("3", "4", ">=5"))
    assert merged / 365 == pytest.approx(coarse[">=3"]["random"]["event_error"])


def test_groups_count_events_not_distinct_distractors() -> None:
    """Three related events that all support the same wrong option: the >=3 group, k = 1."""
    linked = metrics.event_linked([_echo_row(3, 1)])
    assert linked["by_event_count"][">=3"]["n"] == 1
    assert linked["by_event_count"]["1"]["n"] == 0
    assert linked["by_event_count"][">=3"]["random"]["event_error"] == 25.0


def test_a_target_of_several_evidence_segments_loads(tmp_path: Path) -> None:
    """Appendix B.1: a target's evidence may be several segments (refused before: 'target'
    had to be one object). The recall interval runs from the end of the last one."""
    doc = copy.deepcopy(_doc())
    doc["questions"][0]["target"] = [
        {"start": "DAY1 08:00:10", "end": "DAY1 08:00:11"},
        {"start": "DAY1 08:00:40", "end": "DAY1 08:00:42"},
    ]
    doc["questions"][0]["question_type"] = "location"
    (q,) = load_dataset(_write(tmp_path, doc)).questions
    assert q.target_segments == ((28_810_000, 28_811_000), (28_840_000, 28_842_000))
    assert q.recall_s == 25 * 3600 - 42 + 30 and q.question_type == "location"
    for target, message in (
        ([], "lists no evidence segment"),
        ([{"start": "DAY1 08:00:40", "end": "DAY1 08:00:42"},
          {"start": "DAY1 08:00:10", "end": "DAY1 08:00:11"}], "in time order"),
        ([{"start": "DAY2 09:00:10", "end": "DAY2 09:00:11"}], "between the end of the target"),
    ):  # fmt: skip
        doc["questions"][0]["target"] = target
        with pytest.raises(DatasetError, match=message):
            load_dataset(_write(tmp_path, doc))
    doc["questions"][0]["target"] = {"start": "DAY1 08:00:10", "end": "DAY1 08:00:11"}
    doc["questions"][0]["question_type"] = "colour"
    with pytest.raises(DatasetError, match="question_type 'colour' must be one of location"):
        load_dataset(_write(tmp_path, doc))


def test_accuracy_per_question_type() -> None:
    rows = [
        {"subset": "base", "question_type": "location", "correct": True},
        {"subset": "echo", "question_type": "location", "correct": False},
        {"subset": "echo", "question_type": "identity", "correct": True},
        {"subset": "base", "question_type": "", "correct": True},
    ]
    types = metrics.question_types(rows)
    assert list(types) == ["location", "identity"]
    assert types["location"]["all"] == {"n": 2, "accuracy": 50.0}
    assert types["location"]["echo"] == {"n": 1, "accuracy": 0.0}
    assert types["identity"]["base"] == {"n": 0, "accuracy": None}


def test_a_dialogue_is_asked_after_every_single_turn_question_of_its_time(
    tmp_path: Path,
) -> None:
    """Ids sorted a dialogue (D1:R1) before its parent (Q1) at their shared time, so a system
    that kept R2's question knew the parent was Echo before answering it (a red team's
    EgoProbe cheater: Echo 12.5 -> 37.5 on `small` seed 0 with the same 670 B/hr memory)."""
    from apmbench.harness.suites.egoprobe.plan import plan_video

    dataset = load_dataset(_write(tmp_path, _doc()))
    (segment,) = plan_video(dataset, dataset.trajectories[0])
    assert [a.instance_id for a in segment.asks] == ["Q1", "D1:R1"]
    assert segment.asks[1].follow_up is not None
