"""Keyword stuffing against the offline reference judge: text-log's answers with the
synthetic world's whole vocabulary appended. A judge that only counts the reference
terms it finds took Adaptive from 70 to 99 this way (KeywordStuffer). Round two appended
the words references use that name no fact and the question's own facts (FreeWordStuffer:
68 -> 89 against judge VERSION 3, which charged only wrong fact words); VERSION 4 charges
every content word past the reference's length, so neither pays. Round three appended a
bag of facts likely to be in the annotations (the question's options, the registration's
words, what the latest event named: FactBagger): with the slack raised to 12 words and
spent on facts too, it scored 80 against text-log's 66 on `tiny` seed 0; VERSION 8
charges every fact the reference does not want. (tests/unit/test_reference_judge.py
shows each charge lowering stuffed verdicts.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.scoring.judge import JudgeConfig
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

pytestmark = pytest.mark.usefixtures("helper_env")


def adaptive(out: Path, system: str, start: str = "fresh") -> dict[str, Any]:
    result = evaluate(
        EvaluateOptions(
            dataset=synthetic_dataset("tiny", 0),
            out=out,
            runtime=runtime_spec(system=system, start=start),
            persistence=Persistence.RESET,
            judge=JudgeConfig(kind="synthetic"),
        )
    )
    family: dict[str, Any] = result.report["families"]["adaptive_response"]
    return family


@pytest.mark.slow
@pytest.mark.parametrize("start", ["fresh", "template"])
@pytest.mark.parametrize("stuffer", ["KeywordStuffer", "FreeWordStuffer"])
def test_stuffed_answers_score_no_higher_than_honest_ones(
    tmp_path: Path, stuffer: str, start: str
) -> None:
    honest = adaptive(tmp_path / "honest", "text-log", start)
    stuffed = adaptive(tmp_path / "stuffed", f"helpers.cheaters:{stuffer}", start)
    assert honest["score"] is not None and stuffed["score"] is not None
    assert stuffed["score"] <= honest["score"]


@pytest.mark.slow
def test_copied_silence_templates_score_what_any_reason_scores(tmp_path: Path) -> None:
    """A fixed template ("Nothing has been picked up yet.") names no fact: judge VERSION 4
    scored it 5 and doubled null's Adaptive; now it scores what null's own reason does."""
    plain = adaptive(tmp_path / "null", "null")
    templates = adaptive(tmp_path / "templates", "helpers.cheaters:NullTemplates")
    assert plain["score"] is not None and templates["score"] == plain["score"]


@pytest.mark.slow
@pytest.mark.parametrize("start", ["fresh", "template"])
def test_a_bag_of_facts_scores_no_higher_than_the_facts_in_a_sentence(
    tmp_path: Path, start: str
) -> None:
    """FactBagger's bag names the right facts among free ones; FactSentences names a few
    facts it really perceives, in a sentence. The bag scores no higher than text-log's
    honest answers, nor than the sentence (judge VERSION 7: 80 against 66 and 66 on
    `tiny` seed 0)."""
    honest = adaptive(tmp_path / "honest", "text-log", start)
    bagged = adaptive(tmp_path / "bagged", "helpers.cheaters:FactBagger", start)
    sentences = adaptive(tmp_path / "sentences", "helpers.cheaters:FactSentences", start)
    assert None not in (honest["score"], bagged["score"], sentences["score"])
    assert bagged["score"] <= honest["score"]
    assert bagged["score"] <= sentences["score"]
