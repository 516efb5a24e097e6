"""`make demo` never deletes an earlier demo: each one gets a new run directory and
`runs/demo` links to the latest; a real directory there (an older demo) is left alone, and
a demo refused before it wrote anything leaves neither an empty directory nor a dangling
link."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from click.testing import CliRunner

from apmbench.harness.demo import LATEST, demo, new_demo_dir, point_latest

NOON = dt.datetime(2026, 12, 3, 12, 0, 5, tzinfo=dt.UTC)


def test_demos_started_in_one_second_get_directories_of_their_own(tmp_path: Path) -> None:
    made = [new_demo_dir(tmp_path, NOON) for _ in range(3)]
    assert [p.name for p in made] == [
        "demo-20261203-120005",
        "demo-20261203-120005-2",
        "demo-20261203-120005-3",
    ]
    assert all(p.is_dir() for p in made)


def test_the_link_follows_the_latest_demo_and_keeps_the_earlier_ones(tmp_path: Path) -> None:
    first = new_demo_dir(tmp_path, NOON)
    (first / "report.json").write_text("{}")
    point_latest(tmp_path, first)
    second = new_demo_dir(tmp_path, NOON + dt.timedelta(minutes=30))
    said = point_latest(tmp_path, second)
    link = tmp_path / LATEST
    assert link.is_symlink() and os.readlink(link) == second.name
    assert (first / "report.json").read_text() == "{}"
    assert "earlier demos are kept" in said
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([LATEST, first.name, second.name])


def test_an_older_demo_directory_at_the_link_is_left_alone(tmp_path: Path) -> None:
    older = tmp_path / LATEST
    older.mkdir()
    (older / "report.json").write_text("{}")
    new = new_demo_dir(tmp_path, NOON)
    said = point_latest(tmp_path, new)
    assert not older.is_symlink() and (older / "report.json").read_text() == "{}"
    assert str(new) in said and "left as it is" in said


def test_a_refused_demo_leaves_no_empty_directory_and_no_dangling_link(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    earlier = new_demo_dir(runs, NOON)
    point_latest(runs, earlier)
    result = CliRunner().invoke(
        demo, ["--runs", str(runs), "--dataset", str(tmp_path / "no-such-dataset")]
    )
    assert result.exit_code == 2, result.output
    assert "demo: stopped after" in result.output and "exit code 2" in result.output
    assert sorted(p.name for p in runs.iterdir()) == [LATEST, earlier.name]
    assert os.readlink(runs / LATEST) == earlier.name
