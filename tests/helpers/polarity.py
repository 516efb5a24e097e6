"""The red team's polarity attack on a public part of APM-Bench: from public fields alone,
predict which probe of a decision candidate is the positive one.

Each probe becomes a row of what the public part shows about it (its place among the
candidate's probes, its time after the registration and after the previous probe, its
length for a window, and whether it lies inside one of the public `windows`); a depth-3
tree is trained on one dataset's probes and tested on another's. At chance its
balanced accuracy is 0.5; the leak of ERA/RCR windows read 0.83-1.00.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

DECISION_TASKS = ("ERA", "RCR", "MPA", "PRM", "TPG")
HEARTBEAT_TASKS = ("ERA", "RCR")


def _seconds(day: str, clock: str) -> float:
    h, m, s = (float(x) for x in clock.split(":"))
    return int(day.removeprefix("DAY")) * 86400 + h * 3600 + m * 60 + s


def _at(obj: dict[str, Any], key: str) -> float:
    return _seconds(str(obj["day_id"]), str(obj[key]))


def _candidates(root: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted((root / "candidates").glob("*.json")):
        for k, raw in enumerate(json.loads(path.read_text())):
            out.append({**raw, "candidate_id": raw.get("candidate_id", f"{path.stem}/{k}")})
    return out


def _positives(raw: dict[str, Any]) -> set[float]:
    """The labelled positive probes' times (a heartbeat's, a window's end)."""
    if raw["task_type"] in HEARTBEAT_TASKS:
        return {_at(raw["positive_heartbeat"], "query_time")}
    windows = raw.get("ideal_response_windows") or [raw["ideal_response_window"]]
    return {_at(w, "end_time") for w in windows}


def rows(public: Path, private: Path) -> dict[str, tuple[list[list[float]], list[int]]]:
    """task -> (features, labels) of every probe of its candidates in the public part."""
    labelled = {c["candidate_id"]: c for c in _candidates(private)}
    out: dict[str, tuple[list[list[float]], list[int]]] = defaultdict(lambda: ([], []))
    for c in _candidates(public):
        task = c["task_type"]
        if task not in DECISION_TASKS:
            continue
        windows = [(_at(w, "start_time"), _at(w, "end_time")) for w in c.get("windows") or []]
        if task in HEARTBEAT_TASKS:
            probes = [(t, t) for t in sorted(_at(b, "query_time") for b in c["heartbeats"])]
        else:
            probes = sorted(windows, key=lambda w: w[1])
        reg = c.get("registration_event")
        origin = _at(reg, "registration_time") if reg else probes[0][0]
        positives = _positives(labelled[c["candidate_id"]])
        features, labels = out[task]
        for i, (start, end) in enumerate(probes):
            before = probes[i - 1][1] if i else origin
            after = probes[i + 1][1] if i + 1 < len(probes) else end
            inside = any(a <= end <= b for a, b in windows) if task in HEARTBEAT_TASKS else 0
            features.append(
                [i, len(probes), i / max(1, len(probes) - 1), end - origin, end - before,
                 after - end, end - start, float(inside)]
            )  # fmt: skip
            labels.append(int(end in positives))
    return dict(out)


def held_out_balanced_accuracy(
    a: tuple[list[list[float]], list[int]], b: tuple[list[list[float]], list[int]]
) -> float:
    """A depth-3 tree trained on `a` predicts `b` and one trained on `b` predicts `a`: the
    balanced accuracy of all those held-out predictions together."""
    from sklearn.metrics import balanced_accuracy_score
    from sklearn.tree import DecisionTreeClassifier

    truth: list[int] = []
    said: list[int] = []
    for train, test in ((a, b), (b, a)):
        tree = DecisionTreeClassifier(max_depth=3, class_weight="balanced", random_state=0)
        tree.fit(train[0], train[1])
        truth += test[1]
        said += [int(x) for x in tree.predict(test[0])]
    return float(balanced_accuracy_score(truth, said))
