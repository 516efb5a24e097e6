"""The fixed scenario the checks play: two short sessions, a registration, three probe queries.

The frames are drawn by the synthetic benchmark's renderer, so a system that
reads pixels sees real content (places, objects, a fixture that opens) and
its answers can depend on its memory: in session 1 the wearer puts the MUG
down at the DESK and registers a reminder; session 2, the next day, happens
in the KITCHEN and asks where the MUG is, which object was put down on DAY1,
and whether to remind the wearer now that the FRIDGE opened. Prompts are the
benchmark's own (harness.prompts), so the answers are held to the formats a
real run expects.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import av
import numpy as np
import numpy.typing as npt
import simplejpeg

from apmbench.adapters.perception.layout import Scene, SlotView
from apmbench.adapters.sdk.types import (
    AnswerFormat,
    Choice,
    Frame,
    FrameEncoding,
    Query,
    QueryKind,
    SessionEnd,
    SessionStart,
    StreamItem,
    SystemInfo,
    UserTurn,
    UserTurnKind,
)
from apmbench.harness.media.frames import to_rgb24
from apmbench.harness.media.timecode import format_ms, to_ms
from apmbench.harness.protocol.client import QueryResult, SystemClient
from apmbench.harness.suites.apmbench import prompts
from apmbench.harness.suites.apmbench.answer_formats import format_of, schema_text
from apmbench.harness.synthetic.render import render

Image = npt.NDArray[np.uint8]
DEFAULT_SIDE = 448
"""The frame side used when a system declares no preferred size (0 = as decoded)."""


@dataclass(frozen=True)
class SessionScript:
    session_id: str
    day_id: str
    start_ms: int
    seconds: int
    scenes: tuple[tuple[int, Scene], ...]
    """(from second, scene): each frame shows the last scene whose second has come."""
    turns: tuple[UserTurn, ...] = ()

    @property
    def end_ms(self) -> int:
        return self.start_ms + self.seconds * 1000

    def scene_at(self, second: int) -> Scene:
        return [scene for start, scene in self.scenes if start <= second][-1]


def _slots(*views: tuple[str, str, int]) -> tuple[SlotView, ...]:
    return tuple(SlotView(*v) for v in views)


_EMPTY = ("", "", 0)
_S1 = to_ms("DAY1", "08:00:00")
_S2 = to_ms("DAY2", "09:00:00")
REGISTRATION = "Next time I open the FRIDGE, remind me to take the BOTTLE."


def _desk(mug_on_desk: bool) -> Scene:
    mug = ("MUG", "", 1) if mug_on_desk else _EMPTY
    slots = _slots(("LAMP", "ON", 1), mug, _EMPTY, ("PEN", "", 3))
    return Scene("", "DESK", "GATE 12", slots, "" if mug_on_desk else "MUG")


def _kitchen(fridge: str) -> Scene:
    slots = _slots(("FRIDGE", fridge, 1), _EMPTY, _EMPTY, ("APPLE", "", 2))
    return Scene("", "KITCHEN", "BUS 40", slots, "")


_MARKER_MS = _S2 + 1000
DELAYED_QUESTION = "Which object will I take out of the FRIDGE?"
DELAYED_CHOICES = (
    Choice("A", "BOTTLE"), Choice("B", "APPLE"), Choice("C", "MUG"), Choice("D", "PEN"),
)  # fmt: skip
"""The delayed-answer question session 2 opens with; the delayed-answer checkpoint asks about it."""
SESSION_1 = SessionScript(
    "S1",
    "DAY1",
    _S1,
    6,
    ((0, _desk(mug_on_desk=False)), (3, _desk(mug_on_desk=True))),
    (UserTurn(_S1 + 2500, UserTurnKind.REGISTRATION, REGISTRATION),),
)
SESSION_2 = SessionScript(
    "S2",
    "DAY2",
    _S2,
    6,
    ((0, _kitchen("SHUT")), (3, _kitchen("OPEN"))),
    (
        UserTurn(
            _S2 + 500,
            UserTurnKind.QUESTION,
            prompts.era_question(DELAYED_QUESTION, DELAYED_CHOICES),
        ),
        UserTurn(
            _MARKER_MS,
            UserTurnKind.INTERVAL_MARKER,
            prompts.interval_marker(format_ms(_MARKER_MS)),
        ),
    ),
)
PROBE_TIME_MS = _S2 + 5500
"""When the probe queries are asked in session 2 (after its last frame)."""


def probe_queries() -> list[Query]:
    """Multiple choice, five-option evidence availability, an interval decision probe and
    the checkpoint of the delayed-answer question (a decision naming an option): one query
    per answer format of protocol 1.1."""
    where = (
        Choice("A", "KITCHEN"),
        Choice("B", "DESK"),
        Choice("C", "SHELF"),
        Choice("D", "HALLWAY"),
    )
    mc_question = "Where is the MUG now?"
    which = (
        Choice("A", "MUG"), Choice("B", "KEYS"), Choice("C", "BOOK"), Choice("D", "PHONE"),
        Choice("E", "Not answerable now: the evidence needed is not available"),
    )  # fmt: skip
    ea_question = "On DAY1, I put one object down at the DESK. Which object was it?"
    start = _MARKER_MS
    return [
        query(QueryKind.MULTIPLE_CHOICE, prompts.mcqa(mc_question, where), mc_question, where),
        query(
            QueryKind.EVIDENCE_AVAILABILITY,
            prompts.evidence_availability(ea_question, which),
            ea_question,
            which,
        ),
        query(
            QueryKind.DECISION,
            prompts.example_decision_probe(format_ms(start), format_ms(PROBE_TIME_MS)),
            interval_start_ms=start,
        ),
        query(
            QueryKind.DECISION,
            prompts.era_probe(),
            answer_format=AnswerFormat.DECISION_WITH_OPTION,
            schema_choices=DELAYED_CHOICES,
        ),
    ]


def query(
    kind: QueryKind,
    prompt: str,
    question: str = "",
    choices: Sequence[Choice] = (),
    *,
    time_ms: int = PROBE_TIME_MS,
    interval_start_ms: int | None = None,
    answer_format: AnswerFormat | None = None,
    schema_choices: Sequence[Choice] = (),
) -> Query:
    """A query with a fresh id, as the harness sends them (ids are never reused).
    `schema_choices`: options the answer schema lists that the query itself does not carry
    (those of an earlier question)."""
    answer_format = answer_format or format_of(kind)
    return Query(
        query_id=uuid.uuid4().hex,
        time_ms=time_ms,
        kind=kind,
        system_prompt=prompts.SYSTEM_PROMPT,
        prompt=prompt,
        question=question,
        choices=tuple(choices),
        interval_start_ms=interval_start_ms,
        answer_format=answer_format,
        answer_schema=schema_text(answer_format, schema_choices or choices),
    )


def renewed(q: Query, time_ms: int | None = None) -> Query:
    """The same query under a fresh id (and optionally another time)."""
    return replace(q, query_id=uuid.uuid4().hex, time_ms=q.time_ms if time_ms is None else time_ms)


# -- frames ---------------------------------------------------------------------


def probe_encoding(info: SystemInfo) -> FrameEncoding:
    """JPEG when declared (what runs send by default), else the system's first choice."""
    accepted = info.capabilities.frame_encodings
    return FrameEncoding.JPEG if FrameEncoding.JPEG in accepted else accepted[0]


