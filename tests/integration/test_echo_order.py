"""A dialogue is asked after its parent question (a red team's EgoProbe cheater): at their
shared time, ids sorted a dialogue (D0004:R1) before its single-turn parent (Q0004), and only
Echo questions have dialogues, so a system that kept R2's question knew its parent was Echo
before answering it, and ruled out the latest object put down at the place (an Echo
distractor by construction): Echo 12.5 -> 37.5, All 75.0 -> 82.1 on `small` seed 0 with the
same 670 B/hr memory as the honest `LastAt`. The hint must never fire now."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.egoprobe.synth import synthetic_dataset

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("helper_env")]


def _single_turn(out: Path, system: str, tiny: Path) -> dict[str, str]:
    evaluate(
        EvaluateOptions(
            dataset=tiny,
            out=out,
            runtime=runtime_spec(system=f"helpers.echo_hint:{system}"),
            benchmark="egoprobe",
        )
    )
    rows = [json.loads(x) for x in (out / "instances.jsonl").read_text().splitlines()]
    return {r["instance_id"]: r["raw_output"] for r in rows if ":" not in r["instance_id"]}


@pytest.mark.slow
def test_no_single_turn_question_knows_it_is_echo(tmp_path: Path) -> None:
    tiny = synthetic_dataset("tiny", 0, tmp_path / "cache")
    honest = _single_turn(tmp_path / "honest", "LastAt", tiny)
    hinted = _single_turn(tmp_path / "hinted", "EchoHinted", tiny)
    fired = [i for i, text in hinted.items() if json.loads(text)["hinted"]]
    assert fired == [], fired
    assert hinted == honest
    assert len(honest) >= 6  # tiny's single-turn questions, Base and Echo
