"""The parts that keep a hostile system's output, labels and paths from reaching further."""

from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from rich.console import Console

from apmbench.harness import shown
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.docker import leftovers, socketdir
from apmbench.harness.runtimes.docker.settings import BindMount, ContainerSettings
from apmbench.harness.runtimes.logcap import LogSection
from apmbench.harness.runtimes.socket_dirs import remove_dead_dirs

HOSTILE = "[/bogus] \x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m\r\x9b2J\x1bP+q\x1b\\ok"
DEAD_PID = 4_123_456  # above any pid_max: no such process


def test_system_text_prints_through_rich_as_text() -> None:
    out = io.StringIO()
    Console(file=out, force_terminal=False).print(f"[red]error:[/red] {shown.markup(HOSTILE)}")
    text = out.getvalue()
    assert "[/bogus]" in text and "red" in text and text.rstrip().endswith("ok")
    assert not any(c in text for c in "\x1b\x07\x9b\r")


def test_plain_keeps_newlines_and_tabs() -> None:
    assert shown.plain("a\tb\nc\x1b[1m\x00") == "a\tb\nc"


def test_log_section_is_bounded_and_closed_sections_take_nothing(tmp_path: Path) -> None:
    log = tmp_path / "system.log"
    first = LogSection(log, "start #1", max_bytes=100)
    for _ in range(50):
        first.write(b"x" * 30)
    late = threading.Thread(target=lambda: first.write(b"LATE" * 10))
    first.close()
    second = LogSection(log, "start #2", max_bytes=100)
    late.start()
    late.join()
    second.write(b"y" * 10)
    second.close()
    text = log.read_bytes()
    one, two = text.split(b"--- start #2\n")
    assert (
        one.count(b"x" * 100) == 1
        and b"x" * 101 not in one
        and b"output truncated" in one
        and b"--max-log-size" in one
    )
    assert two == b"y" * 10 and b"LATE" not in text
    assert first.dropped == 50 * 30 - 100 + 40


def test_socket_dir_removal_never_goes_through_dotdot(tmp_path: Path) -> None:
    victim = Path(tempfile.mkdtemp(prefix="victim-", dir="/tmp"))
    (victim / "precious").write_text("x")
    bait = Path(tempfile.mkdtemp(prefix="apmd-", dir="/tmp"))
    try:
        path = Path(f"{bait}/../{victim.name}")
        assert str(path).startswith(socketdir.PREFIX)
        socketdir.remove_path(path)
        assert leftovers.own_socket_dir(str(path)) is None
        assert (victim / "precious").exists()
        link = Path(f"{socketdir.PREFIX}link-{victim.name}")
        link.symlink_to(victim)
        try:
            socketdir.remove_path(link)
            assert leftovers.own_socket_dir(str(link)) is None
            assert (victim / "precious").exists()
        finally:
            link.unlink()
        assert leftovers.own_socket_dir(str(bait)) == bait
    finally:
        (victim / "precious").unlink()
        victim.rmdir()
        bait.rmdir()


