"""The frozen /proc view (harness/runtimes/procview.py, procsnap.py): which paths the rule
covers, what a copy holds, and how each runtime binds it. The boxes themselves are tried in
tests/integration/test_proc_counters.py and tests/containers/test_container_proc_view.py."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from apmbench.harness.runtimes import owned_dirs, procsnap, procview, seccomp

LISTED = (
    "meminfo", "vmstat", "zoneinfo", "buddyinfo", "slabinfo", "pagetypeinfo", "stat",
    "loadavg", "diskstats", "interrupts", "softirqs", "schedstat", "locks", "uptime", "cpuinfo",
)  # fmt: skip
"""The host-wide counter files red team 3 listed (and cpuinfo, whose MHz moves)."""


def fake_proc(root: Path) -> Path:
    """A /proc-shaped tree: counters, a static file, a pid directory, links, a socket."""
    proc = root / "proc"
    (proc / "123").mkdir(parents=True)
    (proc / "123" / "status").write_text("Name:\tpython\n")
    (proc / "meminfo").write_text("MemTotal: 100 kB\nShmem: 7 kB\n")
    (proc / "brand_new_counter").write_text("42\n")
    (proc / "version").write_text("Linux\n")
    (proc / "kpageflags").write_bytes(bytes(64))
    (proc / "self").symlink_to("123")
    (proc / "pressure").mkdir()
    (proc / "pressure" / "io").write_text("some avg10=0.00\n")
    (proc / "sys" / "fs" / "quota").mkdir(parents=True)
    (proc / "sys" / "fs" / "file-nr").write_text("1\t0\t9\n")
    (proc / "sys" / "fs" / "quota" / "syncs").write_text("3\n")
    (proc / "sys" / "kernel" / "random").mkdir(parents=True)
    (proc / "sys" / "kernel" / "random" / "uuid").write_text("u\n")
    (proc / "sys" / "kernel" / "random" / "entropy_avail").write_text("256\n")
    (proc / "irq" / "42").mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as s:  # open() fails on it: what a box cannot read
        s.bind(str(proc / "sys" / "fs" / "register"))
    return proc


def test_every_file_directly_under_proc_is_frozen_but_the_static_ones(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path)
    files, emptied = procsnap.covered(proc)
    # A file no list names (a newer kernel's counter) is frozen by default; the pid
    # directory and the links stay live, as does a static file.
    assert files == ["brand_new_counter", "meminfo", "pressure", "sys/fs",
                     "sys/kernel/random/entropy_avail"]  # fmt: skip
    assert emptied == ["irq", "kpageflags"]


def test_on_this_kernel_every_listed_counter_is_covered() -> None:
    files, emptied = procsnap.covered()
    present = [n for n in LISTED if Path("/proc", n).exists()]
    assert present and set(present) <= set(files)
    assert "sys/fs" in files
    assert "pressure" in files or not Path("/proc/pressure").exists()
    assert "fs" in emptied or not Path("/proc/fs").exists()
    assert set(files).isdisjoint(procsnap.KEPT_LIVE) and "kallsyms" in procsnap.KEPT_LIVE


def test_what_stays_live_is_static_while_processes_work(tmp_path: Path) -> None:
    """The files left live read the same before and after 16 MiB written to a tmpfs and 50
    forks (what moves every counter the rule freezes)."""
    live = [Path("/proc", n) for n in procsnap.KEPT_LIVE if os.access(Path("/proc", n), os.R_OK)]
    before = {p: p.read_bytes() for p in live}
    with open("/dev/shm/apm-procview-test", "wb") as f:
        f.write(bytes(16 << 20))
    try:
        for _ in range(50):
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
        assert {p: p.read_bytes() for p in live} == before
    finally:
        os.unlink("/dev/shm/apm-procview-test")


def test_a_copy_holds_the_content_modes_and_trees_a_box_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = fake_proc(tmp_path)
    (proc / "meminfo").chmod(0o400)
    root = tmp_path / "copy"
    root.mkdir()
    summary = procsnap.take(root, proc)
    assert summary["emptied"] == ["irq", "kpageflags"]
    assert (root / "proc" / "meminfo").read_text() == "MemTotal: 100 kB\nShmem: 7 kB\n"
    assert (root / "proc" / "meminfo").stat().st_mode & 0o777 == 0o400
    assert (root / "proc" / "sys" / "fs" / "quota" / "syncs").read_text() == "3\n"
    assert not (root / "proc" / "sys" / "fs" / "register").exists()  # unreadable: left out
    assert list((root / "proc" / "irq").iterdir()) == []
    assert (root / "proc" / "kpageflags").read_bytes() == b""
    # A file too large to copy is emptied instead.
    monkeypatch.setattr(procsnap, "MAX_BYTES", 4)
    again = tmp_path / "again"
    again.mkdir()
    assert "meminfo" in procsnap.take(again, proc)["emptied"]
    assert (again / "proc" / "meminfo").read_bytes() == b""


def test_the_copy_is_read_without_capabilities(tmp_path: Path) -> None:
    """procsnap drops every capability before it reads: /proc/kmsg (CAP_SYSLOG) is refused
    to it as to a box, where the harness as root would read, and block on, the kernel log."""
    root = tmp_path / "copy"
    root.mkdir()
    done = subprocess.run(
        [sys.executable, "-I", "-S", procsnap.__file__, str(root)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    summary = json.loads(done.stdout)
    if Path("/proc/kmsg").exists():
        assert "kmsg" in summary["unreadable"]
    assert "meminfo" in summary["frozen"]
    meminfo = (root / "proc" / "meminfo").read_text()
    total = next(line for line in meminfo.splitlines() if line.startswith("MemTotal:"))
    live = next(
        ln for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal:")
    )
    assert total == live


def test_one_view_per_process_bound_over_the_live_files() -> None:
    view = procview.current()
    assert procview.current() is view
    assert view.root.is_dir() and view.root.name.startswith(owned_dirs.name_prefix(procview.PREFIX))
    args = view.bwrap_args()
    pairs = [(args[i + 1], args[i + 2]) for i in range(0, len(args), 3)]
    assert all(args[i] == "--ro-bind" for i in range(0, len(args), 3))
    assert ("/proc/meminfo" in view.paths()) and ("/proc/stat" in view.paths())
    for source, path in pairs:
        assert Path(source).exists() and path.startswith("/proc/")
        assert Path(source) == view.root / path.lstrip("/")
    assert view.describe()["frozen"][0].startswith("/proc/")


def test_containers_bind_what_runc_allows_and_mask_the_rest() -> None:
    view = procview.ProcView(
        Path("/x"), frozen=("meminfo", "stat", "vmstat", "pressure", "slabinfo"),
        emptied=("irq", "kpageflags"), unreadable=("slabinfo",), sys_masked=("/sys/kernel/mm",),
    )  # fmt: skip
    assert view.docker_binds() == [(Path("/x/proc/meminfo"), "/proc/meminfo"),
                                   (Path("/x/proc/stat"), "/proc/stat"),
                                   (Path("/x/proc/slabinfo"), "/proc/slabinfo")]  # fmt: skip
    masked = view.docker_masked()
    assert masked[: len(procview.DOCKER_MASKED)] == list(procview.DOCKER_MASKED)
    assert {"/proc/vmstat", "/proc/pressure", "/proc/irq", "/proc/kpageflags",
            "/sys/kernel/mm"} <= set(masked)  # fmt: skip
    assert "/proc/meminfo" not in masked and "/proc/stat" not in masked
    assert "/sys/fs/cgroup" in masked  # its own cgroup tree's statistics: a channel
    assert len(masked) == len(set(masked))


def test_sys_counters_name_each_block_device_once(tmp_path: Path) -> None:
    sys_root = tmp_path / "sys"
    disk = sys_root / "devices" / "pci0" / "block" / "vda"
    (disk / "vda1").mkdir(parents=True)
    (sys_root / "devices" / "system" / "node").mkdir(parents=True)
    (sys_root / "devices" / "system" / "cpu" / "cpu0" / "cpuidle").mkdir(parents=True)
    (sys_root / "devices" / "virtual" / "block" / "loop0").mkdir(parents=True)
    (sys_root / "class" / "block").mkdir(parents=True)
    (sys_root / "class" / "block" / "vda").symlink_to(disk)
    (sys_root / "class" / "block" / "vda1").symlink_to(disk / "vda1")
    (sys_root / "class" / "block" / "loop0").symlink_to(
        sys_root / "devices" / "virtual" / "block" / "loop0"
    )
    assert procview.sys_counters(sys_root) == [
        "/sys/devices/system/node",
        "/sys/devices/virtual/block",
        "/sys/devices/system/cpu/cpu0/cpuidle",
        "/sys/devices/pci0/block/vda",
    ]


def test_a_dead_harness_copy_is_removed_and_a_live_one_kept(tmp_path: Path) -> None:
    dead = tmp_path / f"{procview.PREFIX}999999-1-abc"
    mine = Path(tmp_path / f"{owned_dirs.name_prefix(procview.PREFIX)}xyz")
    dead.mkdir()
    mine.mkdir()
    (dead / "proc").mkdir()
    procview.remove_dead_dirs(tmp_path)
    assert not dead.exists() and mine.exists()


def test_the_filter_refuses_sysinfo_everywhere_a_system_runs() -> None:
    assert "sysinfo" in seccomp.describe()["denied"]  # type: ignore[operator]
    profile = json.loads(seccomp.docker_profile("x86_64"))
    refused = next(r for r in profile["syscalls"] if r.get("errnoRet") == errno.EPERM)
    assert "sysinfo" in refused["names"]
    # The harness's own pod keeps it (its libraries size themselves with it).
    pod = json.loads(seccomp.pod_profile("x86_64"))
    assert all("sysinfo" not in r["names"] for r in pod["syscalls"])
