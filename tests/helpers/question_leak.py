"""The red team's question-time attack: from what arrives on the wire alone, predict whether
a question follows a push (before the next push). A system that could tell would do its
query work in that push and show a time to first token near zero.

Each push of a recorded run (tests/helpers/wire_recorder.py) becomes a row of what a server
has seen by its end: the user turns in it and in the pushes before it, the video time since
the last user turn (of any kind, and of each kind), its place in its segment and session,
its number of items, its video-time span and the gap before it, and the wall-clock gap
before it. What a process sees starts at a Reset: in `restart` mode that is a fresh process.
A tree is trained on one run and tested on another (another dataset); at chance its
balanced accuracy is 0.5.
"""

from __future__ import annotations

from collections.abc import Sequence

from helpers.wire_recorder import Call

TURN_KINDS = ("question", "registration", "interval_marker")
FEATURES = (
    "items",
    *(f"{k}_in_push" for k in TURN_KINDS),
    *(f"{k}_in_previous_push" for k in TURN_KINDS),
    *(f"{k}_in_session_before" for k in TURN_KINDS),
    "s_since_turn",
    *(f"s_since_{k}" for k in TURN_KINDS),
    "s_since_turn_at_start",
    "push_in_segment",
    "push_in_session",
    "s_into_session",
    "span_s",
    "gap_s",
    "after_query",
    "wall_gap_s",
)
NEVER = -1.0
"""A time since something that has not happened in this process."""


def rows(calls: Sequence[Call], wall_clock: bool = True) -> tuple[list[list[float]], list[int]]:
    """One row of features per push and its label: 1 if a query follows before the next push."""
    features: list[list[float]] = []
    labels: list[int] = []
    last_turn: dict[str, int] = {}
    session_turns: dict[str, int] = {}
    previous: dict[str, int] = {}
    push_in_segment = push_in_session = 0
    session_start = 0
    last_item: int | None = None
    previous_rpc = ""
    previous_end: float | None = None
    pending: int | None = None  # the row of the last push, until its label is known
    for call in calls:
        if call.rpc == "Query" and pending is not None:
            labels[pending] = 1
        if call.rpc in ("Push", "Query"):
            pending = None
        if call.rpc == "Reset":
            last_turn, session_turns, previous = {}, {}, {}
            push_in_segment, last_item = 0, None
        elif call.rpc == "StartSession":
            session_turns, previous = {}, {}
            push_in_session = 0
            session_start = call.time_ms or 0
        elif call.rpc == "Push" and call.items:
            first, last = call.items[0].time_ms, call.items[-1].time_ms
            kinds = [i.kind for i in call.items]
            turn_at_start = max(last_turn.values(), default=None)
            for item in call.items:
                if item.kind != "frame":
                    last_turn[item.kind] = item.time_ms
            latest_turn = max(last_turn.values(), default=None)

            def since(at: int | None, now: int = last) -> float:
                return NEVER if at is None else (now - at) / 1000

            row = [
                float(len(call.items)),
                *(float(kinds.count(k)) for k in TURN_KINDS),
                *(float(previous.get(k, 0)) for k in TURN_KINDS),
                *(float(session_turns.get(k, 0)) for k in TURN_KINDS),
                since(latest_turn),
                *(since(last_turn.get(k)) for k in TURN_KINDS),
                since(turn_at_start, first),
                float(push_in_segment),
                float(push_in_session),
                (last - session_start) / 1000,
                (last - first) / 1000,
                NEVER if last_item is None else (first - last_item) / 1000,
                float(previous_rpc == "Query"),
                (call.started_s - previous_end) if wall_clock and previous_end else 0.0,
            ]
            features.append(row)
            labels.append(0)
            pending = len(labels) - 1
            previous = {k: kinds.count(k) for k in TURN_KINDS}
            for k in TURN_KINDS:
                session_turns[k] = session_turns.get(k, 0) + kinds.count(k)
            push_in_segment += 1
            push_in_session += 1
            last_item = last
        previous_rpc = call.rpc
        previous_end = call.ended_s
    return features, labels


def held_out_balanced_accuracy(
    train: tuple[list[list[float]], list[int]],
    test: tuple[list[list[float]], list[int]],
    depth: int,
) -> float:
    """A tree of `depth` (classes weighted to balance) trained on `train` predicts `test`."""
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.tree import DecisionTreeClassifier

    tree = DecisionTreeClassifier(max_depth=depth, class_weight="balanced", random_state=0)
    tree.fit(train[0], train[1])
    return float(balanced_accuracy_score(test[1], tree.predict(test[0])))


def explain(train: tuple[list[list[float]], list[int]], depth: int) -> str:
    """The tree's rules, for a failure message."""
    from sklearn.tree import DecisionTreeClassifier, export_text

    tree = DecisionTreeClassifier(max_depth=depth, class_weight="balanced", random_state=0)
    tree.fit(train[0], train[1])
    return str(export_text(tree, feature_names=list(FEATURES)))
