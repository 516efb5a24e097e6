"""The cheater gallery in gVisor with restores (`--start snapshot`): every start is a
restore of one snapshot in a kernel of its own, so each cheat that a shared-kernel box
had to stop with a filter of its own finds nothing here, with no filter at all.

Each cheater is the one its shared-kernel test keeps (the positive controls, unconfined,
stay there): a disk stash in /tmp and /dev/shm, a probe counter in a file, a live
hand-off to the next start, the page cache of a file in its own package, the dentry
cache, and labels read off the disk. Run in `restart` mode on `mini`; each asserts on
what the cheater says it recovered, so "closed" is told from "it happened not to help".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import atime_store, page_timer
from helpers.page_cache_store import make_package

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec

TESTS = Path(__file__).resolve().parents[1]
MINI = TESTS / "fixtures" / "mini"
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.usefixtures("helper_env"),
    pytest.mark.skipif(shutil.which("runsc") is None, reason="gVisor's runsc is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="runsc runs its sandboxes as root"),
]


@pytest.fixture
def tag() -> Iterator[str]:
    name = uuid.uuid4().hex[:12]
    yield name
    for place in ("/tmp", "/dev/shm"):
        Path(place, f"apm-cheat-{name}").unlink(missing_ok=True)


def answers(
    out: Path,
    system: str,
    tag: str,
    persistence: Persistence = Persistence.RESTART,
    max_log_bytes: int = 64 << 20,
) -> list[dict[str, Any]]:
    evaluate(
        EvaluateOptions(
            dataset=MINI,
            out=out,
            runtime=runtime_spec(
                system=system,
                env=(f"APMBENCH_CHEAT_TAG={tag}",),
                start="snapshot",
                max_log_bytes=max_log_bytes,
            ),
            persistence=persistence,
        )
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["runtime"]["start"] == "snapshot"
    assert manifest["runtime"]["spare"] is False
    measured = json.loads((out / "logs" / "starts.json").read_text())
    if persistence is Persistence.RESTART:
        assert measured["snapshot"] is True and measured["restores"] >= 4, measured
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    for row in rows:
        row["said"] = json.loads(row["raw_output"])
    return rows


def test_a_disk_stash_is_gone_in_every_restore(
    tmp_path: Path, tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = answers(tmp_path / "run", "helpers.cheaters:DiskStash", tag)
    assert {w for r in rows for w in r["said"]["written"]}  # it stashed every time
    assert not any(r["said"]["recalled"] for r in rows)


def test_a_probe_counter_starts_again_in_every_restore(
    tmp_path: Path, tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = answers(tmp_path / "run", "helpers.cheaters:ProbeCounter", tag)
    counts = [(r["said"]["local"], r["said"]["total"]) for r in rows]
    assert counts and all(local == total for local, total in counts), counts


def test_no_restore_hears_the_start_before_it(
    tmp_path: Path, tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = answers(tmp_path / "run", "helpers.cheaters:LiveHandoff", tag)
    assert sum(r["said"]["seen"] for r in rows) > 0  # it had something to hand over
    assert not any(r["said"]["recalled"] for r in rows)


def test_the_page_cache_of_its_own_package_carries_no_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = make_package(tmp_path / "pkg")
    monkeypatch.chdir(tmp_path / "pkg")
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    rows = answers(tmp_path / "run", spec, "page-cache")
    got = [r["said"].get("recalled") for r in rows]
    assert got and all(r is None for r in got), got


def test_the_dentry_cache_carries_no_log(tmp_path: Path) -> None:
    out = tmp_path / "run"
    answers(out, "helpers.dentry_store:DentryLog", "dentry")
    log = (out / "logs" / "system.log").read_text()
    assert "RECALL FAIL" in log, "it tried"
    assert "RECALL OK" not in log


def test_no_label_is_on_the_disk_it_can_read(
    tmp_path: Path, tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(TESTS.parent)  # tests/ bound (the module's package), mini hidden
    rows = answers(
        tmp_path / "run", "tests.helpers.cheaters:GroundTruthReader", tag, Persistence.RESET
    )
    assert {r["said"]["label_files"] for r in rows} == {0}
    mcqa = [r for r in rows if "correct" in r]
    assert sum(r["correct"] for r in mcqa) == sum(r["correct_option_id"] == "B" for r in mcqa)


def _timer(out: Path) -> list[str]:
    text = (out / "logs" / "system.log").read_text()
    return [line.split("timer: ")[1] for line in text.splitlines() if "timer: " in line]


def _resident(path: Path) -> int:
    """Bytes of `path` in the host's page cache (util-linux's fincore)."""
    done = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout.strip() or 0)


def test_the_host_page_cache_behind_the_file_proxy_carries_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red team 12's channel: a page of a bound file that a start reads stays in the host's
    page cache, and the next start times its reads. Each start's cgroups, reclaimed when it
    stops, close it; the positive control, the same run with the reclaim switched off,
    reads tokens back, or, where a loaded machine's timing reads nothing (CI beside other
    work: 0 of 16), leaves the pages its starts read resident on the host, the channel's
    medium, which the reclaim removes."""
    from apmbench.harness.runtimes.snapshot import SnapshotRuntime

    def timed(name: str) -> tuple[list[str], int]:
        spec = page_timer.make_package(tmp_path / name / "pkg")
        with monkeypatch.context() as m:
            m.chdir(tmp_path / name / "pkg")
            m.syspath_prepend(str(tmp_path / name / "pkg"))
            answers(tmp_path / name / "run", spec, name)
        pool = tmp_path / name / "pkg" / "pctimer" / "pool.bin"
        return _timer(tmp_path / name / "run"), _resident(pool)

    with monkeypatch.context() as m:
        m.setattr(SnapshotRuntime, "reclaims_pages", False)
        control, control_resident = timed("control")
    closed, closed_resident = timed("closed")
    assert control.count("MATCH") >= 2 or control_resident >= 64 * 4096, (
        control,
        control_resident,
    )
    assert closed_resident < control_resident / 4, (closed_resident, control_resident)
    assert len(closed) >= 4, closed
    assert closed.count("MATCH") == 0, closed


