"""Labels off the evaluating machine: `split` a synthetic tiny dataset (seed 0), `evaluate` a
reference system on the public part alone, `score --labels` the predictions with the private
part, and compare with an ordinary run on the labelled dataset. The public part is scanned
against the private part for every label; predictions made on another public part are
refused."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.orchestrate.blind import sealed_records
from apmbench.harness.run import seal
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset as apmbench_synthetic
from apmbench.harness.suites.egoprobe.synth import synthetic_dataset as egoprobe_synthetic
from apmbench.harness.suites.proactegomem.metrics import ORACLE_WITHHELD
from apmbench.harness.suites.proactegomem.prompts import ORACLE_MEMORY
from apmbench.harness.suites.proactegomem.synth import (
    synthetic_dataset as proactegomem_synthetic,
)
from tests.helpers.public_leaks import proactegomem_event_leaks

pytestmark = [pytest.mark.integration, pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

SUITES: dict[str, tuple[Callable[[str, int, Path], Path], str, str]] = {
    # APM-Bench with its synthetic reference judge: the judged tasks are compared too.
    "apmbench": (apmbench_synthetic, "frame-archive", "synthetic"),
    "egoprobe": (egoprobe_synthetic, "frame-archive", "none"),
    "proactegomem": (proactegomem_synthetic, "proact-rules", "none"),
}

MEASURED = ("latency",)
"""Wall-clock timings: two executions of one system never time alike, so the comparison
leaves them out; every graded and judged number is compared."""

NOT_RUN_BLIND = {"proactegomem": ("qa", ORACLE_MEMORY)}
"""The one cell a blind report may differ in: ProactEgoMem's Oracle Memory condition lists the
events to the system, so it cannot run on a public part (docs/blind-evaluation.md)."""


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, [*args])


def _strings(obj: object) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def _keys(obj: object) -> Iterator[str]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _keys(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _keys(v)


@pytest.fixture(scope="module", params=sorted(SUITES))
def blind(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    suite = str(request.param)
    make, system, judge = SUITES[suite]
    work = tmp_path_factory.mktemp(f"blind-{suite}")
    data = make("tiny", 0, work / "cache")
    public, private = work / "public", work / "private"
    result = cli("split", str(data), "--public", str(public), "--private", str(private))
    assert result.exit_code == 0, result.output
    result = cli(
        "evaluate", "--dataset", str(public), "--system", system, "--out", str(work / "run")
    )
    assert result.exit_code == 0, result.output
    assert "labels withheld: predictions written to" in result.output
    assert not (work / "run" / "report.json").exists()
    predictions = work / "run" / "predictions.json"
    # No --judge: blind scoring picks, as `evaluate` does, the reference judge where the
    # labels are the built-in synthetic benchmark's (`auto`), so the two runs must agree.
    result = cli(
        "score", str(predictions), "--labels", str(private), "--out", str(work / "scored"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    result = cli(
        "evaluate", "--dataset", str(data), "--system", system, "--judge", judge,
        "--out", str(work / "ordinary"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return {
        "suite": suite,
        "data": data,
        "public": public,
        "private": private,
        "predictions": predictions,
        "scored": json.loads((work / "scored" / "report.json").read_text()),
        "ordinary": json.loads((work / "ordinary" / "report.json").read_text()),
        "work": work,
    }


def test_blind_scoring_takes_the_reference_judge_without_being_told(
    blind: dict[str, Any],
) -> None:
    scored = blind["scored"]
    wanted = "synthetic_reference" if SUITES[blind["suite"]][2] == "synthetic" else "none"
    assert scored["scoring"]["judge"]["kind"] == wanted
    if blind["suite"] == "apmbench":  # Adaptive Response and Overall are computed, not n/c
        assert scored["overall"]["score"] is not None
        assert scored["families"]["adaptive_response"]["score"] is not None


def test_blind_scores_equal_the_ordinary_run(blind: dict[str, Any]) -> None:
    scored, ordinary = blind["scored"], blind["ordinary"]
    assert set(scored) == set(ordinary)
    for key in set(ordinary) - set(MEASURED) - {"header"}:
        if key == NOT_RUN_BLIND.get(blind["suite"], ("",))[0]:
            continue
        assert scored[key] == ordinary[key], key
    if blind["suite"] == "proactegomem":
        qa = dict(scored["qa"])
        oracle = qa.pop(ORACLE_MEMORY)
        assert qa == {k: v for k, v in ordinary["qa"].items() if k != ORACLE_MEMORY}
        assert oracle == {"n": 0, "accuracy": None, "by_category": {}, "by_task": {},
                          "not_run": ORACLE_WITHHELD}  # fmt: skip
        assert ordinary["qa"][ORACLE_MEMORY]["n"] > 0 and "not_run" not in ordinary["qa"][
            ORACLE_MEMORY]  # fmt: skip
        markdown = (blind["work"] / "scored" / "report.md").read_text()
        assert f"{ORACLE_MEMORY}: not run ({ORACLE_WITHHELD})." in markdown
        assert "not run" not in (blind["work"] / "ordinary" / "report.md").read_text()
    # The header names the data the run saw: the public part, not the labelled dataset.
    assert {**scored["header"], "dataset": None} == {**ordinary["header"], "dataset": None}
    public = json.loads((blind["public"] / "dataset.json").read_text())
    assert scored["header"]["dataset"]["name"] == public["name"]
    assert scored["header"]["dataset"]["hash"] != ordinary["header"]["dataset"]["hash"]
    if blind["suite"] == "apmbench":
        judged = [t for t in ("ERA", "MPA", "PRM", "RCR", "TPG") if scored["tasks"][t]["score"]]
        assert judged, "the judged tasks scored nothing: the comparison would not show them"
    if blind["suite"] == "egoprobe":
        # The stand-ins put every question 2 ms after its target (Short): the labelled plan's
        # buckets must have replaced them.
        far = [c["all"]["n"] for b, c in scored["buckets"].items() if b != "Short"]
        assert sum(far) > 0


APMBENCH_LABELS = {
    "correct_option_id", "evidence_moments", "evidence_available", "positive_heartbeat",
    "negative_heartbeats", "ideal_response_window", "ideal_response_windows",
    "negative_or_silence_windows",
}  # fmt: skip
APMBENCH_RUN_INPUT = {
    "question", "text", "option_id", "registration_text", "session_id", "day_id",
    "query_time", "start_time", "end_time", "task_type", "trajectory_id", "candidate_id",
    "original_candidate_id",
}  # fmt: skip


def _leaves(obj: object, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(obj, str):
        yield key, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, k)
    elif isinstance(obj, list):
        for v in obj:
            yield from _leaves(v, key)


def leaks(suite: str, public_root: Path, private_root: Path) -> list[str]:
    """What of the private part's labels the directory `public_root` shows."""
    public = json.loads((public_root / "dataset.json").read_text())
    private = json.loads((private_root / "dataset.json").read_text())
    found = []
    if "generator" in public or str(private["generator"]["seed"]) in public["name"]:
        found.append("the generator's seed")  # it regenerates every label
    if suite == "apmbench":
        # A render spec names the generator's seed (a rendered session's, or a Raw Lifelong
        # intervening recording's).
        found += sorted({"render", "seed"} & set(_keys(public)))
        text = ""
        for path in sorted((public_root / "candidates").glob("*.json")):
            found += sorted(APMBENCH_LABELS & set(_keys(json.loads(path.read_text()))))
            text += path.read_text()
        labels = {
            value
            for path in (private_root / "candidates").glob("*.json")
            for key, value in _leaves(json.loads(path.read_text()))
            if key not in APMBENCH_RUN_INPUT and len(value) >= 12
        }
        assert labels
        return found + sorted(v for v in labels if json.dumps(v) in text)
    found += sorted({"answer", "target", "related_events", "subset"} & set(_keys(public)))
    values = set(_strings(public))
    if suite == "egoprobe":
        evidence = set()
        for q in private["questions"]:
            evidence |= {q["target"]["start"], q["target"]["end"]}
            for e in q["related_events"]:
                evidence |= {e["event_id"], e["start"], e["end"]}
        assert evidence
        found += sorted(evidence & values)
    if suite == "proactegomem":
        found += sorted({"events", "render"} & set(_keys(public)))
        found += proactegomem_event_leaks(public, private)
    return found


