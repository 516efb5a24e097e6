"""A broken or hostile system (a real sandboxed process) cannot break the harness.

Each test runs the real command line against `helpers.faulty:Faulty` with one
fault, and checks the guarantee the fault would break: output is data, not
markup or escapes; SIGTERM cleans up like Ctrl-C; resume refuses other
confinement; a failed start leaves a reusable directory; exported state, the
snapshots on disk and the log are bounded; every deadline is its own flag.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.campaign import leftovers, scores
from helpers.highwater import Watcher, biggest_section, watcher

pytestmark = pytest.mark.usefixtures("helper_env")


def cmd(out: Path, fault: str, *extra: str, token: str = "") -> list[str]:
    return [
        sys.executable, "-m", "apmbench.harness.cli", "evaluate",
        "--synthetic", "tiny", "--seed", "0", "--system", "helpers.faulty:Faulty", "--persistence", "reset",
        "--out", str(out), "--env", f"APMBENCH_FAULT={fault}",
        "--env", f"APMBENCH_CAMPAIGN={token or 'none'}", *extra,
    ]  # fmt: skip


def run(out: Path, fault: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd(out, fault, *extra), capture_output=True, text=True, timeout=300)


def measured(watch: Watcher) -> None:
    """The peak is proven only by fanotify; the poller it falls back to can miss a breach."""
    assert not watch.problems
    if not watch.exact:
        pytest.skip("the work peak needs fanotify (CAP_SYS_ADMIN); the poller can miss a breach")


def test_markup_and_escapes_in_a_systems_error_are_printed_as_text(tmp_path: Path) -> None:
    done = run(tmp_path / "run", "markup:query:1")
    assert done.returncode == 3, done.stderr  # a MarkupError would exit 1
    assert "[/bogus]" in done.stderr
    assert "rerun with --resume" in done.stderr
    for escape in ("\x1b", "\x07", "\x9b", "\r"):
        assert escape not in done.stderr + done.stdout


@pytest.mark.slow
def test_sigterm_stops_like_ctrl_c_then_resume_finishes(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    assert run(whole, "none").returncode == 0
    out = tmp_path / "run"
    token = uuid.uuid4().hex
    proc = subprocess.Popen(
        cmd(out, "none", token=token), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 120
    while not list(Path("/tmp").glob(f"apm-{proc.pid}-*")):
        assert proc.poll() is None and time.monotonic() < deadline, "the system never started"
        time.sleep(0.02)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "stopped by SIGTERM" in stderr and "--resume" in stderr
    time.sleep(0.2)
    assert leftovers(token, proc.pid) == []
    resumed = subprocess.run(
        [*cmd(out, "none", token=token), "--resume"], capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert scores(out) == scores(whole)


def test_sighup_stops_like_ctrl_c(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    proc = subprocess.Popen(
        cmd(tmp_path / "run", "none", token=token),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not list(Path("/tmp").glob(f"apm-{proc.pid}-*")):
        assert proc.poll() is None and time.monotonic() < deadline, "the system never started"
        time.sleep(0.02)
    proc.send_signal(signal.SIGHUP)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGHUP, stderr
    assert "stopped by SIGHUP" in stderr
    time.sleep(0.2)
    assert leftovers(token, proc.pid) == []


@pytest.mark.slow
def test_resume_refuses_other_confinement_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert run(out, "crash:end_session:1").returncode == 3
    before = json.loads((out / "manifest.json").read_text())
    unconfined = run(out, "none", "--resume", "--no-sandbox")
    assert unconfined.returncode == 2, unconfined.stderr
    assert "confinement.sandbox.confined: True then, False now" in unconfined.stderr
    bigger_log = run(out, "none", "--resume", "--max-log-size", "1g")
    assert bigger_log.returncode == 2, bigger_log.stderr
    assert "confinement.max_log_bytes" in bigger_log.stderr
    no_cap = run(out, "none", "--resume", "--max-state-size", "none")
    assert no_cap.returncode == 2 and "settings.max_state_bytes" in no_cap.stderr
    assert json.loads((out / "manifest.json").read_text()) == before
    assert run(out, "none", "--resume").returncode == 0


@pytest.mark.slow
def test_a_failed_start_leaves_a_directory_that_reruns(tmp_path: Path) -> None:
    out = tmp_path / "run"
    failed = run(out, "symlink-socket")
    assert failed.returncode == 3, failed.stderr
    assert "not a Unix socket" in failed.stderr
    assert "rerun the same command (with or without --resume)" in failed.stderr
    assert not (out / "manifest.json").exists() and (out / "logs" / "system.log").exists()
    again = run(out, "symlink-socket", "--resume")
    assert again.returncode == 3, again.stderr  # not 2: "not an apmbench run directory"
    assert run(out, "none").returncode == 0


def test_exported_state_is_capped_and_nothing_partial_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with watcher(out) as watch:
        done = run(out, "huge-state::1:4000000", "--max-state-size", "256k")
    assert done.returncode == 3, done.stderr
    assert "--max-state-size" in done.stderr and "262144 bytes" in done.stderr
    assert watch.work_peak <= 256 << 10
    assert not list(out.glob("work/**/*.partial"))
    measured(watch)


def test_snapshots_on_disk_are_capped_naming_the_flag(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with watcher(out) as watch:
        done = run(out, "huge-state::1:200000", "--max-work-size", "300k")
    assert done.returncode == 3, done.stderr
    assert "--max-work-size" in done.stderr
    assert watch.work_peak <= 300 << 10
    measured(watch)


@pytest.mark.slow
def test_snapshots_are_deleted_once_no_fork_needs_them(tmp_path: Path) -> None:
    out = tmp_path / "run"
    peak = 0
    proc = subprocess.Popen(cmd(out, "none"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while proc.poll() is None:
        # The run removes snapshot directories while this looks: one can vanish mid-glob.
        with contextlib.suppress(FileNotFoundError):
            peak = max(peak, len(list(out.glob("work/*/after_*.state"))))
        time.sleep(0.005)
    assert proc.returncode == 0
    sessions = json.loads((out / "manifest.json").read_text())["dataset"]["sessions"]
    # Kept all along, every session's snapshot would be on disk at the end of the main pass.
    assert 0 < peak < sessions


@pytest.mark.slow
def test_log_is_bounded_per_start_with_a_notice(tmp_path: Path) -> None:
    out = tmp_path / "run"
    # restart: a start per session, each its own bounded section.
    done = run(out, "flood::0:2000000", "--max-log-size", "64k", "--persistence", "restart")
    assert done.returncode == 0, done.stderr
    log = out / "logs" / "system.log"
    text = log.read_bytes()
    starts = text.count(b"--- start #")
    assert starts >= 2
    assert text.count(b"output truncated") == starts
    assert biggest_section(log) <= (64 << 10) + 512
    assert log.stat().st_size <= starts * ((64 << 10) + 512)


@pytest.mark.parametrize(
    ("fault", "flag"),
    [
        ("hang:push:1", "--push-timeout"),
        ("hang:end_session:1", "--end-session-timeout"),
        ("hang:export:1", "--state-timeout"),
        ("hang:start_session:1", "--control-timeout"),
    ],
)
def test_each_deadline_is_a_flag_its_timeout_names(tmp_path: Path, fault: str, flag: str) -> None:
    out = tmp_path / "run"
    done = run(out, fault, flag, "1.5")
    assert done.returncode == 3, done.stderr
    assert f"raise {flag}" in done.stderr
    assert "--query-timeout" not in done.stderr
    # The flag's deadline fired, not a default (the message names the seconds it had):
    # an event, where a wall-clock bound failed on a loaded machine.
    assert " has 1.5 s: raise " in done.stderr, done.stderr[-1500:]
    recorded = json.loads((out / "manifest.json").read_text())["settings"]["deadlines_s"]
    assert 1.5 in recorded.values()


@pytest.mark.slow
def test_sigkilled_harness_leftovers_are_removed_by_the_next_start(tmp_path: Path) -> None:
    out = tmp_path / "run"
    token = uuid.uuid4().hex
    proc = subprocess.Popen(
        cmd(out, "none", token=token), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    while not list(Path("/tmp").glob(f"apm-{proc.pid}-*")):
        assert proc.poll() is None and time.monotonic() < deadline, "the system never started"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert list(Path("/tmp").glob(f"apm-{proc.pid}-*")), "nothing was left to clean"
    resumed = subprocess.run(
        [*cmd(out, "none", token=token), "--resume"], capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    time.sleep(0.2)
    assert leftovers(token, proc.pid) == []


@pytest.mark.slow
def test_a_stop_signal_during_a_systems_removal_lets_the_removal_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apmbench.adapters.sdk import errors
    from apmbench.harness.protocol.client import Deadlines
    from apmbench.harness.runtimes.process import ProcessRuntime
    from apmbench.harness.stopping import Stopped, stop_signals_interrupt

    # Hung in a call, the system outlasts its graceful stop: the removal waits seconds.
    monkeypatch.setenv("APMBENCH_FAULT", "hang:reset:1")
    runtime = ProcessRuntime("helpers.faulty:Faulty", tmp_path / "system.log", Deadlines())
    with pytest.raises(Stopped), stop_signals_interrupt():
        client = runtime.start()
        socket_dir = Path(runtime.address.removeprefix("unix:")).parent
        hung = threading.Thread(target=lambda: _swallow(errors.ApmbenchError, client.reset, "t"))
        hung.start()
        time.sleep(0.5)
        threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
        runtime.stop()
    hung.join()
    assert not socket_dir.exists()  # the signal did not cut the removal short


def _swallow(kind: type[BaseException], fn: Callable[..., object], *args: object) -> None:
    with contextlib.suppress(kind):
        fn(*args)