def test_host_access_times_behind_the_file_proxy_carry_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red team 13's channel: runsc's gofer bound the read-only paths `rw,relatime` at host
    level, so a read in the box set the host file's access time, and a later start read it
    with stat(). Binds of read-only, noatime host mounts close it; the positive control,
    the same run with the plain binds, reads tokens back."""
    from apmbench.harness.runtimes.snapshot import SnapshotRuntime

    def stored(name: str) -> list[str]:
        spec = atime_store.make_package(tmp_path / name / "pkg")
        with monkeypatch.context() as m:
            m.chdir(tmp_path / name / "pkg")
            m.syspath_prepend(str(tmp_path / name / "pkg"))
            answers(tmp_path / name / "run", spec, name)
        text = (tmp_path / name / "run" / "logs" / "system.log").read_text()
        return [line.split("atime: ")[1] for line in text.splitlines() if "atime: " in line]

    with monkeypatch.context() as m:
        m.setattr(SnapshotRuntime, "noatime_binds", False)
        # The overlays that give the box file systems of its own keep access times too
        # (a read through one touches the overlay's inode, not the host file's).
        m.setattr(SnapshotRuntime, "private_statfs", False)
        control = stored("control")
    assert control.count("MATCH") >= 2, control
    closed = stored("closed")
    assert len(closed) >= 4, closed
    assert closed.count("MATCH") == 0 and closed.count("MISS") == 0, closed
    with monkeypatch.context() as m:
        m.setattr(SnapshotRuntime, "noatime_binds", False)
        overlays_only = stored("overlays-only")
    assert len(overlays_only) >= 4, overlays_only
    assert overlays_only.count("MATCH") == 0, overlays_only


def test_free_blocks_carry_nothing_from_one_restore_to_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red team 14's register: statfs() in the box reported the host disk's free blocks,
    which a start's own output (kept in the run's log) moved for the next start to read.
    With every path in the box on a file system of the box's own, each restore sees the
    same counts; the positive control, the host's file systems, sees them move."""
    from apmbench.harness.runtimes.snapshot import SnapshotRuntime

    def reads(name: str) -> list[str]:
        out = tmp_path / name
        answers(out, "helpers.free_blocks:FreeBlocks", name)
        text = (out / "logs" / "system.log").read_text()
        return [line.split("statfs: ")[1] for line in text.splitlines() if "statfs: " in line]

    with monkeypatch.context() as m:
        m.setattr(SnapshotRuntime, "private_statfs", False)
        control = reads("control")
    assert len(control) >= 4 and len(set(control)) > 1, control
    closed = reads("closed")
    assert len(closed) >= 4, closed
    assert len(set(closed)) == 1, closed
    assert all(value[0] >= 0 for value in json.loads(closed[0]).values()), closed[0]


