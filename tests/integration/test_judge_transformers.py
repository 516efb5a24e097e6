"""The local transformers judge with a tiny random chat model built offline.

The model is saved with save_pretrained and loaded back from its directory by
the same code that loads real weights. Its replies are noise, so what is
checked is the path every real judge also takes: the chat template, strict
parsing, the bounded retry, the recorded failure (never a default score), and
the cache that makes the second scoring call the model zero times.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.tiny_model import build_tiny_chat_model

from apmbench.harness.cli import main
from apmbench.harness.errors import ConfigError
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.scoring.judge import JudgeConfig, open_judge

pytest.importorskip("transformers", reason="the models extra is not installed")
ADAPTIVE = ("ERA", "RCR", "MPA", "PRM", "TPG")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_chat_model(tmp_path_factory.mktemp("model") / "tiny-llama")


@pytest.fixture(scope="module")
def null_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "null"
    mini = Path(__file__).resolve().parents[1] / "fixtures" / "mini"
    evaluate(
        EvaluateOptions(
            dataset=mini,
            out=out,
            runtime=runtime_spec(system="null"),
            persistence=Persistence.RESET,
        )
    )
    return out


def test_the_model_loads_from_its_directory_and_answers_through_its_chat_template(
    tiny_model: Path,
) -> None:
    judge = open_judge(JudgeConfig(kind="transformers", path=tiny_model, max_tokens=6))
    assert judge is not None
    messages = [
        {"role": "system", "content": "You are an impartial evaluator"},
        {"role": "user", "content": "The assistant remained SILENT"},
    ]
    first = judge.complete(messages)
    assert isinstance(first, str) and judge.complete(messages) == first  # greedy: deterministic
    assert judge.calls == 2
    assert judge.identity["model_type"] == "llama" and judge.identity["decoding"] == "greedy"
    assert len(judge.cache_identity["fingerprint"]) == 64


def test_a_directory_without_a_chat_template_is_refused(tiny_model: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    shutil.copytree(tiny_model, bare)
    (bare / "chat_template.jinja").unlink()
    config = json.loads((bare / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (bare / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(ConfigError, match="has no chat template"):
        open_judge(JudgeConfig(kind="transformers", path=bare))


def test_noise_is_retried_a_bounded_number_of_times_recorded_and_cached(
    tiny_model: Path, null_run: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(null_run, run)
    cli = CliRunner()
    args = ["score", str(run), "--judge", f"transformers:{tiny_model}"]
    result = cli.invoke(main, [*args, "--judge-attempts", "2", "--judge-max-tokens", "8"])
    assert result.exit_code == 0, result.output
    report = json.loads((run / "report.json").read_text())
    # null is SILENT everywhere: the 5 negative probes pass the gate and go to the judge.
    assert report["judge"]["by_status"] == {"invalid": 5, "not_needed": 5}
    for task in ADAPTIVE:
        assert report["tasks"][task]["score"] is None
        assert "(invalid: 1)" in report["tasks"][task]["reason"]
    assert report["overall"]["score"] is None
    rows = [json.loads(x) for x in (run / "instances.jsonl").read_text().splitlines()]
    judged = [r for r in rows if (r.get("judge") or {}).get("status") == "invalid"]
    assert all(r["judge"]["attempts"] == 2 and len(r["judge"]["problems"]) == 2 for r in judged)
    assert all(r["judge_score"] is None for r in judged)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["scoring"]["judge"]["kind"] == "transformers"
    assert manifest["scoring"]["judge_calls"]["model_calls"] == 10
    assert len(list((run / "judge-cache").rglob("*.json"))) == 10

    # Scoring again with the recorded judge: every reply from the cache, the same report.
    result = cli.invoke(main, ["score", str(run)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["scoring"]["judge_calls"] == {"requests": 5, "model_calls": 0, "cache_hits": 10}
    assert json.loads((run / "report.json").read_text()) == report
    assert "never the rubric's JSON" in result.output
