"""`--start snapshot`: every start of a `--system` restores one pristine snapshot, taken at
the system's loaded point, inside gVisor (harness/runtimes/snapshot.py).

- The scores are the system's own: text-only on `mini` in `restart` mode scores what its
  recorded report says (tests/fixtures/reports), each session a restore plus ImportState.
- Red team 10's register in the kernel's inode-number counters (tests/helpers/
  inode_register.py) reads what the start before it left on a shared kernel unless the
  harness scrambles the counters; this runtime scrambles nothing, and no restore reads it,
  because the counters are the snapshot's, in a kernel of the start's own. The positive
  control: the same system in `reset` mode, one live kernel across sessions, reads back
  what it wrote.
- A server that never marks the loaded point gets a full start in gVisor every time.
- `--command` gets the same: restores for a server that marks the point, full starts in
  gVisor for one that does not (the Node template), a disk stash gone in every restore.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.sandbox import STANDARD_NODES

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
MINI = TESTS / "fixtures" / "mini"
pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("runsc") is None, reason="gVisor's runsc is not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="runsc runs its sandboxes as root"),
]


def run(out: Path, system: str, persistence: Persistence = Persistence.RESTART) -> dict[str, Any]:
    evaluate(
        EvaluateOptions(
            dataset=MINI,
            out=out,
            runtime=runtime_spec(system=system, start="snapshot"),
            persistence=persistence,
        )
    )
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def starts(out: Path) -> dict[str, Any]:
    measured: dict[str, Any] = json.loads((out / "logs" / "starts.json").read_text())
    return measured


def _owners() -> dict[str, tuple[int, int, int]]:
    return {str(n): (s.st_uid, s.st_gid, s.st_mode) for n in STANDARD_NODES for s in [os.stat(n)]}


def test_every_start_restores_the_snapshot_and_scores_stay_the_systems(tmp_path: Path) -> None:
    out = tmp_path / "run"
    nodes = _owners()
    report = run(out, "text-only")
    # runsc chowns the stdio it is given to the sandbox's user: handed /dev/null, it made
    # the host's /dev/null 65534's, and every later bubblewrap box failed on it.
    assert _owners() == nodes
    recorded = json.loads((TESTS / "fixtures" / "reports" / "mini-text-only.json").read_text())
    for key in ("tasks", "families", "overall", "storage"):
        assert report[key] == recorded[key], key
    measured = starts(out)
    assert measured["snapshot"] is True and measured["boundary"] == "gvisor", measured
    assert measured["starts"] >= 4 and measured["restores"] == measured["starts"] - 1, measured
    assert measured["image_bytes"] > 0 and measured["restore_s"]["median"] > 0
    assert report["sandbox"]["tool"] == "gvisor" and report["sandbox"]["start"] == "snapshot"
    head = (out / "report.md").read_text().split("## ", 1)[0]
    assert "**Boundary: gVisor** (`--start snapshot`)" in head, head
    # No runsc sandbox, state or image is left behind.
    assert not list(Path("/tmp").glob(f"apmgv-*/bundles/start-{os.getpid()}-*"))


def _register(out: Path) -> list[str]:
    text = (out / "logs" / "system.log").read_text()
    return [line.split("register: ")[1] for line in text.splitlines() if "register: " in line]


@pytest.mark.usefixtures("helper_env")
def test_no_restore_reads_the_inode_register_the_start_before_wrote(tmp_path: Path) -> None:
    cheater = "helpers.inode_register:InodeRegister"
    run(tmp_path / "restart", cheater)
    seen = _register(tmp_path / "restart")
    assert len(seen) >= 3, seen
    assert seen.count("MATCH") <= 1, seen  # 1 in 1024 by accident
    # The control: one live process (and kernel) across its sessions reads its own mark
    # wherever an import follows its own export (8 of 16 here: a fork or replay imports an
    # older state, whose checksum is not the last written), far above 1 in 1024.
    run(tmp_path / "reset", cheater, Persistence.RESET)
    control = _register(tmp_path / "reset")
    assert control.count("MATCH") >= 3, control


@pytest.mark.usefixtures("helper_env")
def test_a_server_that_never_marks_the_loaded_point_gets_a_full_start_each_time(
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    run(out, "helpers.unmarked:Unmarked")
    measured = starts(out)
    assert measured["snapshot"] is False and measured["restores"] == 0, measured
    assert measured["starts"] >= 4, measured


def run_command(
    out: Path, command: str, persistence: Persistence = Persistence.RESTART
) -> dict[str, Any]:
    evaluate(
        EvaluateOptions(
            dataset=MINI,
            out=out,
            runtime=runtime_spec(command=command, start="snapshot"),
            persistence=persistence,
        )
    )
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def test_a_command_that_marks_the_loaded_point_restores_it_every_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--command` gets the same boundary and the same restores as `--system`: here the
    SDK's server run by its command line, which marks the point as every SDK server does."""
    monkeypatch.chdir(REPO)
    out = tmp_path / "run"
    report = run_command(
        out, f"{sys.executable} -m apmbench.adapters text-only --address {{address}}"
    )
    recorded = json.loads((TESTS / "fixtures" / "reports" / "mini-text-only.json").read_text())
    for key in ("tasks", "families", "overall", "storage"):
        assert report[key] == recorded[key], key
    measured = starts(out)
    assert measured["snapshot"] is True and measured["restores"] == measured["starts"] - 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["runtime"]["kind"] == "command" and manifest["runtime"]["start"] == "snapshot"
    assert manifest["runtime"]["sandbox"]["tool"] == "gvisor"
    assert "**Boundary: gVisor**" in (out / "report.md").read_text().split("## ", 1)[0]


def test_a_node_server_that_never_marks_the_point_gets_a_full_start_in_gvisor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, node_template: Path
) -> None:
    """A server of another language written before the loaded point existed (the Node
    template, protocol 1.1) works unchanged: every start is a full one, still in gVisor."""
    monkeypatch.chdir(node_template)
    out = tmp_path / "run"
    report = run_command(out, "node server.js {address}")
    measured = starts(out)
    assert measured["snapshot"] is False and measured["restores"] == 0, measured
    assert measured["starts"] >= 4, measured
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    assert rows and all(r["raw_output"] for r in rows)
    assert report["sandbox"]["tool"] == "gvisor"


@pytest.mark.usefixtures("helper_env")
def test_a_command_that_stashes_on_disk_recalls_nothing_in_a_restore(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tag = uuid.uuid4().hex[:12]
    monkeypatch.chdir(REPO)  # bound read-only: the SDK and tests/helpers, on PYTHONPATH
    monkeypatch.setenv("APMBENCH_CHEAT_TAG", tag)
    out = tmp_path / "run"
    try:
        evaluate(
            EvaluateOptions(
                dataset=MINI,
                out=out,
                runtime=runtime_spec(
                    command=f"{sys.executable} -m apmbench.adapters helpers.cheaters:DiskStash "
                    "--address {address}",
                    env=(f"APMBENCH_CHEAT_TAG={tag}", "PYTHONPATH"),
                    start="snapshot",
                ),
                persistence=Persistence.RESTART,
            )
        )
    finally:
        for place in ("/tmp", "/dev/shm"):
            Path(place, f"apm-cheat-{tag}").unlink(missing_ok=True)
    said = [json.loads(json.loads(line)["raw_output"])
            for line in (out / "instances.jsonl").read_text().splitlines()]  # fmt: skip
    assert starts(out)["restores"] >= 4
    assert any(s["written"] for s in said)
    assert not any(s["recalled"] for s in said), "a restore found what an earlier start stashed"
