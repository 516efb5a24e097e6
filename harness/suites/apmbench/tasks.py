"""The twelve APM-Bench tasks and Evidence Availability: one table, read everywhere.

Every place that treats tasks differently (loading an annotation, planning
its replays, asking it, grading it, scoring it) looks the task up here
instead of naming tasks, so a task's behaviour is written once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from apmbench.adapters.sdk.types import QueryKind


class Shape(enum.Enum):
    """How the annotation reads (paper appendix D) and how its probes are built."""

    MCQA = "mcqa"  # D.3: one question, four options, asked once
    EVIDENCE = "evidence"  # D.8: five options incl. "evidence unavailable"
    HEARTBEAT = "heartbeat"  # D.4/D.5: one positive and several negative heartbeats
    WINDOW = "window"  # D.6/D.7: interval windows, each probed with its own marker


class Fork(enum.Enum):
    """Where the task's probes run (paper section 3.3)."""

    MAIN = "main"  # asked at its time in the main pass
    PER_CANDIDATE = "per_candidate"  # one fork per candidate, all its probes on it
    # One fork per probe, all from the candidate's fork point: "treating each
    # probe as an independent runtime instance" (section 3.3), so one probe's
    # answer cannot shape the next one's.
    PER_PROBE = "per_probe"
    RECENT_SESSIONS = "recent_sessions"  # empty memory + the two most recent sessions


class Metric(enum.Enum):
    ACCURACY = "accuracy"  # MCQA accuracy
    GATED_JUDGE = "gated_judge"  # decision gate, then the LLM judge (Eq. 1)
    EVIDENCE_AVAILABILITY = "evidence_availability"  # EA / EU / balanced


@dataclass(frozen=True)
class TaskSpec:
    task: str
    family: str | None
    """None: reported on its own (Evidence Availability)."""
    shape: Shape
    fork: Fork
    metric: Metric
    query_kind: QueryKind
    needs_option: bool = False
    """An INTERVENE decision must also name an option (ERA)."""
    registration: bool = False
    """The annotation registers a reminder before its probes (RCR, PRM)."""
    interval_probe: bool = False
    """Probes ask about an interval opened by their own marker (MPA, PRM, TPG)."""


_CSU, _RTP, _AR = "cross_session_understanding", "real_time_perception", "adaptive_response"
_MC, _DEC = QueryKind.MULTIPLE_CHOICE, QueryKind.DECISION


def _mcqa(task: str, family: str) -> TaskSpec:
    return TaskSpec(task, family, Shape.MCQA, Fork.MAIN, Metric.ACCURACY, _MC)


TABLE: tuple[TaskSpec, ...] = (
    _mcqa("ER", _CSU),
    _mcqa("EST", _CSU),
    _mcqa("TR", _CSU),
    _mcqa("ACR", _RTP),
    _mcqa("CT", _RTP),
    _mcqa("OCR", _RTP),
    _mcqa("STU", _RTP),
    TaskSpec(
        "ERA", _AR, Shape.HEARTBEAT, Fork.PER_PROBE, Metric.GATED_JUDGE, _DEC, needs_option=True
    ),
    TaskSpec(
        "RCR", _AR, Shape.HEARTBEAT, Fork.PER_PROBE, Metric.GATED_JUDGE, _DEC, registration=True
    ),
    TaskSpec(
        "MPA", _AR, Shape.WINDOW, Fork.PER_PROBE, Metric.GATED_JUDGE, _DEC, interval_probe=True
    ),
    TaskSpec(
        "PRM",
        _AR,
        Shape.WINDOW,
        Fork.PER_PROBE,
        Metric.GATED_JUDGE,
        _DEC,
        registration=True,
        interval_probe=True,
    ),
    TaskSpec(
        "TPG", _AR, Shape.WINDOW, Fork.PER_PROBE, Metric.GATED_JUDGE, _DEC, interval_probe=True
    ),
    TaskSpec(
        "EA",
        None,
        Shape.EVIDENCE,
        Fork.RECENT_SESSIONS,
        Metric.EVIDENCE_AVAILABILITY,
        QueryKind.EVIDENCE_AVAILABILITY,
    ),
)
SPECS: dict[str, TaskSpec] = {s.task: s for s in TABLE}

FAMILIES: dict[str, tuple[str, ...]] = {}
for _spec in TABLE:
    if _spec.family is not None:
        FAMILIES.setdefault(_spec.family, ())
        FAMILIES[_spec.family] += (_spec.task,)
FAMILY_SHORT = {_CSU: "CSU", _RTP: "RTP", _AR: "AR"}
FAMILY_OF = {s.task: s.family for s in TABLE if s.family is not None}
MCQA_TASKS = tuple(s.task for s in TABLE if s.metric is Metric.ACCURACY)
ADAPTIVE_TASKS = tuple(s.task for s in TABLE if s.metric is Metric.GATED_JUDGE)
EVIDENCE_AVAILABILITY = next(s.task for s in TABLE if s.metric is Metric.EVIDENCE_AVAILABILITY)
ALL_TASKS = tuple(s.task for s in TABLE)
# The main probes: Table 11's format-failure denominator and the latency means
# are over these; Evidence Availability is reported on its own.
MAIN_TASKS = (*MCQA_TASKS, *ADAPTIVE_TASKS)


def spec(task: str) -> TaskSpec:
    return SPECS[task]
