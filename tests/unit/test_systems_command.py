"""`apmbench-grpc systems`: every registered system, its memory, benchmarks, model and image."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from apmbench.adapters.systems import (
    REGISTRY,
    SPECIALIZED_SYSTEMS,
    SYSTEMS,
    VLM_SYSTEMS,
    compared_systems,
)
from apmbench.harness.build.images import system_lines
from apmbench.harness.cli import main
from apmbench.harness.commands.systems import ROOT, images
from apmbench.harness.suites import SUITES


def _json_rows() -> dict[str, dict[str, Any]]:
    result = CliRunner().invoke(main, ["systems", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert isinstance(rows, list)
    return {row["name"]: row for row in rows}


def test_every_registered_system_has_one_line() -> None:
    result = CliRunner().invoke(main, ["systems"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines] == list(REGISTRY)
    for line in lines:
        assert "memory: " in line and "benchmarks: " in line and "model: " in line


def test_json_lists_every_registered_system_in_order() -> None:
    rows = _json_rows()
    assert list(rows) == list(REGISTRY)
    for row in rows.values():
        assert set(row) == {"name", "memory", "benchmarks", "needs_model", "model_env", "images"}
        assert row["memory"] and row["benchmarks"]


def test_benchmarks_and_models_of_some_systems() -> None:
    rows = _json_rows()
    rules = rows["proact-rules"]
    assert rules["benchmarks"] == ["proactegomem"]
    assert (rules["needs_model"], rules["model_env"]) == (False, [])
    assert rules["images"] == ["apmbench/proact-rules:latest"]
    archive = rows["frame-archive"]
    assert archive["benchmarks"] == ["apmbench", "egoprobe"] and not archive["needs_model"]
    video = rows["vlm-video-memory"]
    assert video["needs_model"] and "APMBENCH_VLM_MODEL" in video["model_env"]
    assert video["benchmarks"] == ["apmbench", "egoprobe", "proactegomem"]
    assert video["images"] == ["apmbench/vlm-video-memory:cpu", "apmbench/vlm-video-memory:gpu"]
    # A KV cache cannot come from an OpenAI-compatible endpoint: a local model only.
    assert rows["kv-memory"]["model_env"] == ["APMBENCH_VLM_MODEL"]


def test_records_agree_with_suites_model_lists_and_images() -> None:
    for name, record in SYSTEMS.items():
        assert set(record.benchmarks) <= set(SUITES), name
    # The systems `evaluate` adds only when a model is named are the ones that need one.
    needing = {name for name, record in SYSTEMS.items() if record.needs_model}
    assert needing == set(VLM_SYSTEMS) | set(SPECIALIZED_SYSTEMS)
    everything = compared_systems({"APMBENCH_VLM_MODEL": "/m"})
    assert not any(SYSTEMS[name].needs_model for name in compared_systems({}))
    assert needing <= set(everything)
    # Every image is of a registered system.
    built = images()
    assert built is not None and set(system_lines(ROOT)) <= set(REGISTRY)
    assert set(built) <= set(REGISTRY)


def test_no_image_list_outside_a_checkout(tmp_path: Path) -> None:
    assert images(tmp_path) is None
