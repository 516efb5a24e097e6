"""`apmbench-grpc compare` on real run directories: the table, the plot, and refusals."""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers.chat_server import API_KEY, ChatServer, chat_server
from helpers.runs import mini_runs

from apmbench.harness.cli import main

KEY_ENV = "APMBENCH_TEST_JUDGE_KEY"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return mini_runs(tmp_path_factory.mktemp("runs"))


@pytest.fixture
def copies(runs: dict[str, Path], tmp_path: Path) -> dict[str, Path]:
    return {name: Path(shutil.copytree(path, tmp_path / name)) for name, path in runs.items()}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    monkeypatch.setenv(KEY_ENV, API_KEY)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    with chat_server() as s:
        yield s


def compare(*args: str) -> Result:
    return CliRunner().invoke(main, ["compare", *args])


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def judge_args(server: ChatServer) -> list[str]:
    return ["--judge", "openai", "--judge-model", "j", "--judge-base-url", server.url,
            "--judge-api-key-env", KEY_ENV]  # fmt: skip


def test_without_a_judge_the_plot_uses_a_labelled_fallback_not_overall(
    copies: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "cmp"
    result = compare(str(copies["null"]), str(copies["intervene"]), "--out", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text())
    assert data["plot_y_label"] == "Mean of CSU, RTP (not Overall)"
    assert any("Overall is not computed for null, always-intervene" in n for n in data["notes"])
    by_label = {r["label"]: r for r in data["runs"]}
    assert by_label["null"]["overall"] is None
    # null answers A: CSU = (0 + 0 + 100) / 3, RTP = (0 + 0 + 100 + 0) / 4.
    assert by_label["null"]["plot_y"] == pytest.approx((100 / 3 + 25) / 2)
    md = (out / "compare.md").read_text()
    assert "| null | yes | yes | 33.33 | 25.00 | n/c | n/c |" in md
    # A module:Class system is named with what was run (Manifest.shown_name).
    intervene = "always-intervene \\(run as helpers.judge_systems:AlwaysIntervene\\)"
    assert f"| {intervene} |" in md and "Note: Overall is not computed" in md
    assert png_size(out / "tradeoff.png") == (960, 660)
    # The scores that differ are named, each with every run's value; latency never is.
    assert "## Agreement" in md and "Scores that differ" in md
    assert "Overall" not in {d["column"] for d in data["differences"]}  # n/c in both
    columns = {d["column"] for d in data["differences"]}
    assert "Storage/hr" in columns and not any("TTFT" in c or "(s)" in c for c in columns)
    assert "CS Und." not in columns  # both answer A
    html = (out / "compare.html").read_text()
    assert "<svg" in html and "null" in html and "always-intervene" in html


def test_with_a_judge_the_plot_is_overall(
    copies: dict[str, Path], server: ChatServer, tmp_path: Path
) -> None:
    for path in copies.values():
        result = CliRunner().invoke(main, ["score", str(path), *judge_args(server)])
        assert result.exit_code == 0, result.output
    out = tmp_path / "cmp"
    result = compare(str(copies["null"]), str(copies["intervene"]), "--out", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads((out / "compare.json").read_text())
    assert data["plot_y_label"] == "Overall" and data["notes"] == []
    for row in data["runs"]:
        assert row["plot_y"] == row["overall"] is not None
    assert png_size(out / "tradeoff.png") == (960, 660)


def test_runs_scored_differently_are_refused_unless_allowed(
    copies: dict[str, Path], server: ChatServer, tmp_path: Path
) -> None:
    result = CliRunner().invoke(main, ["score", str(copies["null"]), *judge_args(server)])
    assert result.exit_code == 0, result.output
    result = compare(str(copies["null"]), str(copies["intervene"]), "--out", str(tmp_path / "a"))
    assert result.exit_code == 2
    assert "not comparable" in result.output and "scored with" in result.output
    assert "--allow-mismatch" in result.output
    assert not (tmp_path / "a").exists()
    result = compare(
        str(copies["null"]),
        str(copies["intervene"]),
        "--out",
        str(tmp_path / "b"),
        "--allow-mismatch",
    )
    assert result.exit_code == 0, result.output
    assert "compared despite" in (tmp_path / "b" / "compare.md").read_text()


def test_runs_on_different_datasets_are_refused(copies: dict[str, Path], tmp_path: Path) -> None:
    manifest_path = copies["intervene"] / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["dataset_hash"] = "0" * 64
    manifest_path.write_text(json.dumps(manifest))
    result = compare(str(copies["null"]), str(copies["intervene"]), "--out", str(tmp_path / "c"))
    assert result.exit_code == 2 and "was made on dataset 000000000000" in result.output


def test_a_directory_that_is_not_a_run_is_named(tmp_path: Path) -> None:
    result = compare(str(tmp_path), "--out", str(tmp_path / "c"))
    assert result.exit_code == 2 and "not an apmbench run directory" in result.output


def test_score_refuses_a_dataset_with_another_hash(
    copies: dict[str, Path], tmp_path: Path, mini: Path
) -> None:
    other = Path(shutil.copytree(mini, tmp_path / "mini-edited"))
    mcqa = other / "candidates" / "mcqa.json"
    items = json.loads(mcqa.read_text())
    items[0]["correct_option_id"] = "D" if items[0]["correct_option_id"] != "D" else "C"
    mcqa.write_text(json.dumps(items))
    result = CliRunner().invoke(main, ["score", str(copies["null"]), "--dataset", str(other)])
    assert result.exit_code == 2
    assert "the run was made on" in result.output and "labels may differ" in result.output
    result = CliRunner().invoke(main, ["score", str(copies["null"]), "--dataset", str(mini)])
    assert result.exit_code == 0, result.output
