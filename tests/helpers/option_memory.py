"""The red team's option-memory attack: answer each multiple-choice question from the
questions and options asked before it, never from a frame.

A system sees every question and its options on the wire. One that keeps them all, in
time order, can answer a later question whenever the generator lets earlier text carry
its answer: an option that names the put-down a later ER question asks about, a question
repeated with different distractors (its answer is the option every copy shares), an
option list whose odd kind out is the answer. This module replays what each question's
process would have seen and answers by fixed rules over that memory alone:

- the main pass asks ER, EST, TR, ACR, CT, OCR and STU in one process, in time order,
  so each of them remembers every main-pass question before it in its trajectory;
- an ERA fork starts from the main pass's snapshot after the session before its own,
  so it remembers the main-pass questions of the earlier sessions (plan.py).

The rules per task are in `OptionMemory`; `RandomGuess` is the baseline. `score` gives
per-task accuracy with its standard error; a generator whose earlier text carries no
information about later answers keeps every task within two standard errors of chance.
Everything is read from the dataset's candidates: no gRPC, no frame.
"""

from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from apmbench.harness.suites.apmbench.dataset import Dataset
from apmbench.harness.synthetic.world import FIXTURES, ITEMS, OBJECTS

MAIN_PASS = ("ER", "EST", "TR", "ACR", "CT", "OCR", "STU")
TASKS = (*MAIN_PASS, "ERA")


@dataclass(frozen=True)
class Asked:
    """One multiple-choice question as a system receives it, with its answer for scoring."""

    candidate_id: str
    trajectory_id: str
    task: str
    session_index: int
    time_ms: int
    question: str
    options: tuple[str, ...]
    answer: str


@dataclass(frozen=True)
class Fact:
    """Something an option or a question text names: `kind` is an event kind (pickup,
    putdown, toggle, count), "where" (a question asking where `subject` is), "count" for a
    CT question (`subject` an item) or "label" for an STU question's named object."""

    kind: str
    subject: str
    place: str = ""


_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("putdown", re.compile(r"put the (\w+) down at the (\w+)")),
    ("pickup", re.compile(r"picked up the (\w+) at the (\w+)")),
    ("toggle", re.compile(r"(?:switched on|switched off|opened|closed) the (\w+) at the (\w+)")),
    ("count", re.compile(r"(?:added|took away) \d+ (\w+) at the (\w+)")),
    ("count", re.compile(r"How many (\w+) are at the (\w+)")),
    ("where", re.compile(r"Where is the (\w+) now")),
    ("label", re.compile(r"to the right of the (\w+)")),
)
_ER = re.compile(r"On (DAY\d+), I put one object down at the (\w+)")


def facts_of(text: str) -> list[Fact]:
    out = []
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            out.append(Fact(kind, m.group(1), m.group(2) if m.lastindex == 2 else ""))
    return out


def event_kind(text: str) -> str:
    """An ACR/TR option's event kind ("other" for anything else)."""
    for kind, pattern in _PATTERNS[:4]:
        if pattern.match(text):
            return kind
    return "other"


def label_kind(label: str) -> str:
    """An STU option's kind: the generator's vocabulary is public, so a red team knows it."""
    if label in FIXTURES:
        return "fixture"
    if label in ITEMS:
        return "item"
    return "object" if label in OBJECTS else "other"


def questions(dataset: Dataset) -> list[Asked]:
    """Every four-option question of the main pass and every ERA question, per trajectory
    in the order a system receives them (ERA at its session's start, where its question
    turn is injected)."""
    out = []
    for trajectory in dataset.trajectories:
        for c in dataset.candidates_of(trajectory.trajectory_id):
            if c.task not in TASKS:
                continue
            p = c.probes[0]
            time_ms = p.time_ms
            if c.task == "ERA":
                time_ms = trajectory.sessions[p.session_index].start_ms
            texts = {o.option_id: o.text for o in c.choices}
            out.append(
                Asked(
                    c.candidate_id,
                    c.trajectory_id,
                    c.task,
                    p.session_index,
                    time_ms,
                    c.question,
                    tuple(texts.values()),
                    texts[str(c.correct_option_id)],
                )
            )
    return sorted(out, key=lambda q: (q.trajectory_id, q.time_ms, q.candidate_id))


def memory_of(q: Asked, asked: Sequence[Asked]) -> list[Asked]:
    """What the process answering `q` has been shown before it, oldest first."""
    main = [m for m in asked if m.trajectory_id == q.trajectory_id and m.task in MAIN_PASS]
    if q.task == "ERA":
        return [m for m in main if m.session_index < q.session_index]
    return [m for m in main if m.time_ms < q.time_ms]