def test_the_public_part_reveals_no_label(blind: dict[str, Any]) -> None:
    suite = blind["suite"]
    assert json.loads((blind["public"] / "dataset.json").read_text())["labels"] == "withheld"
    assert leaks(suite, blind["public"], blind["private"]) == []
    # The other half: the labelled dataset itself, scanned the same way, shows its labels.
    assert leaks(suite, blind["data"], blind["private"]) != []
    if suite == "apmbench":
        # Probe ids are neutral: the earliest probe is not always the positive one.
        assert json.loads((blind["private"] / "instance_ids.json").read_text())
        return
    predictions = json.loads(blind["predictions"].read_text())
    rows = [r for t in predictions["trajectories"] for r in t["record"]["instances"]]
    assert rows and not any("correct" in r for r in rows)  # nothing the stand-ins graded
    private = json.loads((blind["private"] / "dataset.json").read_text())
    if suite == "egoprobe":
        assert len({q["subset"] for q in private["questions"]}) == 2
    else:
        answers = [q["answer"] for c in private["clips"] for q in c["questions"]]
        assert len(set(answers)) > 1
        public = json.loads((blind["public"] / "dataset.json").read_text())
        shown = [q for c in public["clips"] for q in c["questions"]]
        assert len(shown) == len(answers) and all(set(q) <= {
            "question_id", "question", "choices", "category"} for q in shown)  # fmt: skip


