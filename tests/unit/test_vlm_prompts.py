"""What each VLM system keeps, exports and puts in front of the model.

The backend here records the prompts it is given and answers a fixed text:
what these tests check is the memory policy and the prompt (which frames,
which summaries, which words, in which order), which a model's output would
not reveal. The real model runs in tests/integration/test_vlm_systems.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import numpy as np
import pytest
import simplejpeg

from apmbench.adapters.sdk import (
    ExportedState,
    Frame,
    FrameEncoding,
    InvalidArgument,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    UserTurn,
    UserTurnKind,
)
from apmbench.adapters.systems.frame_archive import decode_archive
from apmbench.adapters.systems.summary_prompts import text_summary_request, text_summary_writer
from apmbench.adapters.systems.vlm_common import VlmSystem
from apmbench.adapters.systems.vlm_simplestream import VlmSimpleStream
from apmbench.adapters.systems.vlm_text_memory import VlmTextMemory, read_memory
from apmbench.adapters.systems.vlm_video_memory import VlmVideoMemory
from apmbench.adapters.vlm.backend import IncrementalText, VideoLanguageModel
from apmbench.adapters.vlm.prompt import Clip, Prompt, Text, cap_text
from apmbench.adapters.vlm.settings import VlmSettings
from apmbench.harness.suites.apmbench.prompts import SYSTEM_PROMPT

HOUR = 3_600_000
DAY = 24 * HOUR


class RecordingModel(VideoLanguageModel):
    def __init__(self, answer: str = '{"answer":"B"}') -> None:
        self.answer = answer
        self.prompts: list[Prompt] = []

    def identity(self) -> Mapping[str, str]:
        return {"vlm.backend_kind": "recording"}

    def stream(self, prompt: Prompt, max_new_tokens: int) -> Iterator[str]:
        self.prompts.append(prompt)
        yield from (self.answer[i : i + 3] for i in range(0, len(self.answer), 3))


def frame(time_ms: int, shade: int = 0) -> Frame:
    pixels = np.full((48, 64, 3), shade % 256, dtype=np.uint8)
    return Frame(time_ms, FrameEncoding.JPEG, 64, 48, simplejpeg.encode_jpeg(pixels, 90))


def build(cls: type[VlmSystem], model: RecordingModel, **settings: int) -> VlmSystem:
    return cls(VlmSettings(model="/unused", **settings), model)  # type: ignore[arg-type]


def session(
    system: VlmSystem, index: int, start_ms: int, seconds: int, turns: tuple[UserTurn, ...] = ()
) -> None:
    system.start_session(SessionStart("T1", f"S{index:03d}", f"DAY{start_ms // DAY + 1}", start_ms))
    for s in range(seconds):
        system.ingest_frame(frame(start_ms + s * 1000, shade=index * 50 + s))
    for turn in turns:
        system.ingest_user_turn(turn)


def ask(system: VlmSystem, time_ms: int) -> str:
    q = Query(
        "q1", time_ms, QueryKind.MULTIPLE_CHOICE, SYSTEM_PROMPT, "Where is the MUG now?\nA. DESK"
    )
    return "".join(system.query(q))


def texts(prompt: Prompt) -> list[str]:
    return [p.text for p in prompt.parts if isinstance(p, Text)]


def test_simplestream_shows_the_four_latest_frames_and_keeps_nothing() -> None:
    model = RecordingModel()
    system = build(VlmSimpleStream, model)
    start = 8 * HOUR
    session(system, 0, start, 10, (UserTurn(start + 9_000, UserTurnKind.QUESTION, "Which?"),))
    assert ask(system, start + 9_500) == '{"answer":"B"}'
    prompt = model.prompts[-1]
    assert prompt.system == SYSTEM_PROMPT
    [clip] = prompt.clips()
    assert [f.time_ms - start for f in clip.frames] == [6000, 7000, 8000, 9000]
    assert clip.origin_ms == start and clip.seconds() == [6.0, 7.0, 8.0, 9.0]
    words = texts(prompt)
    assert words[0] == "The most recent frames (DAY1 08:00:06 to 08:00:09, 4 of 4 frames):"
    assert "[DAY1 08:00:09] user question: Which?" in words[1]
    assert words[-1] == "Current time: DAY1 08:00:09.500\n\nWhere is the MUG now?\nA. DESK"
    system.end_session(SessionEnd("S000", start + 10_000))
    assert system.export_state().data == b""


def test_video_memory_replays_every_session_within_the_budget_and_exports_the_frames() -> None:
    model = RecordingModel()
    system = build(VlmVideoMemory, model, max_frames=12)
    first, second = 8 * HOUR, DAY + 9 * HOUR
    session(
        system,
        0,
        first,
        20,
        (UserTurn(first + 5_000, UserTurnKind.REGISTRATION, "Remind me of the LAMP"),),
    )
    system.end_session(SessionEnd("S000", first + 20_000))
    snapshot = system.export_state()
    session(system, 1, second, 10)
    ask(system, second + 9_500)
    prompt = model.prompts[-1]
    earlier, current = prompt.clips()
    assert len(earlier.frames) + len(current.frames) <= 12
    assert [f.time_ms - second for f in current.frames][-4:] == [6000, 7000, 8000, 9000]
    assert earlier.origin_ms == first and current.origin_ms == second
    words = texts(prompt)
    assert words[0].startswith("An earlier session (DAY1 08:00:00 to 08:00:19, ")
    assert words[1] == "Reminders the user registered in earlier sessions:\n- Remind me of the LAMP"
    assert words[2].startswith("The current session so far (DAY2 09:00:00 to 09:00:09, ")
    # Exported: every frame as received, in frame-archive's format.
    frames, registrations, sessions = decode_archive(snapshot, "test")
    assert len(frames) == 20 and sessions == 1 and registrations == [(0, "Remind me of the LAMP")]
    jpeg = sum(len(f.data) for _, f in frames)
    assert jpeg < len(snapshot.data) < jpeg + 2000
    # A fresh system given the snapshot builds the very same prompt in the next session.
    again_model = RecordingModel()
    again = build(VlmVideoMemory, again_model, max_frames=12)
    again.import_state(snapshot)
    assert again.export_state() == snapshot
    session(again, 1, second, 10)
    ask(again, second + 9_500)
    assert again_model.prompts[-1] == prompt


def test_text_memory_writes_e5_summaries_and_keeps_only_them() -> None:
    model = RecordingModel('```json\n{"memory": "I left the MUG at the DESK."}\n```')
    system = build(VlmTextMemory, model, max_frames=8)
    start = 8 * HOUR
    session(
        system, 0, start, 20, (UserTurn(start + 3_000, UserTurnKind.REGISTRATION, "Remind me"),)
    )
    system.end_session(SessionEnd("S000", start + 60_000))
    writer = model.prompts[-1]
    assert writer.system == text_summary_writer()
    assert texts(writer)[-1] == text_summary_request("DAY1", "S000", "08:00:00", "08:01:00")
    assert "user reminder request: Remind me" in texts(writer)[1]
    [clip] = writer.clips()
    assert len(clip.frames) == 8 and clip.frames[-1].time_ms == start + 19_000
    state = system.export_state()
    document = json.loads(state.data)
    assert document["summaries"] == [
        {
            "session_id": "S000",
            "day_id": "DAY1",
            "start": "08:00:00",
            "end": "08:01:00",
            "memory": "I left the MUG at the DESK.",
            "parsed": True,
        }
    ]
    # The next session sees the summary and its own frames, never the earlier frames.
    session(system, 1, DAY + 9 * HOUR, 5)
    ask(system, DAY + 9 * HOUR + 4_500)
    prompt = model.prompts[-1]
    assert "[DAY1 08:00:00-08:01:00, session S000]\nI left the MUG at the DESK." in texts(prompt)[0]
    [clip] = prompt.clips()
    assert all(f.time_ms >= DAY + 9 * HOUR for f in clip.frames)
    restored = build(VlmTextMemory, RecordingModel(), max_frames=8)
    restored.import_state(state)
    assert restored.export_state() == state


def test_text_memory_keeps_an_answer_without_json_and_refuses_foreign_state() -> None:
    system = build(VlmTextMemory, RecordingModel("the user cooked"))
    session(system, 0, 8 * HOUR, 3)
    system.end_session(SessionEnd("S000", 8 * HOUR + 3_000))
    summary = json.loads(system.export_state().data)["summaries"][0]
    assert (summary["memory"], summary["parsed"]) == ("the user cooked", False)
    with pytest.raises(InvalidArgument, match="imports application/x-apmbench-vlm-text-memory"):
        system.import_state(ExportedState(b"{}", "text/plain", 1))
    with pytest.raises(InvalidArgument, match="not a apmbench-vlm-text-memory document"):
        system.import_state(ExportedState(b"[]", "application/x-apmbench-vlm-text-memory+json", 1))


@pytest.mark.parametrize(
    "answer,memory,parsed",
    [
        ('{"memory":"a"}', "a", True),
        ('Sure! {"memory": " b "} Done.', "b", True),
        ('{"summary":"c"}', '{"summary":"c"}', False),
        ('{"memory": 3}', '{"memory": 3}', False),
        ("  plain  ", "plain", False),
    ],
)
def test_read_memory(answer: str, memory: str, parsed: bool) -> None:
    assert read_memory(answer) == (memory, parsed)


def test_incremental_text_waits_only_for_complete_characters() -> None:
    stream = IncrementalText(lambda ids: bytes(ids).decode("utf-8", errors="replace"))
    pieces = [stream.push(b) for b in '{"a":"é"}'.encode()]
    assert pieces[:5] == ["{", '"', "a", '"', ":"]
    assert "".join(pieces) + stream.flush() == '{"a":"é"}'
    assert "" in pieces  # the first byte of é alone
    assert stream.flush() == ""


def test_cap_text_cuts_at_the_limit_and_closes_the_source() -> None:
    closed = []

    def source() -> Iterator[str]:
        try:
            yield from ["abc", "def", "ghi"]
        finally:
            closed.append(True)

    assert "".join(cap_text(source(), 5)) == "abcde" and closed == [True]
    assert "".join(cap_text(source(), 0)) == "abcdefghi"


def test_clip_seconds_are_relative_to_its_origin() -> None:
    assert Clip((frame(5000), frame(7500)), 4000).seconds() == [1.0, 3.5]
