"""`evaluate` refuses settings that cannot mean what they say, with exit 2 and the reason,
before a dataset is generated or a system started."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.commands.common import EXIT_USAGE
from apmbench.harness.errors import ConfigError
from apmbench.harness.orchestrate.resolve import resolve
from apmbench.harness.orchestrate.settings import EvaluateOptions, SyntheticRequest
from apmbench.harness.runtimes import runtime_spec

MINI = Path(__file__).parents[1] / "fixtures" / "mini"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        # No system: each reference system's shard would be scored by nobody.
        (["--dataset", str(MINI), "--shard", "0/2"], "--shard runs part of one system"),
        # A seed drawn per shard would give each shard another dataset.
        (["--synthetic", "tiny", "--system", "null", "--shard", "0/2"], "needs --seed S"),
        (["--dataset", str(MINI), "--system", "null", "--seed", "3"], "drop it with --dataset"),
        (["--dataset", str(MINI), "--system", "null", "--ray-gpus", "1"], "only with --backend"),
        (["--dataset", str(MINI), "--system", "null", "--audit-queries", "5"], "only with --audit"),
        (["--dataset", str(MINI), "--system", "null", "--spare-memory", "lots"], "--spare-memory"),
        (["--dataset", str(MINI), "--system", "null", "--backend", "ray", "--ray-gpus", "-1"],
         "must not be negative"),
        (["--dataset", str(MINI), "--system", "null", "--judge-model", "m"], "give --judge openai"),
        (["--benchmark", "all", "--synthetic", "tiny", "--seed", "0", "--system", "null",
          "--variant", "oracle"], "--variant oracle does not suit egoprobe"),
    ],
)  # fmt: skip
def test_refused_before_anything_starts(tmp_path: Path, args: list[str], said: str) -> None:
    out = tmp_path / "out"
    done = CliRunner().invoke(main, ["evaluate", *args, "--out", str(out)])
    assert done.exit_code == EXIT_USAGE, done.output
    assert said in " ".join(done.output.split())
    assert not out.exists()


def test_a_variant_the_suite_lacks_is_refused_before_generating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The synthetic benchmark takes minutes to generate: a bad --variant or --fps must not
    wait for it (the cache here is empty, so a generation would leave a directory)."""
    monkeypatch.setenv("APMBENCH_CACHE", str(tmp_path / "cache"))
    null = runtime_spec(system="null", sandbox=False)
    opts = EvaluateOptions(
        dataset=None, out=None, runtime=null, generate=SyntheticRequest("tiny", 5), variant="nope"
    )
    with pytest.raises(ConfigError, match="no variant 'nope'"):
        resolve(opts)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.json"))
