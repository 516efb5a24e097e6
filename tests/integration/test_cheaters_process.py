"""The cheater gallery against `--system` processes: each cheat works unconfined
(`--no-sandbox`, and the run says so) and finds nothing in the sandbox, whether each start
is a fresh box (`sandboxed`) or a fork of the run's template (`template`, `--start
template`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.sandbox import UNCONFINED_NOTE, find_bwrap

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"

pytestmark = pytest.mark.skipif(
    find_bwrap() is None, reason="bubblewrap is not installed (apt-get install -y bubblewrap)"
)
MODES = [
    pytest.param("fresh", id="sandboxed"),
    pytest.param("template", id="template"),
    pytest.param("unconfined", id="unconfined"),
]


@pytest.fixture
def tag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A name for the cheaters' stash files; the unconfined ones land on this host, so
    HOME is a temp dir and what they left in /tmp and /dev/shm is removed afterwards."""
    name = uuid.uuid4().hex[:12]
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    yield name
    for place in ("/tmp", "/dev/shm"):
        Path(place, f"apm-cheat-{name}").unlink(missing_ok=True)


def outputs(
    tmp_path: Path,
    system: str,
    mode: str,
    tag: str,
    persistence: Persistence,
    sandbox_net: bool = False,
) -> list[dict[str, Any]]:
    """Its answers in a run of `mode`: "fresh" (sandboxed), "template" or "unconfined"."""
    sandbox = mode != "unconfined"
    start = "template" if mode == "template" else "fresh"
    out = tmp_path / "run"
    # With a spare process, as `evaluate` runs by default: the next restart's process is
    # alive while the current one serves.
    runtime = runtime_spec(
        system=system,
        sandbox=sandbox,
        env=(f"APMBENCH_CHEAT_TAG={tag}",),
        sandbox_net=sandbox_net,
        spare=True,
        start=start,
    )
    evaluate(
        EvaluateOptions(
            dataset=TESTS / "fixtures" / "mini", out=out, runtime=runtime, persistence=persistence
        )
    )
    manifest = json.loads((out / "manifest.json").read_text())
    report = json.loads((out / "report.json").read_text())
    markdown = (out / "report.md").read_text()
    assert manifest["runtime"]["sandbox"]["confined"] is sandbox
    assert report["sandbox"]["confined"] is sandbox
    assert manifest["runtime"]["start"] == start
    assert ("Template starts" in markdown) is (mode == "template")
    assert (UNCONFINED_NOTE in markdown) is not sandbox
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    for row in rows:
        row["said"] = json.loads(row["raw_output"])
    return rows


