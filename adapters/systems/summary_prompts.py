"""The text-summary memory protocol's prompts (APM-Bench, appendix E.5), verbatim.

They belong to the memory system, not to the benchmark: a text-summary memory
writes its own session memory with them. The harness's prompt tests compare
them with the paper's text.
"""

from __future__ import annotations

TEXT_SUMMARY_WRITER = (
    "You maintain query-agnostic persistent memory for a first-person streaming video "
    "assistant.\n\n"
    "Observe this complete session and the user interactions that occur during it. After the "
    "session ends, write a detailed, self-contained memory of information that may remain useful "
    "in later sessions. The original session will not be available then.\n\n"
    "Decide what to retain and how to organize it without anticipating any future evaluation "
    "question. Preserve events, entities, states, locations, task progress, corrections, "
    "preferences, and registered obligations when they are visually or explicitly supported. Do "
    "not invent details; preserve uncertainty when needed.\n\n"
    "Return exactly one valid JSON object in this format:\n"
    '{{"memory":"A detailed, self-contained memory of the session."}}'
)

TEXT_SUMMARY_REQUEST = (
    "Session metadata:\n"
    "- day: {day_id}\n"
    "- session: {session_id}\n"
    "- wall-clock interval: [{start_time}, {end_time})\n\n"
    "The session has ended. Write its persistent memory now."
)


def text_summary_writer() -> str:
    """E.5 writer instruction: given to a text-summary memory before it watches a session."""
    return TEXT_SUMMARY_WRITER.format()


def text_summary_request(day_id: str, session_id: str, start_time: str, end_time: str) -> str:
    """E.5 session-end request; times as "HH:MM:SS" on the session's day."""
    return TEXT_SUMMARY_REQUEST.format(
        day_id=day_id, session_id=session_id, start_time=start_time, end_time=end_time
    )