def test_copied_labels_do_not_prove_ownership(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APMBENCH_CACHE", str(tmp_path / "cache"))
    owner = leftovers.Owner("host", DEAD_PID, 1.0)
    made = leftovers.labels("k", tmp_path, "T1", owner, Path("/tmp/apmd-abc"))
    assert leftovers.proved(made)
    assert oct((tmp_path / "cache" / "leftovers.key").stat().st_mode & 0o777) == "0o600"
    forged = {**made, leftovers.SOCKET_DIR: "/tmp/apmd-abc/../home"}
    assert not leftovers.proved(forged)
    assert not leftovers.proved({k: v for k, v in made.items() if k != leftovers.PROOF})
    monkeypatch.setenv("APMBENCH_CACHE", str(tmp_path / "other"))
    assert not leftovers.proved(made)  # another user's (or machine's) secret


def test_a_read_only_socket_mount_is_a_relaxation(tmp_path: Path) -> None:
    path = Path(tempfile.mkdtemp(prefix="s-", dir="/tmp")) / "engine.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        settings = ContainerSettings(mounts=(BindMount.parse(f"{path}:/var/run/docker.sock"),))
        assert any("socket mount" in r for r in settings.relaxations())
        assert any("socket mount" in r for r in settings.record()["relaxations"])
        plain = ContainerSettings(mounts=(BindMount.parse(f"{tmp_path}:/data"),))
        assert plain.relaxations() == []
    finally:
        server.close()
        path.unlink()
        path.parent.rmdir()


def test_each_rpc_has_its_deadline_and_flag() -> None:
    d = Deadlines(push=7.0, state=9.0, end_session=11.0, control=3.0, query=5.0)
    assert d.of("PushFrames") == (7.0, "--push-timeout")
    assert d.of("ExportState") == (9.0, "--state-timeout")
    assert d.of("ImportState") == (9.0, "--state-timeout")
    assert d.of("EndSession") == (11.0, "--end-session-timeout")
    assert d.of("Query") == (5.0, "--query-timeout")
    assert d.of("StartSession") == (3.0, "--control-timeout")


def test_dead_harness_dirs_go_but_links_and_live_ones_stay(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("x")
    dead = Path(tempfile.mkdtemp(prefix=f"apm-{DEAD_PID}-123-", dir="/tmp"))
    (dead / "sock").write_text("")
    started = round(psutil.Process().create_time() * 100)
    live = Path(tempfile.mkdtemp(prefix=f"apm-{os.getpid()}-{started}-", dir="/tmp"))
    # This very pid, but a harness that started at another time: a reused pid.
    reused = Path(tempfile.mkdtemp(prefix=f"apm-{os.getpid()}-{started - 500}-", dir="/tmp"))
    link = Path(f"/tmp/apm-{DEAD_PID + 1}-123-link")
    link.symlink_to(victim)
    try:
        removed = remove_dead_dirs()
        assert dead in removed and not dead.exists()
        assert reused in removed and not reused.exists()
        assert live.exists() and link.is_symlink() and (victim / "precious").exists()
    finally:
        link.unlink()
        live.rmdir()


def test_a_stop_signal_while_a_system_is_being_started_waits_for_the_step() -> None:
    from apmbench.harness.stopping import Stopped, stop_signals_interrupt, uninterrupted

    # Whatever handler was there before (another library in this process may have set
    # one, Ray's does) is what the context must restore.
    before = signal.getsignal(signal.SIGTERM)
    steps = []
    with pytest.raises(Stopped) as stopped, stop_signals_interrupt():
        with uninterrupted():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the handler has run by now, and must not have raised
            steps.append("child recorded")
        steps.append("after the step")
    assert steps == ["child recorded"] and stopped.value.exit_code == 143
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("where", ["making the command", "after the process started"])
def test_a_stop_signal_in_the_middle_of_a_launch_leaks_no_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A SIGHUP landing between making a start's socket directory and keeping the launch
    (CI caught one: the test signals as soon as the directory appears) must not leave the
    directory or the process behind: stop() removes everything the runtime made."""
    from apmbench.harness.protocol.client import Deadlines
    from apmbench.harness.runtimes.process import ProcessRuntime
    from apmbench.harness.stopping import Stopped, stop_signals_interrupt

    runtime = ProcessRuntime("null", tmp_path / "system.log", Deadlines())
    made = runtime.argv

    def argv() -> list[str]:
        if where == "making the command":
            os.kill(os.getpid(), signal.SIGHUP)  # raised at once: the directory exists
        return made()

    monkeypatch.setattr(runtime, "argv", argv)
    if where == "after the process started":
        # Pending until the uninterrupted step that started the process ends.
        popen = subprocess.Popen

        def popen_then_signal(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
            proc = popen(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGHUP)
            return proc

        monkeypatch.setattr(subprocess, "Popen", popen_then_signal)
    mine = f"apm-{os.getpid()}-*"
    before = set(Path("/tmp").glob(mine))
    with pytest.raises(Stopped), stop_signals_interrupt(), runtime:
        runtime.start()
    assert set(Path("/tmp").glob(mine)) == before


def test_a_spares_log_section_waits_for_its_promotion(tmp_path: Path) -> None:
    """A spare process starts while the current one serves: its output is held back until
    it is promoted, so the two never share a section; a spare never promoted leaves
    nothing in the log."""
    log = tmp_path / "system.log"
    serving = LogSection(log, "start #1: serve x", 1 << 10)
    spare = LogSection(log, "start #2: serve x", 1 << 10, deferred=True)
    unused = LogSection(log, "start #3: serve x", 1 << 10, deferred=True)
    spare.write(b"spare starting\n")
    unused.write(b"never promoted\n")
    serving.write(b"answering\n")
    serving.close()
    spare.activate()
    spare.write(b"spare serving\n")
    spare.close()
    unused.close()
    assert log.read_text() == (
        "--- start #1: serve x\nanswering\n--- start #2: serve x\nspare starting\nspare serving\n"
    )


# Two windows after the command: exit handlers, and the interpreter's own teardown (where
# Python-level signal handlers are already reset to the default).
LATE = {
    "atexit": "atexit.register(lambda: os.kill(os.getpid(), signal.SIGTERM))\n",
    "teardown": (
        "class Late:\n"
        "    def __del__(self, kill=os.kill, pid=os.getpid(), sig=signal.SIGTERM):\n"
        "        kill(pid, sig)\n"
        "late = Late()\n"
    ),
}


@pytest.mark.parametrize("window", sorted(LATE))
def test_a_stop_signal_after_the_command_ended_does_not_kill_the_exit(window: str) -> None:
    """A scheduler's SIGTERM landing while a finished run's interpreter exits must not turn
    exit 0 into a death by signal (it has nothing left to stop)."""
    script = (
        "import atexit, os, signal, sys\n"
        + LATE[window]
        + "sys.argv = ['apmbench-grpc', '--help']\n"
        "from apmbench.harness.cli import run\n"
        "run()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