def fit(rgb: Image, max_side: int) -> Image:
    """Resize keeping aspect so neither side exceeds `max_side`, as the harness does."""
    height, width = rgb.shape[:2]
    if max_side <= 0 or max(width, height) <= max_side:
        return rgb
    scale = max_side / max(width, height)
    return resize(rgb, max(1, round(width * scale)), max(1, round(height * scale)))


def resize(rgb: Image, width: int, height: int) -> Image:
    """The picture scaled to width x height by the same scaler as the harness's frames."""
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
    return to_rgb24(frame, width, height)


def encode(rgb: Image, time_ms: int, encoding: FrameEncoding) -> Frame:
    height, width = rgb.shape[:2]
    if encoding is FrameEncoding.RGB24:
        data = np.ascontiguousarray(rgb).tobytes()
    else:
        data = bytes(
            simplejpeg.encode_jpeg(np.ascontiguousarray(rgb), quality=90, colorspace="RGB")
        )
    return Frame(time_ms, encoding, width, height, data)


def noise(width: int, height: int, seed: int) -> Image:
    """Pixels that do not compress: the largest frames of their size in any encoding."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (height, width, 3), dtype=np.uint8, endpoint=False)


def session_items(
    script: SessionScript, info: SystemInfo, until_ms: int | None = None
) -> list[StreamItem]:
    """Frames at 1 fps and the user turns of `script`, in time order (frames first at a tie)."""
    side = info.capabilities.preferred_max_side or DEFAULT_SIDE
    encoding = probe_encoding(info)
    items: list[tuple[int, int, StreamItem]] = []
    for second in range(script.seconds):
        t = script.start_ms + second * 1000
        scene = script.scene_at(second)
        clocked = Scene(format_ms(t), scene.place, scene.screen, scene.slots, scene.hand)
        items.append((t, 0, encode(fit(render(clocked), side), t, encoding)))
    items += [(turn.time_ms, 1, turn) for turn in script.turns]
    items.sort(key=lambda x: (x[0], x[1]))
    return [item for t, _, item in items if until_ms is None or t <= until_ms]


# -- playing the scenario ------------------------------------------------------


def start(client: SystemClient, trajectory_id: str, script: SessionScript) -> None:
    client.start_session(
        SessionStart(trajectory_id, script.session_id, script.day_id, script.start_ms)
    )


def end(client: SystemClient, script: SessionScript) -> None:
    client.end_session(SessionEnd(script.session_id, script.end_ms))


def play(client: SystemClient, trajectory_id: str, script: SessionScript, info: SystemInfo) -> None:
    """A whole session: start, every frame and turn, end."""
    start(client, trajectory_id, script)
    client.push(session_items(script, info))
    end(client, script)


def ask(client: SystemClient, queries: Iterable[Query]) -> list[QueryResult]:
    """Each query under a fresh id, in order."""
    return [client.query(renewed(q)) for q in queries]