Answerer = Callable[[Asked, Sequence[Asked]], str]


def _tie_break(q: Asked) -> random.Random:
    return random.Random(f"option-memory/{q.candidate_id}")


def RandomGuess(q: Asked, memory: Sequence[Asked]) -> str:
    """The baseline: one option at random, whatever the memory holds."""
    return _tie_break(q).choice(sorted(q.options))


class OptionMemory:
    """The strongest rules we found for each task, using only `memory` and the question.

    Every rule scores each option; the highest total wins and ties go to a random option.
    """

    def __call__(self, q: Asked, memory: Sequence[Asked]) -> str:
        rule = getattr(self, q.task.lower())
        scores: dict[str, float] = rule(q, memory)
        best = max(scores.values())
        return _tie_break(q).choice(sorted(o for o in q.options if scores[o] == best))

    # -- what memory holds -------------------------------------------------------------

    @staticmethod
    def _mentions(memory: Iterable[Asked]) -> list[tuple[int, Fact]]:
        """(time shown, fact) for every fact any earlier question or option named."""
        return [
            (m.time_ms, f)
            for m in memory
            for text in (m.question, *m.options)
            for f in facts_of(text)
        ]

    @staticmethod
    def _repeated(q: Asked, memory: Sequence[Asked]) -> set[str] | None:
        """The options every earlier copy of this very question shares with it, walking back
        from the latest copy while the intersection stays non-empty: when the answer did
        not change, a question asked again with fresh distractors gives it away."""
        shared = set(q.options)
        found = False
        for m in reversed(memory):
            if m.question != q.question:
                continue
            narrower = shared & set(m.options)
            if not narrower:
                break
            shared, found = narrower, True
        return shared if found and shared != set(q.options) else None

    def _with_repeats(self, q: Asked, memory: Sequence[Asked]) -> dict[str, float]:
        shared = self._repeated(q, memory)
        return {o: 100.0 if shared is not None and o in shared else 0.0 for o in q.options}

    # -- the tasks -----------------------------------------------------------------------

    def er(self, q: Asked, memory: Sequence[Asked]) -> dict[str, float]:
        """The object an earlier option put down (or picked up) at the asked place; an
        object named more often in put-downs anywhere next."""
        scores = self._with_repeats(q, memory)
        m = _ER.search(q.question)
        place = m.group(2) if m else ""
        for _, f in self._mentions(memory):
            if f.subject not in scores:
                continue
            if f.kind == "putdown":
                scores[f.subject] += 3.0 if f.place == place else 0.1
            elif f.kind == "pickup" and f.place == place:
                scores[f.subject] += 1.0
        return scores

    def est(self, q: Asked, memory: Sequence[Asked]) -> dict[str, float]:
        """The place of the latest put-down of the object that memory names; a place it
        was last picked up from is less likely."""
        scores = self._with_repeats(q, memory)
        subject = q.question.removeprefix("Where is the ").removesuffix(" now?")
        latest: dict[str, tuple[int, str]] = {}
        for t, f in self._mentions(memory):
            if f.subject == subject and f.place in scores and f.kind in ("putdown", "pickup"):
                latest[f.place] = max(latest.get(f.place, (t, f.kind)), (t, f.kind))
        order = sorted(latest.items(), key=lambda kv: kv[1][0])
        for rank, (place, (_, kind)) in enumerate(order, start=1):
            scores[place] += rank if kind == "putdown" else -0.5
        return scores

    def tr(self, q: Asked, memory: Sequence[Asked]) -> dict[str, float]:
        """The odd kind out; then the option shown earliest in memory (what an earlier
        question already named happened before it, or was offered as though it had)."""
        kinds = [event_kind(o) for o in q.options]
        counts = {k: kinds.count(k) for k in kinds}
        scores = {o: 0.0 for o in q.options}
        if sorted(counts.values()) == [1, 3]:
            for o, k in zip(q.options, kinds, strict=True):
                scores[o] += 100.0 * (counts[k] == 1)
        first: dict[str, int] = {}
        for m in memory:
            for text in m.options:
                first.setdefault(text, m.time_ms)
        seen = sorted({first[o] for o in q.options if o in first})
        for o in q.options:
            if o in first:
                scores[o] += 1.0 + (len(seen) - seen.index(first[o])) / (len(seen) + 1)
        return scores

    def acr(self, q: Asked, memory: Sequence[Asked]) -> dict[str, float]:
        """An act not yet offered in memory: distractors drawn from the whole trajectory
        show up in earlier questions more often than the act just done; and the act's
        consistency with where memory last put its object."""
        scores = {o: 0.0 for o in q.options}
        offered: dict[str, int] = defaultdict(int)
        for m in memory:
            for text in m.options:
                offered[text] += 1
        where: dict[str, str] = {}
        for _, f in self._mentions(memory):
            if f.kind == "putdown":
                where[f.subject] = f.place
        for o in q.options:
            scores[o] -= offered[o]
            for f in facts_of(o):
                if f.kind == "pickup" and where.get(f.subject) == f.place:
                    scores[o] += 0.5
        return scores

    def ct(self, q: Asked, memory: Sequence[Asked]) -> dict[str, float]:
        """The counts every recent copy of the question offered too."""
        return self._with_repeats(q, memory)

    def ocr(self, q: Asked, memory: Sequence[Asked]) -> dict[str, float]:
        """The text the latest screen question offered (the screen may not have changed),
        then the text offered most often."""
        scores = self._with_repeats(q, memory)
        offered: dict[str, int] = defaultdict(int)
        for m in memory:
            for text in m.options:
                offered[text] += 1
        for o in q.options:
            scores[o] += offered[o]
        return scores

    def stu(self, q: Asked, memory: Sequence[Asked]) -> dict[str, float]:
        """Never the named object itself or one of its kind when a place has only one of
        that kind (a fixture, an item pile); never a fixture or item memory places
        elsewhere than the named one; then the odd kind out."""
        m = re.search(r"to the right of the (\w+)", q.question)
        left = m.group(1) if m else ""
        home: dict[str, str] = {}
        for _, f in self._mentions(memory):
            if f.kind in ("toggle", "count") and f.place:
                home[f.subject] = f.place
        kinds = {o: label_kind(o) for o in q.options}
        scores = {o: 0.0 for o in q.options}
        for o, kind in kinds.items():
            if (
                o == left
                or (kind == label_kind(left) and kind in ("fixture", "item"))
                or (
                    kind in ("fixture", "item")
                    and left in home
                    and home.get(o, home[left]) != home[left]
                )
            ):
                scores[o] -= 100.0
        alive = [o for o in q.options if scores[o] > -100.0]
        counts: dict[str, int] = defaultdict(int)
        for o in alive:
            counts[kinds[o]] += 1
        for o in alive:
            if counts[kinds[o]] == 1 and len(counts) > 1:
                scores[o] += 1.0
        return scores

    def era(self, q: Asked, memory: Sequence[Asked]) -> dict[str, float]:
        """The object earlier options picked up most often (options drawn from the whole
        trajectory's acts named this session's pick-ups before they happened)."""
        scores = {o: 0.0 for o in q.options}
        for _, f in self._mentions(memory):
            if f.kind == "pickup" and f.subject in scores:
                scores[f.subject] += 1.0
        return scores


