"""The run directory's high-water marks (tests/helpers/highwater.py): a breach of the work cap
that lasts under a millisecond is missed by the old 10 ms poller and caught every time by
the fanotify watcher, which also sums files that were on disk together."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.highwater import PollWatch, Unavailable, Watch, Watcher

CAP = 1 << 20
BREACH = 2 * CAP
PART = CAP * 6 // 10
"""Under the cap alone, over it with another."""
TRIALS = 50

# A writer in its own process, as the harness is: each file is written whole, closed and
# deleted at once; it prints how long each file was on disk.
WRITER = textwrap.dedent(
    """
    import os, sys, time
    work, sizes, gap = sys.argv[1], [int(s) for s in sys.argv[2].split(",")], float(sys.argv[3])
    os.makedirs(work, exist_ok=True)
    lives, fds, paths = [], [], []
    for i, size in enumerate(sizes):
        path = os.path.join(work, f"s{i}.partial")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        start = time.perf_counter()
        view = memoryview(b"x" * size)
        while view:
            view = view[os.write(fd, view):]
        if gap:  # one file at a time: deleted, then a pause before the next
            os.close(fd)
            os.unlink(path)
            lives.append(time.perf_counter() - start)
            time.sleep(gap)
        else:  # all on disk together for a moment
            fds.append(fd)
            paths.append((path, start))
    for fd in fds:
        os.close(fd)
    for path, start in paths:
        os.unlink(path)
        lives.append(time.perf_counter() - start)
    print(max(lives))
    """
)


def fanotify_watch(out: Path) -> Watch:
    try:
        return Watch(out)
    except Unavailable as e:
        pytest.skip(f"fanotify is not allowed here ({e}); the poller cannot prove a cap")


def write(out: Path, sizes: list[int], gap_s: float = 0.0) -> float:
    """Run the writer; the longest time one of its files was on disk, in seconds."""
    spec = ",".join(map(str, sizes))
    argv = [sys.executable, "-S", "-c", WRITER, str(out / "work" / "t"), spec, str(gap_s)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60)
    return float(done.stdout)


def breaches_caught(make: Callable[[Path], Watcher], root: Path) -> tuple[int, list[float]]:
    caught, lives = 0, []
    for i in range(TRIALS):
        out = root / f"run-{i}"
        with make(out) as watch:
            lives.append(write(out, [BREACH]))
        caught += watch.work_peak > CAP
        assert not list(out.glob("work/**/*.partial"))
    return caught, lives


def test_a_breach_shorter_than_a_poll_is_missed_by_the_poller_and_caught_by_fanotify(
    tmp_path: Path,
) -> None:
    with fanotify_watch(tmp_path / "probe"):  # skips where fanotify is not allowed
        pass
    old, old_lives = breaches_caught(PollWatch, tmp_path / "poll")
    new, new_lives = breaches_caught(Watch, tmp_path / "fanotify")
    lives = sorted(old_lives + new_lives)
    print(
        json.dumps(
            {
                "trials": TRIALS,
                "poller_caught": old,
                "fanotify_caught": new,
                "breach_life_ms_median": round(1000 * lives[len(lives) // 2], 3),
                "breach_life_ms_max": round(1000 * lives[-1], 3),
            }
        )
    )
    # Each 2 MiB file lived about a millisecond: a 10 ms poller sees a few of them at most
    # (and all of them only if the machine stretched every one past its period).
    assert old < TRIALS, f"the poller caught {old} of {TRIALS}"
    assert new == TRIALS, f"fanotify caught {new} of {TRIALS}"


def test_files_on_disk_together_are_summed(tmp_path: Path) -> None:
    # Each under the cap, together over it, for about a millisecond.
    with fanotify_watch(tmp_path / "run") as watch:
        write(tmp_path / "run", [PART, PART])
    assert watch.exact and not watch.problems
    assert watch.work_peak == 2 * PART > CAP


def test_files_one_after_another_are_not_summed(tmp_path: Path) -> None:
    # The same two files, the second written a while after the first was deleted: the
    # overcount the watcher allows (a file deleted and another written within one of its
    # passes) does not reach files that far apart.
    with fanotify_watch(tmp_path / "run") as watch:
        write(tmp_path / "run", [PART, PART], gap_s=0.5)
    assert watch.exact and not watch.problems
    assert watch.work_peak == PART


def test_a_replaced_log_is_an_unmeasured_one(tmp_path: Path) -> None:
    # The log is read once, at the end, because it is only appended to: a log that was
    # swapped for a smaller one cannot be measured after the fact, and the watch says so.
    out = tmp_path / "run"
    (out / "logs").mkdir(parents=True)
    log = out / "logs" / "system.log"
    with fanotify_watch(out) as watch:
        log.write_bytes(b"--- start #1: x\n" + b"y" * 300_000)
        other = log.with_name("other")
        other.write_bytes(b"--- start #1: x\nsmall\n")
        os.replace(other, log)
    assert not watch.exact
    assert any("system.log" in p for p in watch.problems)


def test_an_appended_log_is_measured_at_the_end(tmp_path: Path) -> None:
    out = tmp_path / "run"
    (out / "logs").mkdir(parents=True)
    log = out / "logs" / "system.log"
    with fanotify_watch(out) as watch:
        with log.open("ab") as f:
            f.write(b"--- start #1: x\n" + b"y" * 5000)
        with log.open("ab") as f:
            f.write(b"\n--- start #2: x\n" + b"y" * 100)
    assert watch.exact and not watch.problems
    assert 5000 < watch.section_peak < 5100