@pytest.mark.parametrize("mode", MODES)
def test_ground_truth_reader_finds_no_labels(
    tmp_path: Path, tag: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `tests.helpers...` from the repository root: the sandbox must bind tests/ (the
    # module's package) yet hide tests/fixtures/mini, the dataset, inside it.
    monkeypatch.chdir(REPO)
    rows = outputs(
        tmp_path, "tests.helpers.cheaters:GroundTruthReader", mode, tag, Persistence.RESET
    )
    mcqa = [r for r in rows if "correct" in r]
    assert len(mcqa) == 10
    found = {r["said"]["label_files"] for r in rows}
    if mode != "unconfined":
        assert found == {0}
        # Without labels it answers B everywhere: right only where B is the key.
        assert sum(r["correct"] for r in mcqa) == sum(r["correct_option_id"] == "B" for r in mcqa)
        assert sum(r["correct"] for r in mcqa) < len(mcqa)
    else:
        assert min(found) > 0
        assert all(r["correct"] for r in mcqa)  # caught: every label read off the disk


@pytest.mark.slow
@pytest.mark.usefixtures("helper_env")
@pytest.mark.parametrize("mode", MODES)
def test_disk_stash_loses_its_memory_across_restarts(
    tmp_path: Path, tag: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = outputs(tmp_path, "helpers.cheaters:DiskStash", mode, tag, Persistence.RESTART)
    recalled = [r["said"]["recalled"] for r in rows]
    written = {w for r in rows for w in r["said"]["written"]}
    assert written  # it did stash somewhere every time
    if mode != "unconfined":
        assert not any(recalled), "a restarted process found what an earlier one stashed"
        assert not any(w.startswith(str(tmp_path)) for w in written)  # cwd is read-only
    else:
        assert any(recalled)  # caught: memory outside the export reached a later process
        places = {Path(p).parent for r in recalled for p in r}
        assert Path("/tmp") in places and Path("/dev/shm") in places


@pytest.mark.slow
@pytest.mark.usefixtures("helper_env")
@pytest.mark.parametrize("mode", MODES)
def test_probe_counter_restarts_with_every_process(
    tmp_path: Path, tag: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = outputs(tmp_path, "helpers.cheaters:ProbeCounter", mode, tag, Persistence.RESTART)
    counts = [(r["said"]["local"], r["said"]["total"]) for r in rows]
    if mode != "unconfined":
        assert all(local == total for local, total in counts)
    else:
        assert max(total for _, total in counts) == len(rows)  # counted across every process
        assert any(total > local for local, total in counts)


@pytest.mark.slow
@pytest.mark.usefixtures("helper_env")
@pytest.mark.parametrize("mode", ["sandboxed", "template", "sandbox-net", "unconfined"])
def test_a_spare_process_hears_nothing_from_the_one_serving(
    tmp_path: Path, tag: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spare started for the next restart lives beside the serving process; sandboxed,
    each has its own network namespace, so the two cannot talk. Sharing the host's network
    (`--sandbox-net`) would let them, so no spare is started then."""
    monkeypatch.chdir(tmp_path)
    sandbox, net = mode != "unconfined", mode == "sandbox-net"
    run_mode = {"sandboxed": "fresh", "sandbox-net": "fresh"}.get(mode, mode)
    rows = outputs(
        tmp_path, "helpers.cheaters:LiveHandoff", run_mode, tag, Persistence.RESTART, net
    )
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["runtime"]["spare"] is (mode != "sandbox-net")
    assert sum(r["said"]["seen"] for r in rows) > 0  # it had something to hand over
    recalled = [r["said"]["recalled"] for r in rows]
    if sandbox:
        assert not any(recalled), "a restarted process heard what the one before it saw"
    else:
        assert any(recalled)  # caught: unconfined, the spare heard the serving process


def test_missing_bwrap_refuses_with_the_install_command(tmp_path: Path) -> None:
    cli = Path(sys.executable).parent / "apmbench-grpc"
    env = {**os.environ, "APMBENCH_BWRAP": str(tmp_path / "no-such-bwrap")}
    args = [str(cli), "evaluate", "--dataset", str(TESTS / "fixtures" / "mini")]
    done = subprocess.run(
        [*args, "--system", "null", "--out", str(tmp_path / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "apt-get install -y bubblewrap" in done.stderr and "--no-sandbox" in done.stderr
    assert not (tmp_path / "run").exists()


def test_a_bwrap_that_cannot_build_the_sandbox_is_refused_with_what_to_allow(
    tmp_path: Path,
) -> None:
    """Installed but refused by its surroundings (a container's masked /proc, as the real
    one says in tests/containers/test_k8s_pod.py): exit 2 before any start, naming what the
    node must allow, not a start failure after the dataset was prepared."""
    fake = tmp_path / "bwrap"
    fake.write_text(
        '#!/bin/sh\ncase "$1" in --help) echo --disable-userns; exit 0;; esac\n'
        "echo 'bwrap: Can'\"'\"'t mount proc on /newroot/proc: Operation not permitted' >&2\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    cli = Path(sys.executable).parent / "apmbench-grpc"
    done = subprocess.run(
        [str(cli), "evaluate", "--dataset", str(TESTS / "fixtures" / "mini"),
         "--system", "null", "--out", str(tmp_path / "run")],
        env={**os.environ, "APMBENCH_BWRAP": str(fake)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    said = " ".join(done.stderr.split())
    assert done.returncode == 2, done.stderr
    assert "the sandbox cannot start here: /proc is masked" in said
    assert "procMount: Unmasked" in said and "systempaths=unconfined" in said
    assert not (tmp_path / "run" / "instances.jsonl").exists()