@dataclass(frozen=True)
class Score:
    task: str
    right: int
    asked: int
    chance: float

    @property
    def accuracy(self) -> float:
        return self.right / self.asked

    @property
    def se(self) -> float:
        """The standard error of `accuracy` as measured."""
        p = self.accuracy
        return math.sqrt(p * (1 - p) / self.asked)

    @property
    def chance_se(self) -> float:
        """The standard error an answerer at chance would have on this many questions."""
        return math.sqrt(self.chance * (1 - self.chance) / self.asked)

    @property
    def z(self) -> float:
        """How many chance standard errors the accuracy lies from chance."""
        return (self.accuracy - self.chance) / self.chance_se

    def __str__(self) -> str:
        return (
            f"{self.task}: {100 * self.accuracy:.1f} % +- {100 * self.se:.1f} "
            f"({self.right}/{self.asked}, z={self.z:+.1f})"
        )


def score(datasets: Iterable[Dataset], answerer: Answerer) -> dict[str, Score]:
    """Per task, how often `answerer` picks the right option from memory alone."""
    right: dict[str, int] = defaultdict(int)
    asked: dict[str, int] = defaultdict(int)
    for dataset in datasets:
        everything = questions(dataset)
        for q in everything:
            answer = answerer(q, memory_of(q, everything))
            right[q.task] += int(answer == q.answer)
            asked[q.task] += 1
    return {t: Score(t, right[t], asked[t], 0.25) for t in TASKS if asked[t]}
