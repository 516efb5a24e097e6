"""`evaluate --shard i/N` and `merge`: the parts of a run, joined, score as the whole run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.errors import RunDirError
from apmbench.harness.media.timeline import Session, Trajectory
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.orchestrate.merge import merge
from apmbench.harness.orchestrate.shards import Shard, assign, selected
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.apmbench.dataset import load_dataset


def cli(mini: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(mini),
        "--system", "null", "--persistence", "reset", "--out", str(out), *extra,
    ]  # fmt: skip


def scores(run: Path) -> dict[str, Any]:
    """The report without its timings (which differ between any two runs)."""
    report: dict[str, Any] = json.loads((run / "report.json").read_text())
    report.pop("latency", None)
    return report


def whole_run(mini: Path, out: Path, fps: float = 1.0) -> Path:
    from apmbench.harness.media.frames import FrameSettings

    evaluate(
        EvaluateOptions(
            dataset=mini,
            out=out,
            runtime=runtime_spec(system="null"),
            persistence=Persistence.RESET,
            frames=FrameSettings(fps=fps),
        )
    )
    return out


@pytest.mark.slow
def test_shards_in_one_shared_directory_and_apart_merge_to_the_single_run(
    mini: Path, tmp_path: Path
) -> None:
    whole = whole_run(mini, tmp_path / "whole")
    shared = tmp_path / "shared"
    # Both shards at once into one directory: neither may disturb the other.
    procs = [
        subprocess.Popen(cli(mini, shared, "--shard", f"{i}/2"), stderr=subprocess.PIPE)
        for i in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
    assert not (shared / "report.json").exists(), "a shard scored a part of the run"
    apart = [tmp_path / f"part{i}" for i in range(2)]
    for i, out in enumerate(apart):
        subprocess.run(cli(mini, out, "--shard", f"{i}/2"), check=True, capture_output=True)

    merge([shared], tmp_path / "merged-shared")
    merge(apart, tmp_path / "merged-apart")
    assert scores(tmp_path / "merged-shared") == scores(whole)
    assert scores(tmp_path / "merged-apart") == scores(whole)
    assert (tmp_path / "merged-apart" / "report.html").is_file()
    lines = (tmp_path / "merged-apart" / "instances.jsonl").read_text().splitlines()
    ids = [json.loads(line)["instance_id"] for line in lines]
    whole_lines = (whole / "instances.jsonl").read_text().splitlines()
    assert ids == [json.loads(line)["instance_id"] for line in whole_lines]
    manifest = json.loads((tmp_path / "merged-apart" / "manifest.json").read_text())
    assert [p["shard"]["name"] for p in manifest["merged_from"]] == ["0-of-2", "1-of-2"]


@pytest.mark.slow
def test_shards_of_the_synthetic_benchmark_merge_with_its_reference_judge(tmp_path: Path) -> None:
    """`--synthetic` runs are judged by the suite's reference judge by default: the merge
    judges the joined parts with it too, and gives the single run's scores. One of the two
    shards of `tiny` (one trajectory) is empty, which must work as well."""

    def synthetic(out: Path, *extra: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--synthetic", "tiny", "--seed", "0",
             "--system", "null", "--persistence", "reset", "--out", str(out), *extra],
            check=True, capture_output=True,
        )  # fmt: skip

    synthetic(tmp_path / "whole")
    for i in range(2):
        synthetic(tmp_path / "shards", "--shard", f"{i}/2")
    report = merge([tmp_path / "shards"], tmp_path / "merged")
    assert report["judge"] == scores(tmp_path / "whole")["judge"]
    assert scores(tmp_path / "merged") == scores(tmp_path / "whole")


def test_a_shard_leaves_the_other_shards_files_alone(mini: Path, tmp_path: Path) -> None:
    """Starting a shard cleans up only its own leftovers: another shard's record being
    written and its work area survive (a plain run cleans the whole directory)."""
    data = load_dataset(mini)
    other = selected(Shard(1, 2), data.content_hash, data.trajectories)
    shared = tmp_path / "shared"
    writing = shared / "trajectories" / f".{other[0]}.json.tmp"
    snapshot = shared / "work" / "1-of-2" / other[0] / "after_0.state"
    for path in (writing, snapshot):
        path.parent.mkdir(parents=True)
        path.write_text("in progress")
    subprocess.run(cli(mini, shared, "--shard", "0/2"), check=True, capture_output=True)
    assert writing.read_text() == "in progress"
    assert snapshot.read_text() == "in progress"


def test_merge_refuses_parts_of_different_runs_naming_the_difference(
    mini: Path, tmp_path: Path
) -> None:
    subprocess.run(cli(mini, tmp_path / "a", "--shard", "0/2"), check=True, capture_output=True)
    subprocess.run(
        cli(mini, tmp_path / "b", "--shard", "1/2", "--fps", "2"), check=True, capture_output=True
    )
    with pytest.raises(RunDirError, match=r"settings\.frames\.fps: 1\.0 in .*a .*, 2\.0 in .*b"):
        merge([tmp_path / "a", tmp_path / "b"], tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


@pytest.mark.slow
def test_merge_refuses_a_missing_shard_and_a_trajectory_twice(mini: Path, tmp_path: Path) -> None:
    subprocess.run(cli(mini, tmp_path / "a", "--shard", "0/2"), check=True, capture_output=True)
    with pytest.raises(RunDirError, match="a shard is missing from the merge"):
        merge([tmp_path / "a"], tmp_path / "m1")
    whole = whole_run(mini, tmp_path / "whole")
    with pytest.raises(RunDirError, match="recorded by more than one part"):
        merge([tmp_path / "a", whole], tmp_path / "m2")
    # The CLI says the same, with the usage exit code.
    out = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "merge", str(tmp_path / "a"), "--out",
         str(tmp_path / "m3")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 2
    assert "a shard is missing" in out.stderr


def _trajectory(tid: str, minutes: list[int]) -> Trajectory:
    sessions, start = [], 0
    for k, m in enumerate(minutes):
        sessions.append(Session(f"{tid}-S{k}", "D1", start, start + m * 60_000, None))
        start += m * 60_000 + 3_600_000
    return Trajectory(tid, tid, tuple(sessions))


def test_the_assignment_is_stable_complete_and_balanced_by_duration() -> None:
    lengths = [[13] * 5, [13] * 2, [40, 40], [5], [13] * 6, [60], [2, 2, 2], [30] * 3] * 13
    trajectories = [_trajectory(f"T{k:03d}", m) for k, m in enumerate(lengths)]
    for count in (1, 2, 3, 8):
        parts = assign("hash", trajectories, count)
        assert sorted(parts) == sorted(t.trajectory_id for t in trajectories)
        assert parts == assign("hash", list(reversed(trajectories)), count), "order-dependent"
        load = [0.0] * count
        for t in trajectories:
            load[parts[t.trajectory_id]] += sum(s.duration_s for s in t.sessions)
        longest = max(sum(s.duration_s for s in t.sessions) for t in trajectories)
        assert max(load) - min(load) <= longest
    picked = [selected(Shard(i, 3), "hash", trajectories) for i in range(3)]
    assert sorted(tid for part in picked for tid in part) == sorted(
        t.trajectory_id for t in trajectories
    )


@pytest.mark.parametrize("text", ["2/2", "-1/2", "1", "a/b", "0/0"])
def test_a_bad_shard_is_refused_with_the_form_to_use(text: str) -> None:
    from apmbench.harness.errors import ConfigError

    with pytest.raises(ConfigError, match="give i/N with 0 <= i < N"):
        Shard.parse(text)
