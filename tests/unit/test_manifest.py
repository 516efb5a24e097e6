"""The typed manifest record: the JSON on disk does not move, old manifests load, a merged
run's manifest is the one `merge` wrote before the record existed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.errors import RunDirError
from apmbench.harness.reports.format import dataset_line
from apmbench.harness.reports.head import header
from apmbench.harness.run import records
from apmbench.harness.run.manifest import Manifest, load, merged


def _current(**over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "harness_version": "0.9.0",
        "protocol_version": "1.3",
        "benchmark": "egoprobe",
        "system": {"name": "null", "capabilities": {"supports_import": False}},
        "system_spec": {"system": "null"},
        "dataset": {
            "name": "tiny",
            "path": "/data/tiny",
            "synthetic": {"seed": 7, "seed_drawn": False},
        },
        "dataset_hash": "ab" * 32,
        "settings": {"persistence": "reset", "frames": {"fps": 2.0}},
        "runtime": {"kind": "docker", "container": {"mounts": ["/w:/weights:ro"]}},
        "host": {"hostname": "h1"},
        "started_at": "2026-01-02T00:00:00+00:00",
        "shard": {"name": "1-of-2", "trajectories": ["t1", "t2"]},
        "isolation": {"rests_on_system_reset": True, "max_lookahead_s": 1.5},
        "scoring": {"signature": {"judge": "x"}, "judge": {"kind": "reference"}},
        "zz_unmodelled": [1, {"a": None}],
    }
    data.update(over)
    return data


def test_written_bytes_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    text = records.dump(_current())
    path.write_text(text)
    record = load(path)
    assert records.dump(record.raw) == text
    assert record.with_fields() == _current()
    assert (record.system_name, record.benchmark, record.dataset_name) == (
        "null",
        "egoprobe",
        "tiny",
    )
    assert record.shard is not None and record.shard.trajectories == ("t1", "t2")
    assert record.isolation is not None and record.isolation.max_lookahead_s == 1.5
    assert (record.persistence, record.fps, record.mounts) == ("reset", 2.0, ("/w:/weights:ro",))


def test_old_manifest_loads_with_defaults(tmp_path: Path) -> None:
    """A manifest from before suites, persistence, runtimes, isolation and scoring: the
    defaults are what the readers assumed for such runs."""
    old = {"system": {"name": "null"}, "dataset": "tiny", "dataset_hash": "cd" * 32}
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(old))
    record = load(path)
    assert record.benchmark is None
    assert record.dataset_name == "tiny" and record.dataset_path is None
    assert (record.persistence, record.fps, record.mounts) == ("restart", 1.0, ())
    assert record.judge == {} and record.judge_settings == {}
    assert header({}, old)["judge"] == {"kind": "none"}
    assert record.shard is None and record.isolation is None
    assert dataset_line(record) == f"Dataset `tiny` (hash `{'cd' * 6}`)"
    assert header({}, old)["dataset"] == {"name": "tiny", "hash": "cd" * 32}


def test_not_a_manifest(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text("[1, 2]")
    with pytest.raises(RunDirError, match="does not hold a JSON object"):
        load(path)
    path.write_text("{")
    with pytest.raises(RunDirError, match="not valid JSON"):
        load(path)


def test_merged_manifest() -> None:
    a = Manifest.of(_current())
    b = Manifest.of(
        _current(
            shard={"name": "2-of-2", "trajectories": ["t3"]},
            started_at="2026-01-01T00:00:00+00:00",
            finished_at="2026-01-03T00:00:00+00:00",
            isolation={"rests_on_system_reset": True, "max_lookahead_s": 4.0},
            audit={"flags": 0},
        )
    )
    out = merged([a, b], ["/r/a", "/r/b"])
    # Key order is the first part's, less the per-part keys; the new keys follow.
    assert list(out) == [
        *(k for k in _current() if k not in {"shard", "isolation"}),
        "merged_from",
        "isolation",
    ]
    assert out["started_at"] == "2026-01-01T00:00:00+00:00"
    assert out["isolation"] == {"rests_on_system_reset": True, "max_lookahead_s": 4.0}
    assert out["merged_from"] == [
        {
            "path": "/r/a",
            "shard": {"name": "1-of-2", "trajectories": ["t1", "t2"]},
            "host": {"hostname": "h1"},
            "started_at": "2026-01-02T00:00:00+00:00",
            "finished_at": None,
        },
        {
            "path": "/r/b",
            "shard": {"name": "2-of-2", "trajectories": ["t3"]},
            "host": {"hostname": "h1"},
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-03T00:00:00+00:00",
        },
    ]
    old_parts = merged([Manifest.of({"started_at": "s"})], ["/r"])
    assert "isolation" not in old_parts
