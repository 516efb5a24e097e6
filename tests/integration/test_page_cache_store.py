"""The page cache as a persistent store (hostile methods, third round, attack 1).

`PageCacheStore` keeps its session count as the residency of pages of a sparse file in its
own package and exports 2 bytes. Unconfined, each start recovers what the last one wrote.
In the sandbox (fresh starts and template starts) the pages a start makes resident while
it serves are evicted when it stops (harness/runtimes/page_cache.py), and eviction
primitives are no-ops (seccomp.py), so no start recovers anything. The image variant is in
tests/containers/test_container_page_cache.py."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.page_cache_store import PAGE, make_package

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.sandbox import Sandbox, SandboxPolicy, find_bwrap
from apmbench.harness.runtimes.start_cgroups import StartCgroups

TESTS = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    find_bwrap() is None, reason="bubblewrap is not installed (apt-get install -y bubblewrap)"
)


def recalled(tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    spec = make_package(tmp_path / "pkg")
    monkeypatch.chdir(tmp_path / "pkg")
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    out = tmp_path / "run"
    runtime = runtime_spec(
        system=spec,
        sandbox=mode != "unconfined",
        spare=True,
        start="template" if mode == "template" else "fresh",
    )
    evaluate(
        EvaluateOptions(
            dataset=TESTS / "fixtures" / "mini",
            out=out,
            runtime=runtime,
            persistence=Persistence.RESTART,
        )
    )
    manifest = json.loads((out / "manifest.json").read_text())
    if mode != "unconfined":
        assert manifest["runtime"]["page_cache"]["reset"] is True, manifest["runtime"]
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    return [json.loads(row["raw_output"]).get("recalled") for row in rows]


@pytest.mark.slow
def test_unconfined_the_page_cache_carries_the_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    got = recalled(tmp_path, "unconfined", monkeypatch)
    assert max((r for r in got if r is not None), default=0) >= 1, got


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["fresh", "template"])
def test_in_the_sandbox_no_start_recovers_anything(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not StartCgroups().available():
        pytest.fail("the page-cache reset needs root and a memory cgroup (CI runs as root)")
    got = recalled(tmp_path, mode, monkeypatch)
    assert got and all(r is None for r in got), got


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("cache", "dirty", "wb", "evicted", "recent")]


def resident_pages(path: Path) -> int:
    """The harness may look (cachestat); a system may not."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        got = _Stat()
        if libc.syscall(451, fd, ctypes.byref(_Range(0, 0)), ctypes.byref(got), 0) != 0:
            pytest.fail(f"cachestat: {os.strerror(ctypes.get_errno())}")
        return int(got.cache)
    finally:
        os.close(fd)


EVICT = r"""
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
for advice in (20, 21):  # MADV_COLD, MADV_PAGEOUT
    m.madvise(advice)
print("asked")
"""


def test_eviction_is_a_no_op_in_the_box(tmp_path: Path) -> None:
    data = tmp_path / "data.bin"
    with open(data, "wb") as w:
        w.write(os.urandom(64 * PAGE))
        os.fsync(w.fileno())  # dirty pages cannot be dropped: the control below needs clean ones
    with open(data, "rb") as f:
        f.read()
    before = resident_pages(data)
    assert before == 64
    box = Sandbox(SandboxPolicy(read_only=(tmp_path,)))
    done = box.run(["/usr/bin/python3", "-c", EVICT, str(data)])
    assert done.returncode == 0 and "asked" in done.stdout, done.stderr
    assert resident_pages(data) == before
    # Unconfined, the same script evicts: the test can see the primitive.
    subprocess.run([sys.executable, "-c", EVICT, str(data)], check=True, capture_output=True)
    assert resident_pages(data) < before
