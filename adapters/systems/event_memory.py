"""`event-memory`: a hierarchy of captioned events as memory (OASIS/HERMES-style).

Ingest: every frame's pooled visual embedding (the vision encoder's output,
averaged) is compared with the open event's mean; a cosine distance above
`APMBENCH_VLM_EVENT_THRESHOLD` (or `APMBENCH_VLM_MAX_EVENT_FRAMES` frames, or
the session's end) closes the event. A closed event keeps
`APMBENCH_VLM_KEY_FRAMES` key frames (first, last, evenly spaced between, as
the harness sent them), a caption the model writes from them (short greedy
generation) and an embedding (the visual mean plus the caption's text
embedding, each of unit length, summed and normalised). Events roll up into
their session (the captions joined, the mean embedding) and sessions into
their day: event -> session -> day.

Query: the question's text embedding descends the tree: the two most similar
days, then the `APMBENCH_VLM_TOP_K` most similar sessions in them, then the
`APMBENCH_VLM_TOP_K` most similar events in those; the model answers from
those events (caption and key frames, in time order), the current session's
closed events and its open event's recent frames, and the reminders the user
registered earlier.

ExportState is the hierarchy: a one-line JSON index (events with captions and
key-frame sizes, sessions, days, registrations; keys sorted) after a magic
line, then the key frames' bytes, then every node's embedding as float32.
The same memory exports the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from apmbench.adapters.sdk import (
    ExportedState,
    Frame,
    FrameEncoding,
    InvalidArgument,
    Query,
    SessionEnd,
    SessionStart,
    UserTurn,
    UserTurnKind,
)
from apmbench.adapters.systems.vlm_common import VlmSystem
from apmbench.adapters.vlm.backend import VideoLanguageModel
from apmbench.adapters.vlm.memory_settings import MemorySettings
from apmbench.adapters.vlm.prompt import Clip, Part, Prompt, Text
from apmbench.adapters.vlm.settings import PREFIX, VlmConfigError, VlmSettings

if TYPE_CHECKING:
    from apmbench.adapters.vlm.features import Embedder

Vector = npt.NDArray[np.float32]
CONTENT_TYPE = "application/x-apmbench-event-memory"
MAGIC = b"APMBENCH-EVENT-MEMORY 1\n"
CAPTION_SYSTEM = "You describe short first-person video clips for a memory index."
CAPTION_REQUEST = (
    "In one short sentence, say what the camera wearer does and which objects and places "
    "are visible in this clip."
)
TOP_DAYS = 2
RECENT_FRAMES = 4


@dataclass(frozen=True)
class Event:
    session: int
    start_ms: int
    end_ms: int
    frames: int
    caption: str
    key_frames: tuple[Frame, ...]
    embedding: Vector


@dataclass(frozen=True)
class SessionNode:
    index: int
    session_id: str
    day_id: str
    start_ms: int
    end_ms: int
    events: tuple[int, int]
    """[first, last) indices into the event list."""
    summary: str
    embedding: Vector


@dataclass(frozen=True)
class DayNode:
    day_id: str
    sessions: tuple[int, ...]
    embedding: Vector


def unit(vector: npt.NDArray[np.float32]) -> Vector:
    norm = float(np.linalg.norm(vector))
    return (vector / np.float32(norm)).astype(np.float32) if norm > 0 else vector


def mean_unit(vectors: Sequence[Vector]) -> Vector:
    return unit(np.mean(np.stack(vectors), axis=0).astype(np.float32))


def clock(time_ms: int) -> str:
    seconds = (time_ms // 1000) % 86_400
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def key_frame_indices(n: int, k: int) -> list[int]:
    """Up to `k` of `n` frame indices: the first, the last and evenly spaced between."""
    if n <= k:
        return list(range(n))
    if k == 1:
        return [n - 1]
    return sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})


def top(scores: Sequence[float], k: int) -> list[int]:
    """Indices of the `k` highest scores (ties towards the earlier), in index order."""
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return sorted(order[:k])


class EventMemory(VlmSystem):
    name = "event-memory"
    memory = (
        "events detected from visual-embedding change, each with a model caption, key frames and "
        "an embedding, summarised into sessions and days; queries descend day -> session -> event"
    )

    def __init__(
        self,
        settings: VlmSettings | None = None,
        model: VideoLanguageModel | None = None,
        memory_settings: MemorySettings | None = None,
    ) -> None:
        self.options = memory_settings or MemorySettings.from_env()
        self.events: list[Event] = []
        self.sessions: list[SessionNode] = []
        self.days: list[DayNode] = []
        self.registrations: list[tuple[int, str]] = []
        self.open_frames: list[Frame] = []
        self.open_embeddings: list[Vector] = []
        self.session_events_from = 0
        super().__init__(settings, model)
        self.embedder = _embedder(self.model)
        names = ("top_k", "event_threshold", "key_frames", "caption_max_new_tokens")
        self._info = replace(
            self._info,
            details={
                **self._info.details,
                **self.options.record((*names, "max_event_frames")),
            },
        )

    # -- ingest ------------------------------------------------------------------

    def forget(self) -> None:
        self.events = []
        self.sessions = []
        self.days = []
        self.registrations = []
        self.open_frames = []
        self.open_embeddings = []
        self.session_events_from = 0

    def start_session(self, start: SessionStart) -> None:
        super().start_session(start)
        self.open_frames = []
        self.open_embeddings = []
        self.session_events_from = len(self.events)

    def ingest_user_turn(self, turn: UserTurn) -> None:
        super().ingest_user_turn(turn)
        if turn.kind is UserTurnKind.REGISTRATION:
            self.registrations.append((self.session_index, turn.text))

    def ingest_frame(self, frame: Frame) -> None:
        embedding = self.embedder.frame(frame)
        if self.open_frames:
            distance = 1.0 - float(np.dot(mean_unit(self.open_embeddings), embedding))
            full = len(self.open_frames) >= self.options.max_event_frames
            if distance > self.options.event_threshold or full:
                self._close_event()
        self.open_frames.append(frame)
        self.open_embeddings.append(embedding)

    def _close_event(self) -> None:
        if not self.open_frames:
            return
        frames, embeddings = self.open_frames, self.open_embeddings
        self.open_frames, self.open_embeddings = [], []
        keys = tuple(frames[i] for i in key_frame_indices(len(frames), self.options.key_frames))
        caption = self._caption(keys)
        visual = mean_unit(embeddings)
        embedding = unit(visual + self.embedder.text(caption)) if caption else visual
        self.events.append(
            Event(
                self.session_index,
                frames[0].time_ms,
                frames[-1].time_ms,
                len(frames),
                caption,
                keys,
                embedding,
            )
        )

    def _caption(self, keys: tuple[Frame, ...]) -> str:
        origin = self.session.time_ms if self.session is not None else keys[0].time_ms
        prompt = Prompt(CAPTION_SYSTEM, (Clip(keys, origin), Text(CAPTION_REQUEST)))
        text = "".join(self.model.stream(prompt, self.options.caption_max_new_tokens))
        return " ".join(text.split())

    def end_session(self, end: SessionEnd) -> None:
        assert self.session is not None, "the SDK only ends an open session"
        self._close_event()
        first, last = self.session_events_from, len(self.events)
        mine = self.events[first:last]
        summary = " ".join(f"[{clock(e.start_ms)}] {e.caption}" for e in mine)
        dim = self._dim()
        self.sessions.append(
            SessionNode(
                self.session_index,
                self.session.session_id,
                self.session.day_id,
                self.session.time_ms,
                end.time_ms,
                (first, last),
                summary,
                mean_unit([e.embedding for e in mine]) if mine else np.zeros(dim, np.float32),
            )
        )
        self._roll_up_day(self.session.day_id)
        self.session_events_from = len(self.events)
        super().end_session(end)

    def _roll_up_day(self, day_id: str) -> None:
        members = tuple(i for i, s in enumerate(self.sessions) if s.day_id == day_id)
        embedding = mean_unit([self.sessions[i].embedding for i in members])
        node = DayNode(day_id, members, embedding)
        self.days = [d for d in self.days if d.day_id != day_id] + [node]

    def _dim(self) -> int:
        return int(self.embedder.text(" ").shape[0])

    # -- query -------------------------------------------------------------------

    def retrieve(self, question: str) -> list[int]:
        """Event indices reached by descending days -> sessions -> events, in time order."""
        if not self.days:
            return []
        q = self.embedder.text(question)
        k = self.options.top_k
        days = top([float(np.dot(d.embedding, q)) for d in self.days], TOP_DAYS)
        candidates = [s for d in days for s in self.days[d].sessions]
        session_scores = [float(np.dot(self.sessions[s].embedding, q)) for s in candidates]
        sessions = [candidates[i] for i in top(session_scores, k)]
        events = [
            e for s in sessions for e in range(*self.sessions[s].events)
        ]  # already in time order
        event_scores = [float(np.dot(self.events[e].embedding, q)) for e in events]
        return sorted(events[i] for i in top(event_scores, k))

    def context(self, query: Query) -> list[Part]:
        parts: list[Part] = []
        chosen = self.retrieve(query.prompt)
        if chosen:
            parts.append(
                Text(
                    f"Events retrieved from memory of earlier sessions ({len(chosen)} of "
                    f"{self.session_events_from}):"
                )
            )
            for i in chosen:
                parts += self._event_parts(self.events[i])
        earlier = [text for s, text in self.registrations if s < self.session_index]
        if earlier:
            lines = "\n- ".join(earlier)
            parts.append(Text(f"Reminders the user registered in earlier sessions:\n- {lines}"))
        current = self.events[self.session_events_from :]
        if current:
            parts.append(Text("Events of the current session so far:"))
            for event in current:
                parts += self._event_parts(event)
        parts += self.current_clip(
            self.open_frames, RECENT_FRAMES, "The current session's latest frames"
        )
        return parts

    def _event_parts(self, event: Event) -> list[Part]:
        node = self._session_of(event.session)
        day = node.day_id if node is not None else (self.session.day_id if self.session else "")
        origin = node.start_ms if node is not None else event.start_ms
        if node is None and self.session is not None:
            origin = self.session.time_ms
        return [
            Text(
                f"[{day} {clock(event.start_ms)} to {clock(event.end_ms)}, {event.frames} frames] "
                f"{event.caption or '(no caption)'}"
            ),
            Clip(event.key_frames, origin),
        ]

    def _session_of(self, index: int) -> SessionNode | None:
        for node in self.sessions:
            if node.index == index:
                return node
        return None

    # -- state -------------------------------------------------------------------

    def export_state(self) -> ExportedState:
        frames_index = []
        body: list[bytes] = []
        for event in self.events:
            sizes = []
            for f in event.key_frames:
                sizes.append([f.time_ms, f.encoding.value, f.width, f.height, len(f.data)])
                body.append(f.data)
            frames_index.append(sizes)
        vectors = [e.embedding for e in self.events]
        vectors += [s.embedding for s in self.sessions]
        vectors += [d.embedding for d in self.days]
        header = {
            "sessions": self.session_index + 1,
            "dim": int(vectors[0].shape[0]) if vectors else 0,
            "events": [
                {"session": e.session, "start_ms": e.start_ms, "end_ms": e.end_ms,
                 "frames": e.frames, "caption": e.caption, "key_frames": index}
                for e, index in zip(self.events, frames_index, strict=True)
            ],
            "session_nodes": [
                {"index": s.index, "session_id": s.session_id, "day_id": s.day_id,
                 "start_ms": s.start_ms, "end_ms": s.end_ms, "events": list(s.events),
                 "summary": s.summary}
                for s in self.sessions
            ],
            "days": [{"day_id": d.day_id, "sessions": list(d.sessions)} for d in self.days],
            "registrations": [list(r) for r in self.registrations],
        }  # fmt: skip
        line = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        embeddings = b"".join(np.asarray(v, dtype="<f4").tobytes() for v in vectors)
        data = MAGIC + line.encode() + b"\n" + b"".join(body) + embeddings
        return ExportedState(data, CONTENT_TYPE, 1)

    def import_state(self, state: ExportedState) -> None:
        if state.content_type != CONTENT_TYPE or not state.data.startswith(MAGIC):
            raise InvalidArgument(f"{self.name} imports {CONTENT_TYPE}, got {state.content_type}")
        line, _, rest = state.data[len(MAGIC) :].partition(b"\n")
        try:
            header = json.loads(line)
            dim = int(header["dim"])
            offset = 0
            raw_events = []
            for entry in header["events"]:
                frames = []
                for t, encoding, w, h, size in entry["key_frames"]:
                    frames.append(
                        Frame(t, FrameEncoding(encoding), w, h, rest[offset : offset + size])
                    )
                    offset += size
                raw_events.append((entry, tuple(frames)))
            count = len(raw_events) + len(header["session_nodes"]) + len(header["days"])
            width = 4 * dim
            if len(rest) - offset != count * width:
                raise ValueError(
                    f"{len(rest) - offset} bytes of embeddings for {count} vectors of {dim}"
                )
            vectors = [
                np.frombuffer(
                    rest[offset + i * width : offset + (i + 1) * width], dtype="<f4"
                ).astype(np.float32)
                for i in range(count)
            ]
            events = [
                Event(int(e["session"]), int(e["start_ms"]), int(e["end_ms"]), int(e["frames"]),
                      str(e["caption"]), frames, vectors[i])
                for i, (e, frames) in enumerate(raw_events)
            ]  # fmt: skip
            n = len(events)
            sessions = [
                SessionNode(int(s["index"]), str(s["session_id"]), str(s["day_id"]),
                            int(s["start_ms"]), int(s["end_ms"]),
                            (int(s["events"][0]), int(s["events"][1])), str(s["summary"]),
                            vectors[n + i])
                for i, s in enumerate(header["session_nodes"])
            ]  # fmt: skip
            m = n + len(sessions)
            days = [
                DayNode(str(d["day_id"]), tuple(int(x) for x in d["sessions"]), vectors[m + i])
                for i, d in enumerate(header["days"])
            ]
            registrations = [(int(s), str(text)) for s, text in header["registrations"]]
            sessions_seen = int(header["sessions"])
        except (ValueError, KeyError, TypeError, IndexError) as e:
            raise InvalidArgument(f"{self.name} state is not an event-memory export: {e}") from e
        self.events, self.sessions, self.days = events, sessions, days
        self.registrations = registrations
        self.session_index = sessions_seen - 1
        self.session_events_from = len(events)
        self.open_frames, self.open_embeddings = [], []
        self.turns = []


def _embedder(model: VideoLanguageModel) -> Embedder:
    from apmbench.adapters.vlm.qwen import QwenVL

    if not isinstance(model, QwenVL):
        raise VlmConfigError(
            f"event-memory detects events from the vision encoder's embeddings, so it needs the "
            f"local transformers backend: set {PREFIX}BACKEND=transformers and {PREFIX}MODEL to "
            "a Qwen-VL directory"
        )
    from apmbench.adapters.vlm.features import Embedder

    return Embedder(model)
