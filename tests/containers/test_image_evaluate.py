"""`evaluate --image` end to end: the same scores as the process runtime, restart across gaps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import docker
import pytest
from containertools import ROOT, TEST_IMAGE, cli, run_containers
from helpers.timing import TIMING

from apmbench.harness.build.images import BASE, Builder
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.docker.settings import ContainerSettings
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

pytestmark = [pytest.mark.containers, pytest.mark.usefixtures("images")]


def untimed(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def scores(report: dict[str, Any]) -> dict[str, Any]:
    # How each system was confined differs between the runtimes by design.
    # The header says how each run was confined and started (a container, a sandboxed
    # process; a seed given on the command line); the data it names must be the same.
    kept = {k: v for k, v in report.items() if k not in ("latency", "sandbox", "header")}
    return {**kept, "dataset": report["header"]["dataset"]}


def test_a_reference_image_scores_like_the_process_runtime(
    tmp_path: Path, engine: docker.DockerClient, images: dict[str, str]
) -> None:
    image = "apmbench/recent-frames:latest"
    contained = tmp_path / "image"
    # The same judge on both sides: none (the CLI's auto would pick the synthetic one).
    done = cli(
        "--image",
        image,
        "--synthetic",
        "tiny",
        "--seed",
        "0",
        "--out",
        str(contained),
        "--judge",
        "none",
    )
    assert done.returncode == 0, done.stderr
    assert "run directory:" in done.stdout
    in_process = tmp_path / "process"
    evaluate(
        EvaluateOptions(
            dataset=synthetic_dataset("tiny", 0),
            out=in_process,
            runtime=runtime_spec(system="recent-frames"),
        )
    )

    for table in ("instances.jsonl", "sessions.jsonl"):
        assert untimed(contained / table) == untimed(in_process / table), table
    report = json.loads((contained / "report.json").read_text())
    assert scores(report) == scores(json.loads((in_process / "report.json").read_text()))

    manifest = json.loads((contained / "manifest.json").read_text())
    runtime = manifest["runtime"]
    assert runtime["kind"] == "docker"
    assert runtime["image"]["id"] == images[image]
    assert manifest["system_spec"] == f"{image} ({runtime['image']['id']})"
    assert runtime["engine"]["version"] == engine.version()["Version"]
    assert runtime["container"]["relaxations"] == []
    assert manifest["settings"]["persistence"] == "restart"
    log = (contained / "logs" / "system.log").read_text()
    # restart persistence: a fresh container per segment and per gap, each logged
    assert log.count("--- container apmbench-") > 3 and "serving" in log
    assert run_containers(engine, contained) == []


def test_only_exported_state_crosses_a_gap_in_restart_mode(mini: Path, tmp_path: Path) -> None:
    def run(out: Path, persistence: Persistence) -> dict[str, Any]:
        opts = EvaluateOptions(
            dataset=mini, out=out, persistence=persistence,
            runtime=runtime_spec(
                image=TEST_IMAGE,
                container=ContainerSettings(env=(("TESTSYS", "helpers.systems:HiddenState"),)),
            ),
        )  # fmt: skip
        evaluate(opts)
        rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
        return {r["instance_id"]: json.loads(r["raw_output"]) for r in rows}

    restart = run(tmp_path / "restart", Persistence.RESTART)
    trust = run(tmp_path / "trust", Persistence.TRUST)
    est = "T01-EST-1"  # asked in T01's third session
    assert restart[est]["exported_sessions"] == ["S001", "S002"]
    assert restart[est]["hidden_sessions"] == ["S003"]  # a new container: hidden memory is gone
    # The container went on: it still holds what it saw before (forks of S003 ran in it
    # too, before the main pass reached S003: the causal order).
    assert {"S001", "S002", "S003"} <= set(trust[est]["hidden_sessions"])


def test_the_template_builds_and_serves(
    mini: Path, tmp_path: Path, builder: Builder, images: dict[str, str]
) -> None:
    template = ROOT / "containers" / "template"
    files = {p.name: p.read_bytes() for p in template.iterdir() if p.is_file()}
    builder.build("apmbench-test/template:latest", files, parent=images[BASE])
    out = tmp_path / "run"
    done = cli(
        "--image", "apmbench-test/template:latest", "--dataset", str(mini), "--out", str(out),
        "--persistence", "reset",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["system"]["name"] == "my-memory"
    assert manifest["system"]["capabilities"]["supports_import"] is True


def test_proactegomem_through_an_image_scores_like_the_process_runtime(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    """The third suite runs through the same containers: the rule-based image and the
    same system as a process give the same records and scores."""
    image = "apmbench/proact-rules:latest"
    common = (
        "--benchmark",
        "proactegomem",
        "--synthetic",
        "tiny",
        "--seed",
        "0",
        "--persistence",
        "reset",
    )
    contained = tmp_path / "image"
    done = cli("--image", image, *common, "--out", str(contained))
    assert done.returncode == 0, done.stderr
    in_process = tmp_path / "process"
    done = cli("--system", "proact-rules", *common, "--out", str(in_process))
    assert done.returncode == 0, done.stderr
    assert untimed(contained / "instances.jsonl") == untimed(in_process / "instances.jsonl")
    report = json.loads((contained / "report.json").read_text())
    assert scores(report) == scores(json.loads((in_process / "report.json").read_text()))
    assert run_containers(engine, contained) == []


@pytest.mark.slow
def test_an_image_plays_live_on_the_clock(tmp_path: Path, engine: docker.DockerClient) -> None:
    """`--live` through a container in restart mode: every frame offered on the clock and
    taken (a generous buffer: a busy machine delays, not drops), the report says so."""
    out = tmp_path / "live"
    done = cli(
        "--image", "apmbench/null:latest", "--synthetic", "tiny", "--seed", "0",
        "--live", "--speed", "32", "--live-buffer", "120", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["header"]["live"] == 32.0
    assert report["live"]["frames_offered"] == 1085 and report["live"]["frames_dropped"] == 0
    assert report["live"]["questions_asked"] == 21
    assert json.loads((out / "manifest.json").read_text())["settings"]["persistence"] == "restart"
    assert run_containers(engine, out) == []
