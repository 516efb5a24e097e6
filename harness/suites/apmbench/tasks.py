"""The twelve APM-Bench tasks, their families and how each is asked."""

from __future__ import annotations

FAMILIES: dict[str, tuple[str, ...]] = {
    "cross_session_understanding": ("ER", "EST", "TR"),
    "real_time_perception": ("ACR", "CT", "OCR", "STU"),
    "adaptive_response": ("ERA", "RCR", "MPA", "PRM", "TPG"),
}
FAMILY_SHORT = {
    "cross_session_understanding": "CSU",
    "real_time_perception": "RTP",
    "adaptive_response": "AR",
}
MCQA_TASKS = FAMILIES["cross_session_understanding"] + FAMILIES["real_time_perception"]
ADAPTIVE_TASKS = FAMILIES["adaptive_response"]
EVIDENCE_AVAILABILITY = "EA"
ALL_TASKS = (*MCQA_TASKS, *ADAPTIVE_TASKS, EVIDENCE_AVAILABILITY)
# Tasks whose candidates inject user turns and so run as isolated forks.
FORKED_TASKS = ADAPTIVE_TASKS
FAMILY_OF = {task: family for family, tasks in FAMILIES.items() for task in tasks}
