"""The red team's options-only attack on a multiple-choice question family: answer from the
options alone, without a frame.

For each category, it learns on training questions how often an option text is the
answer when offered (a count of 2 or 3, say) and whether an option named by another
question of the same clip is the answer more often than one that is not (a device the
clip shows); it then picks, in each test question, the option that both make most
likely. At chance it is right 1 time in the number of options.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    group: str
    """The clip (or video) the question is asked about."""
    category: str
    text: str
    choices: Mapping[str, str]
    answer: str


def _named(option: str, siblings: Iterable[str]) -> bool:
    return any(option.lower() in s.lower() for s in siblings)


class OptionsPrior:
    def __init__(self) -> None:
        self.offered: dict[tuple[str, str], int] = defaultdict(int)
        self.right: dict[tuple[str, str], int] = defaultdict(int)
        self.named: dict[tuple[str, bool], list[int]] = defaultdict(lambda: [0, 0])

    def fit(self, questions: Sequence[Question]) -> OptionsPrior:
        for q, siblings in _with_siblings(questions):
            for letter, option in q.choices.items():
                correct = int(letter == q.answer)
                self.offered[(q.category, option)] += 1
                self.right[(q.category, option)] += correct
                seen = self.named[(q.category, _named(option, siblings))]
                seen[0] += correct
                seen[1] += 1
        return self

    def _score(self, q: Question, option: str, siblings: Sequence[str]) -> float:
        key = (q.category, option)
        text = (self.right[key] + 1) / (self.offered[key] + len(q.choices))
        right, seen = self.named[(q.category, _named(option, siblings))]
        return text * (right + 1) / (seen + len(q.choices))

    def accuracy(self, questions: Sequence[Question]) -> dict[str, tuple[float, int]]:
        """category -> (share answered right, questions)."""
        hits: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for q, siblings in _with_siblings(questions):
            best = max(sorted(q.choices), key=lambda k: self._score(q, q.choices[k], siblings))
            hits[q.category][0] += int(best == q.answer)
            hits[q.category][1] += 1
        return {c: (right / n, n) for c, (right, n) in sorted(hits.items())}


def _with_siblings(questions: Sequence[Question]) -> Iterable[tuple[Question, list[str]]]:
    by_group: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        by_group[q.group].append(q)
    for q in questions:
        yield q, [o.text for o in by_group[q.group] if o is not q]


def proactegomem_questions(doc: Mapping[str, object]) -> list[Question]:
    clips = doc["clips"]
    assert isinstance(clips, list)
    return [
        Question(c["clip_id"], q["category"], q["question"], q["choices"], q["answer"])
        for c in clips
        for q in c["questions"]
    ]
