"""What a system could learn without a frame: wire-visible features and small classifiers.

A benchmark has a shortcut when the values the harness sends (probe times,
interval bounds, the user's turns, option texts and their order) predict the
label. This module turns a loaded dataset into exactly those values, as the
schedule would put them on the wire, and fits two small numpy classifiers (a
depth-limited decision tree and a logistic regression) on one dataset to
score them on another. A generator without shortcuts keeps both at chance.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from apmbench.adapters.sdk.types import UserTurnKind
from apmbench.harness.suites.apmbench import tasks
from apmbench.harness.suites.apmbench.dataset import Dataset
from apmbench.harness.suites.apmbench.plan import plan_trajectory

Matrix = npt.NDArray[np.float64]
DECISION_TASKS = tasks.ADAPTIVE_TASKS
_DAY = re.compile(r"DAY(\d+)")


@dataclass(frozen=True)
class Table:
    names: tuple[str, ...]
    x: Matrix
    y: npt.NDArray[np.int64]
    group: npt.NDArray[np.int64]
    """Rows with the same group are the options of one question (MC tables only)."""


def _day(day_id: str) -> int:
    m = _DAY.search(day_id)
    return int(m.group(1)) if m else 0


def decision_table(dataset: Dataset) -> Table:
    """One row per decision probe, with what the system receives up to that probe."""
    names = (
        *(f"task={t}" for t in DECISION_TASKS),
        "session_index",
        "since_session_start_s",
        "until_session_end_s",
        "interval_s",
        "interval_start_since_session_start_s",
        "since_last_turn_s",
        "since_registration_s",
        "registration_sessions_back",
        "asks_before_in_segment",
        "since_previous_ask_s",
        "prompt_chars",
    )
    rows: list[list[float]] = []
    labels: list[int] = []
    # The plan's asks hold no label: each probe is looked up by its instance id.
    probes = {p.probe_id: (c, p) for c in dataset.candidates for p in c.probes}
    for trajectory in dataset.trajectories:
        for segment in plan_trajectory(dataset, trajectory, can_import=True):
            if segment.kind != "fork":
                continue
            previous: int | None = None
            for rank, ask in enumerate(segment.asks):
                c, p = probes[ask.instance_id]
                session = trajectory.sessions[p.session_index]
                seen = [t for t in segment.turns if t.time_ms <= p.time_ms]
                regs = [t for t in seen if t.kind is UserTurnKind.REGISTRATION]
                rows.append(
                    [
                        *(float(c.task == t) for t in DECISION_TASKS),
                        p.session_index,
                        (p.time_ms - session.start_ms) / 1000,
                        (session.end_ms - p.time_ms) / 1000,
                        (p.time_ms - p.interval_start_ms) / 1000 if p.interval_start_ms else -1,
                        (p.interval_start_ms - session.start_ms) / 1000
                        if p.interval_start_ms
                        else -1,
                        (p.time_ms - seen[-1].time_ms) / 1000 if seen else -1,
                        (p.time_ms - regs[-1].time_ms) / 1000 if regs else -1,
                        p.session_index - regs[-1].session_index if regs else -1,
                        rank,
                        (p.time_ms - previous) / 1000 if previous is not None else -1,
                        len(p.prompt),
                    ]
                )
                labels.append(int(bool(p.positive)))
                previous = p.time_ms
    return Table(names, np.array(rows, float), np.array(labels), np.arange(len(labels)))


def _numbers(texts: Sequence[str]) -> list[float] | None:
    try:
        return [float(t) for t in texts]
    except ValueError:
        return None


def mc_table(dataset: Dataset) -> Table:
    """One row per option of every multiple-choice question (the twelve tasks' MCQA)."""
    names = (
        *(f"position={i}" for i in range(4)),
        "chars",
        "chars_rank",
        "words_shared_with_question",
        "alphabetical_rank",
        "number_rank",
        "distance_from_option_mean",
        "is_middle_number",
        "since_session_start_s",
    )
    rows: list[list[float]] = []
    labels: list[int] = []
    groups: list[int] = []
    question_no = 0
    for trajectory in dataset.trajectories:
        for c in dataset.candidates_of(trajectory.trajectory_id):
            if c.task not in tasks.MCQA_TASKS:
                continue
            p = c.probes[0]
            session = trajectory.sessions[p.session_index]
            texts = [o.text for o in c.choices]
            lengths = [len(t) for t in texts]
            order = sorted(texts)
            numbers = _numbers(texts)
            qwords = set(c.question.upper().replace("?", "").split())
            for i, option in enumerate(c.choices):
                if numbers is not None:
                    mean = sum(numbers) / len(numbers)
                    number_rank = float(sorted(numbers).index(numbers[i]))
                    distance = abs(numbers[i] - mean)
                    middle = float(number_rank in (1.0, 2.0))
                else:
                    number_rank, distance, middle = -1.0, -1.0, -1.0
                rows.append(
                    [
                        *(float(i == k) for k in range(4)),
                        lengths[i],
                        float(sorted(lengths).index(lengths[i])),
                        float(len(set(option.text.upper().split()) & qwords)),
                        float(order.index(option.text)),
                        number_rank,
                        distance,
                        middle,
                        (p.time_ms - session.start_ms) / 1000,
                    ]
                )
                labels.append(int(option.option_id == c.correct_option_id))
                groups.append(question_no)
            question_no += 1
    return Table(names, np.array(rows, float), np.array(labels), np.array(groups))


def ea_table(dataset: Dataset) -> Table:
    """One row per Evidence Availability question; the label is `evidence_available`."""
    names = (
        "session_index",
        "since_session_start_s",
        "until_session_end_s",
        "question_chars",
        "days_back_named_in_question",
        "query_day",
        "sessions_on_query_day_so_far",
    )
    rows: list[list[float]] = []
    labels: list[int] = []
    for trajectory in dataset.trajectories:
        for c in dataset.candidates_of(trajectory.trajectory_id):
            if c.task != tasks.EVIDENCE_AVAILABILITY:
                continue
            p = c.probes[0]
            session = trajectory.sessions[p.session_index]
            named = _DAY.search(c.question)
            same_day = [
                s for s in trajectory.sessions[: p.session_index] if s.day_id == session.day_id
            ]
            rows.append(
                [
                    p.session_index,
                    (p.time_ms - session.start_ms) / 1000,
                    (session.end_ms - p.time_ms) / 1000,
                    len(c.question),
                    _day(session.day_id) - int(named.group(1)) if named else -1,
                    _day(session.day_id),
                    len(same_day),
                ]
            )
            labels.append(int(bool(c.evidence_available)))
    return Table(names, np.array(rows, float), np.array(labels), np.arange(len(labels)))


# -- classifiers ------------------------------------------------------------------------


class Tree:
    """A depth-limited CART tree (Gini): enough to find a rule such as `interval == 5 s`."""

    def __init__(self, depth: int = 3, min_leaf: int = 5) -> None:
        self.depth = depth
        self.min_leaf = min_leaf
        self.node: tuple[int, float, Tree.Node, Tree.Node] | float = 0.5

    Node = tuple[int, float, "Tree.Node", "Tree.Node"] | float

    def fit(self, x: Matrix, y: npt.NDArray[np.int64], weight: Matrix | None = None) -> Tree:
        w = np.ones(len(y)) if weight is None else weight
        self.node = self._grow(x, y.astype(float), w, self.depth)
        return self

    def _grow(self, x: Matrix, y: Matrix, w: Matrix, depth: int) -> Tree.Node:
        total = float(w.sum())
        value = float((w * y).sum() / total) if total else 0.5
        if depth == 0 or len(y) < 2 * self.min_leaf or value in (0.0, 1.0):
            return value
        best: tuple[float, int, float] | None = None
        parent = total * value * (1 - value)
        for j in range(x.shape[1]):
            order = np.argsort(x[:, j], kind="stable")
            xs, ys, ws = x[order, j], y[order], w[order]
            cw, cy = np.cumsum(ws), np.cumsum(ws * ys)
            for i in range(self.min_leaf - 1, len(xs) - self.min_leaf):
                if xs[i] == xs[i + 1]:
                    continue
                lw, ly = cw[i], cy[i]
                rw, ry = cw[-1] - lw, cy[-1] - ly
                impurity = ly * (1 - ly / lw) + ry * (1 - ry / rw)
                if best is None or impurity < best[0]:
                    best = (float(impurity), j, float((xs[i] + xs[i + 1]) / 2))
        if best is None or best[0] >= parent - 1e-12:
            return value
        _, j, cut = best
        left = x[:, j] <= cut
        return (
            j,
            cut,
            self._grow(x[left], y[left], w[left], depth - 1),
            self._grow(x[~left], y[~left], w[~left], depth - 1),
        )

    def predict_proba(self, x: Matrix) -> Matrix:
        out = np.empty(len(x))
        for i, row in enumerate(x):
            node = self.node
            while not isinstance(node, float):
                j, cut, left, right = node
                node = left if row[j] <= cut else right
            out[i] = node
        return out


class Logistic:
    """L2-regularised logistic regression on standardised features, by gradient descent."""

    def __init__(self, l2: float = 1e-2, steps: int = 2000, rate: float = 0.5) -> None:
        self.l2, self.steps, self.rate = l2, steps, rate
        self.mean = self.scale = self.coef = np.zeros(0)
        self.bias = 0.0

    def fit(self, x: Matrix, y: npt.NDArray[np.int64], weight: Matrix | None = None) -> Logistic:
        w = np.ones(len(y)) if weight is None else weight
        w = w / w.sum()
        self.mean, self.scale = x.mean(0), x.std(0) + 1e-9
        z = (x - self.mean) / self.scale
        self.coef, self.bias = np.zeros(x.shape[1]), 0.0
        for _ in range(self.steps):
            p = 1 / (1 + np.exp(-(z @ self.coef + self.bias)))
            g = w * (p - y)
            self.coef -= self.rate * (z.T @ g + self.l2 * self.coef)
            self.bias -= self.rate * float(g.sum())
        return self

    def predict_proba(self, x: Matrix) -> Matrix:
        z = (x - self.mean) / self.scale
        return np.asarray(1 / (1 + np.exp(-(z @ self.coef + self.bias))), float)


Model = Tree | Logistic


def balanced_weights(y: npt.NDArray[np.int64]) -> Matrix:
    """Each class weighs half, so a classifier cannot win by predicting the majority."""
    pos = max(1, int(y.sum()))
    neg = max(1, len(y) - int(y.sum()))
    return np.where(y == 1, 0.5 / pos, 0.5 / neg)


def balanced_accuracy(model: Model, test: Table) -> float:
    """Percent; the mean of the true-positive and the true-negative rate."""
    guess = model.predict_proba(test.x) > 0.5
    pos, neg = test.y == 1, test.y == 0
    return 50.0 * (float(guess[pos].mean()) + float((~guess[neg]).mean()))


def choice_accuracy(model: Model, test: Table) -> float:
    """Percent of questions where the option the model scores highest is the correct one."""
    score = model.predict_proba(test.x)
    right = 0
    questions = np.unique(test.group)
    for g in questions:
        rows = np.flatnonzero(test.group == g)
        # Ties go to a random option, not to the first, so that equal scores stay at chance.
        top = rows[score[rows] == score[rows].max()]
        pick = top[int(g) % len(top)]
        right += int(test.y[pick] == 1)
    return 100.0 * right / len(questions)
