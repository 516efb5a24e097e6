"""The synthetic reference judge: rubric verdicts from the generated facts, and nowhere else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from apmbench.harness.errors import ConfigError
from apmbench.harness.scoring.judge import JudgeConfig, open_judge
from apmbench.harness.scoring.judge.reference import LABEL
from apmbench.harness.scoring.judge.verdict import parse_verdict
from apmbench.harness.suites.apmbench import rubric, tasks
from apmbench.harness.suites.apmbench.dataset import load_dataset
from apmbench.harness.suites.apmbench.suite import APMBench
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset
from apmbench.harness.suites.base import reference_judge
from apmbench.harness.synthetic import world


@pytest.fixture(scope="module")
def tiny() -> Path:
    return synthetic_dataset("tiny", 0)


def _probes(root: Path) -> list[tuple[object, object]]:
    dataset = load_dataset(root)
    return [(c, p) for c in dataset.candidates if c.task in tasks.ADAPTIVE_TASKS for p in c.probes]


def _answer(candidate: object, probe: object, text: str) -> str:
    decision = "INTERVENE" if probe.positive else "SILENT"  # type: ignore[attr-defined]
    body: dict[str, str] = {"decision": decision, "reason": text}
    if probe.positive and candidate.correct_option_id:  # type: ignore[attr-defined]
        body["answer"] = candidate.correct_option_id  # type: ignore[attr-defined]
    return json.dumps(body)


def _score(judge: object, candidate: object, probe: object, raw: str) -> int:
    messages = rubric.request_messages(candidate, probe, {"raw_output": raw})  # type: ignore[arg-type]
    reply = judge.complete(messages)  # type: ignore[attr-defined]
    verdict = parse_verdict(reply)  # the rubric's strict reader: no leniency for this judge
    assert LABEL in verdict.justification
    return verdict.score


def _reference(candidate: object, probe: object) -> str:
    """The reference text the judge reads for this probe (its request's annotations)."""
    from apmbench.harness.suites.apmbench.reference_judge import parse_request, reference_texts

    messages = rubric.request_messages(candidate, probe, {"raw_output": ""})  # type: ignore[arg-type]
    _, annotations, _ = parse_request(messages)
    return " ".join(reference_texts(annotations))


def test_the_facts_score_five_a_generic_answer_two_and_nothing_one(tiny: Path) -> None:
    judge = reference_judge(APMBench(), tiny)
    probes = _probes(tiny)
    assert probes
    from apmbench.harness.suites.apmbench.reference_judge import wanted_facts

    templates = 0
    for candidate, probe in probes:
        facts = _reference(candidate, probe)
        assert facts
        # A reference naming no fact (a templated silence reason), or on a silence probe none
        # beyond the user's own reminder, only checks that a reason was given: copying it
        # word for word scores what "Okay." scores.
        named = bool(wanted_facts(_annotations(candidate, probe)))
        templates += not named
        expected = 5 if named else 2
        assert _score(judge, candidate, probe, _answer(candidate, probe, facts)) == expected
        generic = _answer(candidate, probe, "Okay.")
        assert _score(judge, candidate, probe, generic) == 2
        assert _score(judge, candidate, probe, _answer(candidate, probe, "")) == 1
    assert templates > 0  # the tiny set has such probes: the rule is exercised


def test_content_the_reference_does_not_need_dilutes_the_score(tiny: Path) -> None:
    """Every reference text of the candidate, both polarities, as the answer to a negative
    probe: its facts are all stated, but most of its words are not what this probe needs."""
    judge = reference_judge(APMBench(), tiny)
    diluted = 0
    for candidate, probe in _probes(tiny):
        if probe.positive:  # type: ignore[attr-defined]
            continue
        raw = candidate.raw  # type: ignore[attr-defined]
        others = [str(v) for k, v in raw.items() if isinstance(v, str) and k.endswith(_TEXTS)]
        facts = _reference(candidate, probe)
        padded = _answer(candidate, probe, " ".join([facts, *others]))
        diluted += _score(judge, candidate, probe, padded) < 5
    assert diluted > 0


_TEXTS = ("response", "reason", "rationale")


def test_a_stuffed_answer_scores_no_higher_than_the_honest_one(tiny: Path) -> None:
    """Appending the benchmark's vocabulary states every fact, among hundreds of other
    words: without a charge for unsupported content it took Adaptive from 70 to 99."""
    judge = reference_judge(APMBench(), tiny)
    vocabulary = " ".join(
        [*world.PLACES, *world.ITEMS, *world.OBJECTS, *world.SCREEN_WORDS, *world.FIXTURES]
        + [state for states in world.FIXTURES.values() for state in states]
    )
    lowered = 0
    for candidate, probe in _probes(tiny):
        label = probe.label  # type: ignore[attr-defined]
        honest = str(label.get("proactive_response") or label.get("silence_reason") or "Okay.")
        fair = _score(judge, candidate, probe, _answer(candidate, probe, honest))
        stuffed = _score(
            judge, candidate, probe, _answer(candidate, probe, f"{honest} {vocabulary}")
        )
        assert stuffed <= fair
        lowered += stuffed < fair
    assert lowered > 0  # the charge bites, it is not only a tie


def test_naming_the_wrong_object_scores_below_naming_the_right_one(tiny: Path) -> None:
    judge = reference_judge(APMBench(), tiny)
    candidate, probe = next(
        (c, p)
        for c, p in _probes(tiny)
        if p.positive and c.task == "RCR"  # type: ignore[attr-defined]
    )
    right = probe.label["proactive_response"]  # type: ignore[attr-defined]
    wrong = "Check the WARDROBE."
    assert right != wrong
    assert _score(judge, candidate, probe, _answer(candidate, probe, right)) > _score(
        judge, candidate, probe, _answer(candidate, probe, wrong)
    )


def test_refused_on_any_other_dataset(mini: Path, tiny: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="only the built-in synthetic benchmark"):
        reference_judge(APMBench(), mini)
    # A copy of the synthetic dataset whose manifest no longer names the generator.
    copy = tmp_path / "copy"
    shutil.copytree(tiny, copy)
    manifest = json.loads((copy / "dataset.json").read_text())
    del manifest["generator"]
    (copy / "dataset.json").write_text(json.dumps(manifest))
    with pytest.raises(ConfigError, match="only the built-in synthetic benchmark"):
        reference_judge(APMBench(), copy)


def test_open_judge_needs_the_suite_and_dataset() -> None:
    with pytest.raises(ConfigError, match="--judge synthetic"):
        open_judge(JudgeConfig(kind="synthetic"))


def test_identity_carries_the_label(tiny: Path) -> None:
    judge = reference_judge(APMBench(), tiny)
    assert judge.cache_identity["label"] == LABEL
    assert judge.identity["generator"]["name"] == "apmbench-synth"


def test_a_named_judge_overrides_auto_and_auto_needs_the_generator(mini: Path, tiny: Path) -> None:
    from apmbench.harness.commands.judge_options import has_reference_judge, resolve_auto
    from apmbench.harness.suites import get_suite

    apmbench = get_suite("apmbench")
    assert has_reference_judge(apmbench, tiny)
    assert not has_reference_judge(apmbench, mini)
    assert resolve_auto("auto", lambda: True) == "synthetic"
    assert resolve_auto("auto", lambda: False) == "none"
    for named in ("openai", "transformers:/m", "none", "synthetic"):
        assert resolve_auto(named, lambda: True) == named


def test_without_reference_text_no_answer_scores_above_three() -> None:
    from apmbench.harness.suites.apmbench.reference_judge import verdict

    bare = {"this_probe": {"polarity": "positive", "reference_decision": "INTERVENE"}}
    v = verdict("RCR", bare, '{"decision": "INTERVENE", "reason": "anything at all"}')
    assert v["score"] == 3
    assert v["critical_issues"] == ["the annotations hold no reference text for this probe"]


def _free_words(root: Path) -> str:
    """Round two of stuffing: every word the references use that names no world fact
    (verbs, "nothing", day names, numbers), as a method author would list them."""
    from apmbench.harness.suites.apmbench.reference_judge import fact_words, reference_texts, terms

    words: set[str] = set()
    for candidate, probe in _probes(root):
        raw = candidate.raw  # type: ignore[attr-defined]
        for polarity in ("positive", "negative"):
            label = {**dict(probe.label), "polarity": polarity}  # type: ignore[attr-defined]
            words |= set(terms(" ".join(reference_texts({**raw, "this_probe": label}))))
    return " ".join(sorted(words - fact_words()))


def _own_facts(candidate: object) -> str:
    """The fact words of the probe's own question, options and registration."""
    raw = candidate.raw  # type: ignore[attr-defined]
    parts = [str(raw.get("question", ""))]
    parts += [str(c.get("text", "")) for c in raw.get("choices") or []]
    parts.append(str((raw.get("registration_event") or {}).get("registration_text", "")))
    return " ".join(parts)


def test_free_words_and_the_questions_own_facts_buy_nothing(tiny: Path) -> None:
    """The red team's round two: judge VERSION 3 charged only wrong fact words, so free
    words and the question's own facts appended to every reason bought Adaptive 68 -> 89."""
    judge = reference_judge(APMBench(), tiny)
    free = _free_words(tiny)
    assert len(free.split()) > 10
    compared = 0
    for candidate, probe in _probes(tiny):
        reference = _reference(candidate, probe).split()
        for honest in ("I am not sure.", " ".join(reference[: max(1, len(reference) // 2)])):
            fair = _score(judge, candidate, probe, _answer(candidate, probe, honest))
            stuffed_text = f"{honest} {free} {_own_facts(candidate)}"
            stuffed = _score(judge, candidate, probe, _answer(candidate, probe, stuffed_text))
            assert stuffed <= fair, (candidate.raw.get("candidate_id"), honest)  # type: ignore[attr-defined]
            compared += 1
    assert compared > 10


def test_a_guessed_place_beside_the_right_object_does_not_pay(tiny: Path) -> None:
    """An ERA positive wants the object and the place. Version 5 scored a wrong place
    beside the right object as high as no place, so guessing one was a free bet (a
    fresh-eyes red team: +0.86 Adaptive on average, no information)."""
    from apmbench.harness.suites.apmbench.reference_judge import fact_words, terms

    judge = reference_judge(APMBench(), tiny)
    checked = 0
    for candidate, probe in _probes(tiny):
        if candidate.task != "ERA" or not probe.positive:  # type: ignore[attr-defined]
            continue
        facts = [w for w in terms(_reference(candidate, probe)) if w in fact_words()]
        places = {terms(p)[0] for p in world.PLACES}
        obj = next(w for w in facts if w not in places)
        place = next(w for w in facts if w in places)
        alone = _score(
            judge, candidate, probe, _answer(candidate, probe, f"I picked up the {obj}.")
        )
        guesses = [
            _score(
                judge,
                candidate,
                probe,
                _answer(candidate, probe, f"I picked up the {obj} at the {p}."),
            )
            for p in sorted(places)
        ]
        wrong = [s for p, s in zip(sorted(places), guesses, strict=True) if p != place]
        assert max(wrong) < alone, (alone, guesses)
        assert sum(guesses) / len(guesses) <= alone, (alone, guesses)
        checked += 1
    assert checked > 0


def _annotations(candidate: object, probe: object) -> dict[str, object]:
    from apmbench.harness.suites.apmbench.reference_judge import parse_request

    messages = rubric.request_messages(candidate, probe, {"raw_output": ""})  # type: ignore[arg-type]
    return parse_request(messages)[1]


def test_a_number_or_day_no_reference_text_holds_is_a_wrong_fact(tiny: Path) -> None:
    """A count or a DAY the reference does not hold is a wrong fact, as a wrong place is:
    version 6 let it merely dilute, so a guessed day or count scored what leaving it out
    scored: a free bet."""
    from apmbench.harness.suites.apmbench.reference_judge import is_number_or_day, terms

    judge = reference_judge(APMBench(), tiny)
    checked = 0
    for candidate, probe in _probes(tiny):
        reference = _reference(candidate, probe)
        numbers = [w for w in terms(reference) if is_number_or_day(w)]
        if not probe.positive or not numbers:  # type: ignore[attr-defined]
            continue
        right = reference.lower()
        for n in numbers:
            # "day1" -> "day6", "9" -> "16": the same kind of fact, another value.
            wrong = n[:-1] + str((int(n[-1]) + 5) % 10) if n.startswith("day") else str(int(n) + 7)
            assert wrong not in terms(reference)
            left_out = right.replace(n, "")
            guessed = right.replace(n, wrong)
            score = _score(judge, candidate, probe, _answer(candidate, probe, guessed))
            assert score < _score(judge, candidate, probe, _answer(candidate, probe, left_out))
            assert score < _score(judge, candidate, probe, _answer(candidate, probe, right))
            checked += 1
    assert checked > 0


def test_facts_the_reference_does_not_want_are_charged_without_slack(tiny: Path) -> None:
    """The round-three bag ("JudgeGamer"): the reference's facts plus the question's other
    options, which the annotations hold (so never wrong). Versions 6 and 7 spent the slack
    meant for glue words on them and scored the bag 5; a fact the reference does not want
    is now charged whole, while as many glue words stay free."""
    from apmbench.harness.suites.apmbench.reference_judge import wanted_facts

    judge = reference_judge(APMBench(), tiny)
    checked = 0
    for candidate, probe in _probes(tiny):
        if candidate.task != "ERA" or not probe.positive:  # type: ignore[attr-defined]
            continue
        annotations = _annotations(candidate, probe)
        wanted = wanted_facts(annotations)
        options = [c.text for c in candidate.choices]  # type: ignore[attr-defined]
        others = [o for o in options if o.lower() not in wanted]
        assert len(others) >= 2
        reference = _reference(candidate, probe)
        bag = _answer(candidate, probe, f"{reference} {' '.join(others)}")
        glue = _answer(candidate, probe, f"{reference} {' '.join(_GLUE[: len(others)])}")
        assert _score(judge, candidate, probe, glue) == 5
        assert _score(judge, candidate, probe, bag) < 5
        checked += 1
    assert checked > 0


_GLUE = ("really", "clearly", "indeed", "certainly")


def test_on_a_silence_probe_the_users_own_reminder_earns_nothing(tiny: Path) -> None:
    """Red team (b): a silence reason copied from the user's own reminder ("Remind me to
    check the FRIDGE when I pick up the PLATE.") names the PLATE that the reference silence
    reason names, and version 6 scored that copy 5 (RCR) or 4 (PRM). What the query
    carried is no memory: it scores what any reason scores."""
    from apmbench.harness.suites.apmbench.reference_judge import user_texts

    judge = reference_judge(APMBench(), tiny)
    copied = 0
    for candidate, probe in _probes(tiny):
        reminder = " ".join(user_texts(_annotations(candidate, probe)))
        if probe.positive or "remind" not in reminder.lower():  # type: ignore[attr-defined]
            continue
        generic = _score(judge, candidate, probe, _answer(candidate, probe, "Nothing to say yet."))
        assert _score(judge, candidate, probe, _answer(candidate, probe, reminder)) == generic
        copied += 1
    assert copied >= 2  # RCR and PRM negatives both


def test_a_crafted_silence_request_credits_only_facts_beyond_the_reminder() -> None:
    """With a fact the reminder does not hold (the place), that one still earns; the
    reminder's own fact is charged like any fact the reference does not want."""
    from apmbench.harness.suites.apmbench.reference_judge import verdict, wanted_facts

    annotations = {
        "registration_event": {
            "registration_text": "Remind me to check the FRIDGE when I pick up the PLATE."
        },
        "this_probe": {
            "polarity": "negative",
            "reference_decision": "SILENT",
            "silence_reason": "The PLATE is still on the SHELF.",
        },
    }
    assert wanted_facts(annotations) == ["shelf"]

    def score(reason: str) -> int:
        body = json.dumps({"decision": "SILENT", "reason": reason})
        return int(verdict("RCR", annotations, body)["score"])

    assert score("It is still on the SHELF.") == 5
    assert score("The PLATE is still on the SHELF.") < 5
    assert score("Remind me to check the FRIDGE when I pick up the PLATE.") == 1 + 1
