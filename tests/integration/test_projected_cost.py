"""`evaluate` says its projected cost before the first trajectory, and it is what the run does:
the starts that served (logs/starts.json), the frames pushed and the queries asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.orchestrate.cost import Projection, project
from apmbench.harness.run.executor import Persistence
from apmbench.harness.suites import datasets, get_suite


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["restart", "reset"])
def test_the_projection_is_what_the_run_does(tmp_path: Path, mode: str) -> None:
    dataset = datasets.synthetic(get_suite("apmbench"), "tiny", 0)
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        ["evaluate", "--dataset", str(dataset), "--system", "null", "--persistence", mode,
         "--out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    said = [line for line in result.output.splitlines() if "projected cost" in line]
    assert len(said) == 1
    suite = get_suite("apmbench")
    data = datasets.load(suite, dataset)
    cost = project(suite, data, data.trajectories, Persistence(mode), True, 1.0, 0.5, spare=True)
    assert f"starts={cost.starts}" in said[0] and f"queries={cost.queries}" in said[0]
    assert f"frames={cost.frames}" in said[0]
    starts = json.loads((out / "logs" / "starts.json").read_text())
    assert starts["served"] == cost.starts
    rows = (out / "instances.jsonl").read_text().splitlines()
    assert len(rows) == cost.queries
    if mode == "reset":
        assert cost.starts == 1
    else:
        assert cost.starts > len(data.trajectories)


def test_advice_names_what_cuts_the_cost() -> None:
    slow = Projection(trajectories=8, starts=250, frames=90_000, queries=300, start_s=10.0,
                      spare=False)  # fmt: skip
    advice = " ".join(slow.advice(Persistence.RESTART))
    assert "--no-spare" in advice and "2500 s" in advice
    assert "--fps" in advice and "--shard" in advice
    spared = Projection(8, 250, 90_000, 300, 10.0, spare=True)
    assert "--spare-memory" in " ".join(spared.advice(Persistence.RESTART))
    assert not any("spare" in a for a in spared.advice(Persistence.RESET))


def test_a_run_of_restores_is_projected_at_the_restore_and_told_nothing_of_spares() -> None:
    """`--start snapshot`: the first start loads and checkpoints (10 s here), every later
    one is a restore (0.5 s); no spare can run beside a live start, so none is advised."""
    restored = Projection(8, 250, 900, 300, 10.0, spare=False, later_start_s=0.5)
    assert restored.start_total_s == 10.0 + 249 * 0.5
    assert not any("spare" in a for a in restored.advice(Persistence.RESTART))
