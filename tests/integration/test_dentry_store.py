"""Red team 4's dentry-cache store (tests/helpers/dentry_store.py): on this host a message
sent by stat()ing missing names is read back by timing alone; in the box no start recalls
what an earlier one sent, because the dentries a start makes while it serves are charged
to its memory cgroup and reclaimed when it stops. Fresh and template starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import dentry_store

from apmbench.harness.runtimes.start_cgroups import StartCgroups

pytestmark = pytest.mark.usefixtures("helper_env")
CLI = str(Path(sys.executable).parent / "apmbench-grpc")
MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini"


def test_on_this_host_the_dentry_cache_carries_a_message() -> None:
    key = os.urandom(5).hex()
    message = b"kept outside the export"
    dentry_store.send(key, message)
    assert dentry_store.receive(key) == message


@pytest.mark.slow
@pytest.mark.parametrize("start", ["fresh", "template"])
def test_in_the_box_no_start_recalls_the_log(tmp_path: Path, start: str) -> None:
    if not StartCgroups().available():
        pytest.fail("start cgroups need root and the memory, freezer and pids controllers")
    run = tmp_path / "run"
    done = subprocess.run(
        [CLI, "evaluate", "--dataset", str(MINI), "--system", "helpers.dentry_store:DentryLog",
         "--start", start, "--persistence", "restart", "--out", str(run)],
        capture_output=True, text=True, timeout=900, env=dict(os.environ),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    log = (run / "logs" / "system.log").read_text()
    assert "RECALL FAIL" in log, "it tried"
    assert "RECALL OK" not in log
