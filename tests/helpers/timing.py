"""The record fields that depend on wall-clock time: left out when two runs are compared."""

TIMING = frozenset(
    {
        "ttft_s",
        "total_s",
        "ingest_s",
        "rtf",
        "end_session_s",
        "load_state_s",
        "export_s",
        "time_to_answer_s",
        "arrivals_s",
    }
)
