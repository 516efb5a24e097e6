"""Whether a run's recorded timings could have been measured at all.

The harness times every answer on its own monotonic clock (harness/protocol/client.py):
`ttft_s` is when the first non-empty chunk arrived, `time_to_answer_s` when the chunk that
fixed the parsed answer arrived (one of the chunks, so never before the first), `total_s`
when the stream ended (after its last chunk), `chunks` how many non-empty chunks came.
A record that breaks these relations, or is faster than a gRPC round trip can be, was not
measured by the harness: it was edited (a re-sealed blind submission with its latencies set
to 1e-5 s scored as the fastest system of all).

The bounds are physical, not a judgement of a system's speed: the harness's client needed
181 us for the fastest first token of 3000 queries to a server that answers at once, and
saw streamed chunks arrive at most 36,069 per second (tests/bench/timing_floor.py on two
shared cores; docs/bundles.md). The bounds leave room for hosts an order of magnitude
faster.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from apmbench.harness.protocol.blank import is_blank

MIN_LATENCY_S = 20e-6
"""No recorded answer time (first token, answer, end of stream) may be shorter: 9 times
below the fastest round trip measured through the harness's client."""
MAX_CHUNKS_PER_S = 1_000_000
"""No answer may stream its chunks after the first faster than this: 28 times the fastest
stream measured. The harness counts chunks, not tokens (it knows no tokenizer); a chunk
holds at least one character, so this bounds the token rate too."""
SESSION_TIMES = ("ingest_s", "end_session_s", "load_state_s", "export_s")


@dataclass(frozen=True)
class Flag:
    """One implausible timing: where (`TRAJECTORY/SEGMENT/INSTANCE` or a session) and why."""

    where: str
    problem: str


def _number(value: object) -> float | None:
    """A recorded time as a float; None when it is absent or null."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    return math.nan


def live_flags(row: Mapping[str, object], speed: float) -> list[str]:
    """What a live run's answer records that its own timings contradict: the lag within
    the latency (both from the question's due time), the video time it acted at its time
    plus its latency times the speed, and `late` past its period (harness/run/live.py)."""
    total, lag = _number(row.get("total_s")), _number(row.get("lag_s"))
    at, acted = row.get("time_ms"), row.get("effective_ms")
    if total is None or lag is None or not isinstance(at, int) or not isinstance(acted, int):
        return ["a live answer without its lag_s, total_s, time_ms and effective_ms"]
    out = []
    if not 0 <= lag <= total:
        out.append(f"lag_s {lag:g} s is not within its latency from the due time ({total:g} s)")
    expected = at + round(total * speed * 1000.0)
    if abs(acted - expected) > 1:
        out.append(
            f"effective_ms {acted} is not its time {at} plus its latency {total:g} s at "
            f"{speed:g}x ({expected})"
        )
    period = row.get("period_ms")
    if isinstance(period, int) and row.get("late") is not (acted > at + period):
        out.append(f"late {row.get('late')!r} contradicts acting at {acted} ms, period {period} ms")
    return out


def answer_flags(row: Mapping[str, object], speed: float | None = None) -> list[str]:
    """What is implausible about one answer's timings ([] when nothing is); `speed`: the
    run was played live at it."""
    if row.get("live_dropped") is True:
        # A periodic question the live feed dropped for a newer one: never asked.
        asked = row.get("raw_output") != "" or row.get("total_s") is not None
        return ["a dropped question with an answer"] if asked else []
    ttft, answer, total = (_number(row.get(k)) for k in ("ttft_s", "time_to_answer_s", "total_s"))
    out: list[str] = []
    named = (("ttft_s", ttft), ("time_to_answer_s", answer), ("total_s", total))
    for name, value in named:
        if value is None:
            continue
        if not math.isfinite(value):
            out.append(f"{name} {row.get(name)!r} is not a finite number")
        elif value <= 0:
            out.append(f"{name} {value:g} s is not positive")
        elif value < MIN_LATENCY_S:
            out.append(
                f"{name} {value:g} s is shorter than a gRPC round trip can be "
                f"(bound {MIN_LATENCY_S:g} s)"
            )
    if total is None:
        out.append("no total_s: every answer is timed")
    if out:
        return out
    if ttft is not None and answer is not None and answer < ttft:
        out.append(f"time_to_answer_s {answer:g} s is before its first token ({ttft:g} s)")
    if total is not None and ttft is not None and total < ttft:
        out.append(f"total_s {total:g} s ends before its first token ({ttft:g} s)")
    if total is not None and answer is not None and total < answer:
        out.append(f"total_s {total:g} s ends before the answer arrived ({answer:g} s)")
    text = row.get("raw_output")
    chunks = row.get("chunks")
    if isinstance(chunks, int) and not isinstance(chunks, bool) and isinstance(text, str):
        if chunks < 0 or chunks > len(text) or (chunks == 0 and text):
            out.append(f"{chunks} chunks cannot carry {len(text)} characters (each holds one)")
        elif (ttft is None) != (chunks == 0 or is_blank(text)):
            # The first token is the first chunk with a visible character (R11, blank as the
            # client decides it): an answer of blank chunks only has none.
            out.append(f"{chunks} chunks but a first-token time of {ttft!r}")
        elif chunks > 1 and ttft is not None and total is not None:
            span = total - ttft
            if span <= 0 or (chunks - 1) / span > MAX_CHUNKS_PER_S:
                out.append(
                    f"{chunks - 1} chunks after the first in {span:g} s: faster than "
                    f"{MAX_CHUNKS_PER_S:,} chunks per second"
                )
    if speed is not None:
        out += live_flags(row, speed)
    return out


def session_flags(session: Mapping[str, object]) -> list[str]:
    out = []
    for name in SESSION_TIMES:
        value = _number(session.get(name))
        if value is not None and (not math.isfinite(value) or value < 0):
            out.append(f"{name} {session.get(name)!r} is not a time")
    return out


@dataclass(frozen=True)
class TimingCheck:
    answers: int
    sessions: int
    flags: tuple[Flag, ...]
    fastest_s: float | None
    """The shortest first-token (else total) time of any answer."""


def check_timings(
    records: Iterable[Mapping[str, object]], live_speed: float | None = None
) -> TimingCheck:
    """Every answer and session of `records` (trajectory records: `trajectory_id`,
    `instances`, `sessions`) checked against the relations and bounds above; a live run's
    (played at `live_speed`) against its live fields too."""
    flags: list[Flag] = []
    answers = sessions = 0
    fastest: float | None = None
    for rec in records:
        tid = str(rec.get("trajectory_id"))
        rows = rec.get("instances")
        for row in rows if isinstance(rows, list) else []:
            if not isinstance(row, Mapping):
                continue
            answers += 1
            where = f"{tid}/{row.get('segment')}/{row.get('instance_id')}"
            flags += [Flag(where, p) for p in answer_flags(row, live_speed)]
            first = _number(row.get("ttft_s"))
            first = first if first is not None else _number(row.get("total_s"))
            if first is not None and math.isfinite(first):
                fastest = first if fastest is None else min(fastest, first)
        recorded = rec.get("sessions")
        for session in recorded if isinstance(recorded, list) else []:
            if not isinstance(session, Mapping):
                continue
            sessions += 1
            where = f"{tid}/session {session.get('session_id')}"
            flags += [Flag(where, p) for p in session_flags(session)]
    return TimingCheck(answers, sessions, tuple(flags), fastest)
