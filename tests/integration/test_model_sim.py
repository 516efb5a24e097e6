"""`model-sim`: a start reads and checksums its weights and waits its load time; its answers
are those of the system it wraps (text-log), served sandboxed as `evaluate` runs it."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from apmbench.adapters.sdk import InvalidArgument
from apmbench.adapters.systems.model_sim import ModelSim, SimSettings, prepare_weights
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites import datasets, get_suite

TESTS = Path(__file__).resolve().parents[1]


def test_a_start_reads_the_weights_checks_them_and_waits(tmp_path: Path) -> None:
    settings = SimSettings(weights_mb=3, load_s=0.3, weights_dir=tmp_path)
    began = time.monotonic()
    system = ModelSim(settings)
    assert time.monotonic() - began >= 0.3
    weights = settings.weights_path
    assert weights.stat().st_size == 3 << 20
    assert system.digest == hashlib.sha256(weights.read_bytes()).hexdigest()
    assert system.describe().details["model_sim_weights_sha256"] == system.digest
    # Generated once: a second start reads the same file.
    mtime = weights.stat().st_mtime_ns
    ModelSim(settings)
    assert weights.stat().st_mtime_ns == mtime


def test_tampered_weights_are_refused(tmp_path: Path) -> None:
    path = prepare_weights(tmp_path, 1)
    with path.open("r+b") as f:
        f.seek(1000)
        f.write(b"\xff")
    with pytest.raises(InvalidArgument, match="do not match their checksum"):
        ModelSim(SimSettings(weights_mb=1, load_s=0, weights_dir=tmp_path))


def test_bad_settings_say_what_to_fix() -> None:
    with pytest.raises(InvalidArgument, match="APMBENCH_SIM_LOAD_S='soon': give a number"):
        SimSettings.from_env({"APMBENCH_SIM_LOAD_S": "soon"})
    with pytest.raises(InvalidArgument, match="must not be negative"):
        SimSettings.from_env({"APMBENCH_SIM_FRAME_MS": "-1"})
    named = SimSettings.from_env({"APMBENCH_VLM_MODEL": "/models/x", "APMBENCH_SIM_QUERY_MS": "5"})
    assert named.weights_dir == Path("/models/x") and named.query_ms == 5


def _answers(out: Path) -> dict[str, str]:
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    return {r["instance_id"]: r["raw_output"] for r in rows}


@pytest.mark.slow
def test_sandboxed_it_answers_as_text_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    weights = tmp_path / "weights"
    prepare_weights(weights, 2)
    monkeypatch.setenv("APMBENCH_SIM_WEIGHTS_MB", "2")
    monkeypatch.setenv("APMBENCH_SIM_LOAD_S", "0.1")
    monkeypatch.setenv("APMBENCH_SIM_QUERY_MS", "5")
    tiny = datasets.synthetic(
        get_suite("apmbench"), "tiny", 0
    )  # text-log reads the synthetic scenes
    runs = {}
    for name, env in (("text-log", ()), ("model-sim", (f"APMBENCH_VLM_MODEL={weights}",))):
        out = tmp_path / name
        spec = runtime_spec(system=name, env=env, spare=True)
        evaluate(
            EvaluateOptions(dataset=tiny, out=out, runtime=spec, persistence=Persistence.RESTART)
        )
        runs[name] = _answers(out)
    assert runs["model-sim"] == runs["text-log"] and runs["text-log"]
    starts = json.loads((tmp_path / "model-sim" / "logs" / "starts.json").read_text())
    assert starts["starts"] > 2 and starts["cold_start_s"] >= 0.1


@pytest.mark.slow
def test_it_runs_a_real_video_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mini fixture (decoded video, OCR'd): text-log's memory, which model-sim has,
    once stopped every query on an empty place perception read there."""
    weights = tmp_path / "weights"
    prepare_weights(weights, 2)
    monkeypatch.setenv("APMBENCH_SIM_WEIGHTS_MB", "2")
    monkeypatch.setenv("APMBENCH_SIM_LOAD_S", "0")
    out = tmp_path / "run"
    spec = runtime_spec(system="model-sim", env=(f"APMBENCH_VLM_MODEL={weights}",), spare=True)
    evaluate(
        EvaluateOptions(
            dataset=TESTS / "fixtures" / "mini", out=out, runtime=spec,
            persistence=Persistence.RESTART,
        )
    )  # fmt: skip
    answers = _answers(out)
    assert answers and all(isinstance(a, str) for a in answers.values())
    # Every host path bound into the box is named in the report's head, the model's too.
    report = json.loads((out / "report.json").read_text())
    assert str(weights.resolve()) in report["sandbox"]["host_paths"], report["sandbox"]
    head = (out / "report.md").read_text().split("## ", 1)[0]
    assert "Host paths bound read-only into the sandbox" in head and str(weights.resolve()) in head
