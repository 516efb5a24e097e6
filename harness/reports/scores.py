"""A number of a headline table together with where it was read, for the leaderboard.

A suite's compare and report code shows its numbers as formatted strings. The
leaderboard (`apmbench-grpc leaderboard`) publishes the same strings, and
beside each one the value it was formatted from and the JSON pointer
(RFC 6901) of that value in the run's report.json or manifest.json, e.g.
`report.json#/overall/score`: whoever doubts a number can look it up in the
run directory or bundle it came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from apmbench.harness.reports.format import NOT_COMPUTED, num, size

REPORT = "report.json"
MANIFEST = "manifest.json"

Value = float | int | bool | None
"""A number as a table shows it (a capability is a yes/no fact of the manifest)."""


@dataclass(frozen=True)
class Score:
    """One cell of a headline table: as shown, and the value with where it was read."""

    shown: str
    value: Value
    field: str | None
    """JSON pointer of `value` in the run's files (`report.json#/overall/score`); None: the
    suite computed it from several fields (`ReportFormat.headline`)."""


@dataclass(frozen=True)
class ScoreRow:
    """One run's row of one of its suite's headline tables (the method column left out)."""

    table: str
    """The table's title; rows with the same title form one table."""
    header: tuple[str, ...]
    cells: tuple[Score, ...]


def pointer(file: str, *keys: str) -> str:
    """`file#/key/key...`, each key escaped as RFC 6901 says (`~` -> `~0`, `/` -> `~1`)."""
    return f"{file}#/" + "/".join(k.replace("~", "~0").replace("/", "~1") for k in keys)


def resolve(docs: Mapping[str, object], field: str) -> object:
    """The value `field` points at in `docs` (file name -> parsed JSON); None when a key
    on the way is missing (a report older than the field, a level not played)."""
    file, _, path = field.partition("#/")
    node = docs.get(file)
    for raw in path.split("/") if path else []:
        key = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def number(value: object) -> Value:
    """`value` if it is a number or a yes/no, else None (a table never shows a dict)."""
    return value if isinstance(value, bool | int | float) else None


def scores(
    docs: Mapping[str, object], shown: Sequence[str], fields: Sequence[str]
) -> tuple[Score, ...]:
    """The cells of a row the suite already formats (`shown`), each with the value its
    `field` points at; the two lists go in the same order."""
    return tuple(
        Score(text, number(resolve(docs, field)), field)
        for text, field in zip(shown, fields, strict=True)
    )


def ttft_score(report: Mapping[str, object]) -> Score:
    """The mean time to first token, as every suite's cost line shows it."""
    field = pointer(REPORT, "latency", "time_to_first_token_s", "mean")
    value = number(resolve({REPORT: report}, field))
    return Score(num(value, 3), value, field)


def answer_score(report: Mapping[str, object]) -> Score:
    """The mean time to answer: when the streamed prefix first determined the parsed
    answer. Shown beside TTFT because a first chunk sent before the model ran (`{`) buys
    TTFT, not this."""
    field = pointer(REPORT, "latency", "time_to_answer_s", "mean")
    try:
        value = number(resolve({REPORT: report}, field))
    except (KeyError, TypeError):  # a report scored before time to answer was recorded
        value = None
    if value is None:  # no parsed answers to time (ProactEgoMem's steps): the stream's end
        field = pointer(REPORT, "latency", "full_response_s", "mean")
        value = number(resolve({REPORT: report}, field))
    return Score(num(value, 3), value, field)


def storage_score(report: Mapping[str, object], verified: bool) -> Score:
    """Storage/hr (Eq. 2), marked unverified as APM-Bench's Table 3 marks it when the run's
    persistence let the process keep memory outside its exports."""
    field = pointer(REPORT, "storage", "storage_per_hour_bytes")
    value = number(resolve({REPORT: report}, field))
    if value is None:
        return Score(NOT_COMPUTED, None, field)
    shown = size(value) + "/hr"
    return Score(shown if verified else shown + " (unverified)", value, field)
