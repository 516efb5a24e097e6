"""frame-archive whose every answer is one sentence of prose around the option it picked
("I am fairly sure it is B."): readable only by deterministic repair, so the default scoring
counts it as frame-archive's answer and `--strict-answers` as a format failure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace

from apmbench.adapters.sdk import Query, SystemInfo
from apmbench.adapters.systems.frame_archive import FrameArchive


class ProseFrameArchive(FrameArchive):
    def describe(self) -> SystemInfo:
        return replace(super().describe(), name="prose-frame-archive")

    def query(self, query: Query) -> Iterator[str]:
        text = "".join(super().query(query))
        try:
            answer = json.loads(text).get("answer")
        except (ValueError, AttributeError):
            answer = None
        yield text if not isinstance(answer, str) else f"I am fairly sure it is {answer}."