def test_predictions_of_another_public_part_are_refused(blind: dict[str, Any]) -> None:
    doc = json.loads(blind["predictions"].read_text())
    doc["dataset_hash"] = "0" * 64
    doc["seal"] = seal.seal(sealed_records(doc))  # made, and sealed, on another public part
    other = blind["work"] / "other-predictions.json"
    other.write_text(json.dumps(doc))
    out = blind["work"] / "refused"
    result = cli("score", str(other), "--labels", str(blind["private"]), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert "were made on a dataset with hash 000000000000" in result.output
    assert "labels belong to the public part" in result.output
    assert not out.exists()
    # Re-scoring the public run in place would grade with the stand-in labels.
    result = cli("score", str(blind["predictions"].parent))
    assert result.exit_code == 2, result.output
    assert "ran on a public part, whose labels are withheld" in result.output
    # The same predictions, hash intact, score.
    result = cli(
        "score", str(blind["predictions"]), "--labels", str(blind["private"]), "--out", str(out)
    )
    assert result.exit_code == 0, result.output


def test_a_public_part_cannot_be_split_again_and_the_parts_must_be_new(
    blind: dict[str, Any], tmp_path: Path
) -> None:
    result = cli("split", str(blind["public"]), "--public", str(tmp_path / "a"),
                 "--private", str(tmp_path / "b"))  # fmt: skip
    assert result.exit_code == 2 and "already a public part" in result.output
    result = cli("split", str(blind["data"]), "--public", str(blind["public"]),
                 "--private", str(tmp_path / "b"))  # fmt: skip
    assert result.exit_code == 2 and "is not empty" in result.output


def test_the_apmbench_release_layout_is_refused_with_a_reason(tmp_path: Path) -> None:
    result = cli("split", str(FIXTURES / "appendix"), "--public", str(tmp_path / "p"),
                 "--private", str(tmp_path / "q"))  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "is in the release layout: split reads the project layout" in result.output
    assert not (tmp_path / "p").exists()


def _edit(doc: dict[str, Any], how: str) -> str:
    """One of the red team's edits of a predictions.json; returns the record it names."""
    trajectory = doc["trajectories"][0]
    rows = trajectory["record"]["instances"]
    tid = trajectory["trajectory_id"]
    row = rows[0]
    name = f"{tid}/{row['segment']}/{row['instance_id']}"
    if how == "altered":
        row["raw_output"] = json.dumps({"decision": "SPEAK", "answer": "A", "reason": "edited"})
    elif how == "removed":
        del rows[0]
    else:
        rows.append(dict(row))
    return name


EXPECTED = {
    ("altered", False): "changed after the run",
    ("removed", False): "removed after the run",
    ("duplicated", False): "more than once",
    # Re-sealed with the public algorithm, a dropped record is still not the labelled plan.
    ("removed", True): "missing",
}


@pytest.mark.parametrize(("how", "resealed"), sorted(EXPECTED))
def test_edited_predictions_are_refused_naming_the_record(
    blind: dict[str, Any], how: str, resealed: bool
) -> None:
    """The red team's edits of predictions.json: each is exit 2 with the record named. (A
    re-sealed alteration is what a keyless seal cannot see: docs/blind-evaluation.md.)"""
    doc = json.loads(blind["predictions"].read_text())
    name = _edit(doc, how)
    if resealed:
        doc["seal"] = seal.seal(sealed_records(doc))
    edited = blind["work"] / f"edited-{how}-{resealed}.json"
    edited.write_text(json.dumps(doc))
    out = blind["work"] / f"refused-{how}-{resealed}"
    result = cli("score", str(edited), "--labels", str(blind["private"]), "--out", str(out))
    assert result.exit_code == 2, result.output
    said = "".join(result.output.split())
    assert "".join(name.split()) in said or "".join(name.split("/", 1)[1].split()) in said, said
    assert "".join(EXPECTED[(how, resealed)].split()) in said, said
    assert not out.exists()
