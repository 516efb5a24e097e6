"""What of ProactEgoMem's events a public part of `apmbench-grpc split` shows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any


def _leaves(obj: object) -> Iterator[object]:
    """Every key, string and number in `obj`."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _leaves(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _leaves(v)
    else:
        yield obj


def _names(word: str, text: str) -> bool:
    """Whether `text` names `word`: equal, one of its words, or (a long id) inside it."""
    return (
        word == text
        or word in re.split(r"[^A-Za-z0-9]+", text)
        or (len(word) >= 8 and word in text)
    )


def proactegomem_event_leaks(public: dict[str, Any], private: dict[str, Any]) -> list[str]:
    """Every labelled event's id, object, state, location and times, searched in each public
    clip outside what a run must show: the questions' wording and choices may name an object
    or a place (they ask about it), and a clip's length may equal an event's end."""
    found = []
    for clip in public["clips"]:
        rest = {k: v for k, v in clip.items() if k not in ("questions", "duration_s")}
        labelled = next(c for c in private["clips"] if c["clip_id"] == clip["clip_id"])
        events = labelled["events"]
        assert events, "a clip without events shows nothing to look for"
        words = {e[k] for e in events for k in ("event_id", "object", "state", "location")
                 if e.get(k)}  # fmt: skip
        times = {float(e[k]) for e in events for k in ("start_s", "end_s")}
        shown = list(_leaves(rest))
        strings = [s for s in shown if isinstance(s, str)]
        numbers = {
            float(n) for n in shown if isinstance(n, int | float) and not isinstance(n, bool)
        }
        found += sorted(
            f"{clip['clip_id']}: {w}" for w in words if any(_names(w, s) for s in strings)
        )
        found += sorted(f"{clip['clip_id']}: {t} s" for t in times & numbers)
    return found
