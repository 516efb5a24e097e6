"""Earlier questions and options tell nothing about a later answer.

A frame-blind system that keeps every question and option the main pass shows it
(tests/helpers/option_memory.py) answers each multiple-choice question from that memory
alone. Over seeds 100-109 of `small` (120 questions a task, 114 for TR) it stays within two
standard errors of chance (25 %) on every task. Generator 5 failed this: the same
attack answered ER 60.8 %, EST 45.8 %, STU 38.3 %, OCR 32.5 % and ERA 32.5 % (z = +9.1,
+5.3, +3.4, +1.9, +1.9), because its options named the trajectory's real put-downs and later
acts, mixed kinds, and changed when a question was asked again.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import option_memory

from apmbench.harness.suites.apmbench.dataset import Dataset, load_dataset
from apmbench.harness.suites.apmbench.synth.presets import PRESETS
from apmbench.harness.suites.apmbench.synth.writer import build

SEEDS = range(100, 110)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> list[Dataset]:
    root = tmp_path_factory.mktemp("synth")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("APMBENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
        out = []
        for seed in SEEDS:
            # Render specs instead of videos: the candidates are the same, without encoding.
            build(replace(PRESETS["small"], stored_video=False), seed, root / str(seed))
            out.append(load_dataset(root / str(seed)))
        return out


def test_a_memory_of_the_options_answers_at_chance(datasets: list[Dataset]) -> None:
    scores = option_memory.score(datasets, option_memory.OptionMemory())
    assert set(scores) == set(option_memory.TASKS)
    for s in scores.values():
        assert s.asked >= 100, s
    report = "; ".join(str(s) for s in scores.values())
    assert all(abs(s.z) <= 2 for s in scores.values()), report


def _asked(i: int, question: str, options: tuple[str, ...], answer: str) -> option_memory.Asked:
    return option_memory.Asked(
        f"T001-ER-{i:03d}", "T001", "ER", 1, i * 1000, question, options, answer
    )


def test_the_memory_finds_a_question_repeated_with_fresh_distractors() -> None:
    """Generator 5's ER: the same question three times, the answer in every copy, the
    distractors drawn again each time; the answer is the one option all copies share."""
    objects = ("MUG", "KEYS", "BOOK", "PHONE", "WALLET")
    question = "On DAY1, I put one object down at the DESK. Which object was it?"
    copies = [
        ("KEYS", "BOOK", "PHONE", "WALLET"),
        ("MUG", "KEYS", "PHONE", "WALLET"),
        ("MUG", "BOOK", "PHONE", "WALLET"),
    ]
    asked = [_asked(i, question, c, "PHONE") for i, c in enumerate(copies)]
    memory = option_memory.OptionMemory()
    assert memory(asked[2], asked[:2]) in ("PHONE", "WALLET")
    # Without the earlier copies it has nothing to go on but chance.
    guesses = {memory(_asked(i, question, objects[:4], "PHONE"), []) for i in range(40)}
    assert len(guesses) > 1


def test_the_memory_finds_an_earlier_option_naming_the_answer() -> None:
    """Generator 5's TR and ACR options named real put-downs that ER later asked about."""
    said = _asked(0, "Which of these did I do first?", (
        "put the PHONE down at the DESK", "switched on the LAMP at the DESK",
        "picked up the MUG at the SHELF", "added 2 EGG at the SHELF",
    ), "put the PHONE down at the DESK")  # fmt: skip
    question = "On DAY1, I put one object down at the DESK. Which object was it?"
    for i in range(1, 20):
        later = _asked(i, question, ("MUG", "KEYS", "PHONE", "BOOK"), "PHONE")
        assert option_memory.OptionMemory()(later, [said]) == "PHONE"
