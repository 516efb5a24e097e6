"""The per-start socket directory on its own, with real processes: pinned, refused, watched."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from apmbench.harness.protocol.client import Deadlines, SystemClient
from apmbench.harness.runtimes.docker import socketdir
from apmbench.harness.runtimes.docker.socketdir import SocketDir, SocketRefused

TESTS = Path(__file__).resolve().parents[1]


def serve(address: str) -> subprocess.Popen[bytes]:
    code = (
        "from apmbench.adapters.sdk import serve; from helpers.systems import JsonMemory; "
        f"serve(JsonMemory(), {address!r})"
    )
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    return subprocess.Popen([sys.executable, "-c", code], env=env)


def listener(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    server.setblocking(False)
    return server


def accepted(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            server.accept()[0].close()
        except BlockingIOError:
            return count
        count += 1


def test_the_client_stays_on_the_verified_socket_when_the_path_is_swapped(
    sock_dir: Path,
) -> None:
    host = listener(sock_dir / "host.sock")
    found = SocketDir.create(os.getuid(), os.getgid(), on_overflow=lambda what: None)
    server = serve(f"unix:{found.path / 'sock'}")
    try:
        pinned = found.wait_socket(30, alive=lambda: server.poll() is None)
        # The server moves its socket aside and points the path at a host socket.
        os.rename(found.path / "sock", found.path / "moved")
        os.symlink(sock_dir / "host.sock", found.path / "sock")
        client = SystemClient(pinned, Deadlines())
        client.wait_serving(30)
        assert client.describe().name == "json-memory"
        client.close()
        assert accepted(host) == 0
    finally:
        server.terminate()
        server.wait()
        found.remove()
        host.close()
    assert not found.path.exists()


@pytest.mark.parametrize("plant", ["symlink", "file", "fifo"])
def test_anything_but_a_socket_is_refused(sock_dir: Path, plant: str) -> None:
    found = SocketDir.create(os.getuid(), os.getgid(), on_overflow=lambda what: None)
    sock = found.path / "sock"
    try:
        if plant == "symlink":
            listener(sock_dir / "host.sock")
            os.symlink(sock_dir / "host.sock", sock)
        elif plant == "file":
            sock.write_text("x")
        else:
            os.mkfifo(sock)
        with pytest.raises(SocketRefused, match="will not follow links") as caught:
            found.wait_socket(5, alive=lambda: True)
        expected = {"symlink": "is a symbolic link", "file": "is not a socket", "fifo": "not a"}
        assert expected[plant] in str(caught.value)
    finally:
        found.remove()


def test_no_socket_and_a_dead_server_say_so(sock_dir: Path) -> None:
    found = SocketDir.create(os.getuid(), os.getgid(), on_overflow=lambda what: None)
    try:
        with pytest.raises(ChildProcessError, match="exited before it created its socket"):
            found.wait_socket(5, alive=lambda: False)
        with pytest.raises(TimeoutError, match="created no socket"):
            found.wait_socket(0.2, alive=lambda: True)
    finally:
        found.remove()


def test_without_root_a_watch_stops_a_writer_past_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What a harness that cannot mount gets: the plain directory and the watch.
    monkeypatch.setattr(socketdir, "bounded_by", lambda: "watch")
    path = Path(tempfile.mkdtemp(prefix="apmd-", dir="/tmp"))
    writer = subprocess.Popen(
        [sys.executable, "-c",
         f"import time\nf = open({str(path / 'fill')!r}, 'wb')\n"
         "while True:\n    f.write(b'x' * (1 << 20)); f.flush(); time.sleep(0.01)"],
    )  # fmt: skip
    seen: list[str] = []

    def kill(what: str) -> None:
        seen.append(what)
        writer.kill()

    found = SocketDir(path, on_overflow=kill)
    try:
        assert writer.wait(timeout=10) != 0
        assert found.overflow is not None and seen == [found.overflow]
        assert "past the 65536-byte, 16-entry bound" in found.overflow
        # Stopped within a few watch periods: about 100 MiB/s for 0.1 s, not without end.
        assert (path / "fill").stat().st_size < 64 << 20
        with pytest.raises(SocketRefused, match="past the"):
            found.wait_socket(5, alive=lambda: True)
    finally:
        writer.kill()
        found.remove()
    assert not path.exists()


def test_as_root_the_directory_is_a_small_tmpfs_and_goes_away() -> None:
    if os.getuid() != 0:
        pytest.skip("only root mounts the tmpfs")
    found = SocketDir.create(10001, 10001, on_overflow=lambda what: None)
    try:
        assert os.path.ismount(found.path)
        stats = os.statvfs(found.path)
        assert stats.f_blocks * stats.f_frsize == socketdir.SIZE_BYTES
        assert (found.path.stat().st_uid, found.path.stat().st_gid) == (10001, 10001)
        with pytest.raises(OSError, match="No space left"):
            (found.path / "fill").write_bytes(b"x" * (1 << 20))
    finally:
        found.remove()
    assert not found.path.exists() and not os.path.ismount(found.path)


def _made_by_a_killed_harness() -> Path:
    """A harness SIGKILLed right after making its socket directory (before any container
    was labelled with it): what it printed is all that is left of it."""
    code = (
        "import os, signal\n"
        "from apmbench.harness.runtimes.docker.socketdir import SocketDir\n"
        "found = SocketDir.create(10001, 10001, on_overflow=lambda what: None)\n"
        "print(found.path, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == -9, done.stderr
    return Path(done.stdout.strip())


def test_a_killed_harness_socket_directory_goes_at_the_next_start_and_nothing_else() -> None:
    if os.getuid() != 0:
        pytest.skip("only root mounts the tmpfs")
    left = _made_by_a_killed_harness()
    assert left.name.startswith("apmd-") and os.path.ismount(left)
    # Named like a dead harness's, but mounted by someone else: not the harness's to touch.
    foreign = Path(tempfile.mkdtemp(prefix="apmd-4123456-123-", dir="/tmp"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "other", str(foreign)], check=True)
    mine = SocketDir.create(10001, 10001, on_overflow=lambda what: None)
    try:
        removed = socketdir.remove_dead()
        assert left in removed and not left.exists() and not os.path.ismount(left)
        assert foreign not in removed and os.path.ismount(foreign)
        assert mine.path not in removed and os.path.ismount(mine.path)
    finally:
        mine.remove()
        subprocess.run(["umount", str(foreign)], check=True)
        foreign.rmdir()