def test_the_copies_of_etc_keep_no_access_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red team 15's cells: the box's copies of /etc's files lie on a tmpfs that lasts the
    run, and a read set a copy's access time there for a later start to stat(). The tmpfs
    is noatime; the positive control (its default, relatime) sees the reads."""
    from apmbench.harness.runtimes.snapshot import SnapshotRuntime

    def reads(name: str) -> list[int]:
        out = tmp_path / name
        answers(out, "helpers.etc_atime:EtcAtime", name)
        text = (out / "logs" / "system.log").read_text()
        return [int(line.split("etc-atime: ")[1]) for line in text.splitlines() if "etc-atime: " in line]  # fmt: skip

    with monkeypatch.context() as m:
        m.setattr(SnapshotRuntime, "noatime_binds", False)
        control = reads("control")
    assert len(control) >= 4 and max(control) >= 2, control
    closed = reads("closed")
    assert len(closed) >= 4 and max(closed) == 0, closed


def test_a_tree_too_deep_to_recurse_is_removed_and_the_run_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Red team 15: a chain of 1,500 directories in the control directory at every export.
    shutil.rmtree raised RecursionError on it and the run died with the box's tmpfs
    mounted on the host; each start's directory is now removed whatever its depth."""
    from apmbench.harness.runtimes import snapshot

    with monkeypatch.context() as m:  # the positive control: the removal of before
        m.setattr(snapshot, "_remove_tree", lambda p: shutil.rmtree(p, ignore_errors=True))
        with pytest.raises(RecursionError):
            answers(tmp_path / "control", "helpers.deep_tree:DeepTree", "deep")
    answers(tmp_path / "run", "helpers.deep_tree:DeepTree", "deep")
    # starts.json is the stop's last record: it ran to the end.
    assert (tmp_path / "run" / "logs" / "starts.json").is_file()


def test_no_link_in_the_control_directory_is_followed(tmp_path: Path, tag: str) -> None:
    """Red team 16: the harness wrote `address` and `go` after the restore, as root and
    following links, so a thread of the restored system could point them at any host
    path first. They are written before the box runs, without following links: every
    plant fails and nothing appears on the host."""
    rows = [
        int(line.split("planted: ")[1])
        for line in _log_of(tmp_path / "run", "helpers.control_links:PlantsAddress", tag)
        if "planted: " in line
    ]
    made = [Path(f"/tmp/apm-cheat-{tag}-{n}") for n in ("address", "go")]
    try:
        assert len(rows) >= 4 and set(rows) == {0}, rows
        assert not any(p.exists() or p.is_symlink() for p in made)
    finally:
        for p in made:
            p.unlink(missing_ok=True)


def test_a_link_where_the_socket_belongs_is_refused(tmp_path: Path, tag: str) -> None:
    from apmbench.harness.errors import RuntimeStartError

    with pytest.raises(RuntimeStartError, match="symbolic link"):
        answers(tmp_path / "run", "helpers.control_links:LinksSocket", tag)


def _log_of(out: Path, system: str, tag: str) -> list[str]:
    answers(out, system, tag)
    return (out / "logs" / "system.log").read_text().splitlines()


def test_a_start_that_floods_its_output_is_kept_to_its_log_bound(tmp_path: Path) -> None:
    """Red team 16: a start's output grew a host file without bound and was read back
    whole. It now goes through a pipe into the start's log section, which keeps
    `--max-log-size` (here 1 MiB) of it and says what it dropped."""
    out = tmp_path / "run"
    answers(out, "helpers.floods_log:FloodsLog", "flood", max_log_bytes=1 << 20)
    log = out / "logs" / "system.log"
    sections = log.read_text(errors="replace").count("(gVisor) ---")
    assert sections >= 5
    assert log.stat().st_size <= sections * ((1 << 20) + 4096), log.stat().st_size
    assert "output truncated" in log.read_text(errors="replace")
