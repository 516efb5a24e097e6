"""`--command`: any executable as a sandboxed, restartable server. The Node.js template passes
`check` and evaluates in restart mode; a cheater run by command is confined like `--system`."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from apmbench.harness.check import Outcome, run_suite, select
from apmbench.harness.check.render import failures
from apmbench.harness.errors import ConfigError
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.command import CommandRuntime, command_process, parse_command
from apmbench.harness.runtimes.sandbox import find_bwrap

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "containers" / "template-node"
MINI = REPO / "tests" / "fixtures" / "mini"
NODE_COMMAND = "node server.js {address}"
DEADLINES = Deadlines(control=30, push=60, query=30, state=120, end_session=60)

needs_bwrap = pytest.mark.skipif(
    find_bwrap() is None, reason="bubblewrap (bwrap) is missing (apt-get install -y bubblewrap)"
)


def test_the_template_carries_the_proto_it_serves() -> None:
    ours = REPO / "proto" / "apmbench" / "v1" / "memory_system.proto"
    assert (TEMPLATE / "memory_system.proto").read_text() == ours.read_text(), (
        "containers/template-node/memory_system.proto differs from proto/: run `npm run proto` "
        "in containers/template-node"
    )


@needs_bwrap
def test_the_node_template_passes_every_check_by_command(
    node_template: Path, tmp_path: Path
) -> None:
    runtime = command_process(
        NODE_COMMAND, tmp_path / "system.log", DEADLINES, 30, sandbox=True, cwd=node_template
    )
    with runtime:
        report = run_suite(runtime, select())
    assert report.ok, "\n".join(failures(report))
    outcomes = {r.name: r.outcome for r in report.results}
    # Nothing is skipped for want of a restart: the command runtime restarts the server.
    assert outcomes["persistence-restart"] is Outcome.PASS
    assert outcomes["reflection"] is Outcome.PASS
    assert report.target["system"]["protocol_version"] == "1.1"  # type: ignore[index]
    facts = report.target["runtime"]
    assert facts["kind"] == "command" and facts["sandbox"]["confined"] is True  # type: ignore[index]
    assert (tmp_path / "system.log").read_text().count("--- start") == 2


@pytest.mark.slow
@needs_bwrap
def test_the_node_template_evaluates_in_restart_mode(
    node_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(node_template)
    out = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=MINI,
            out=out,
            runtime=runtime_spec(command=NODE_COMMAND),
            persistence=Persistence.RESTART,
        )
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["runtime"]["kind"] == "command"
    assert manifest["system"]["protocol_version"] == "1.1"
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    assert rows and all(r["raw_output"] for r in rows)
    starts = (out / "logs" / "system.log").read_text().count("--- start")
    sessions = sum(len(t["sessions"]) for t in json.loads((MINI / "dataset.json").read_text())[
        "trajectories"
    ])  # fmt: skip
    assert starts >= sessions  # a fresh process per session at least (restart persistence)
    report = json.loads((out / "report.json").read_text())
    assert report["sandbox"]["confined"] is True


def test_a_command_without_the_address_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"has no \{address\}: put \{address\} where"):
        CommandRuntime("node server.js", tmp_path / "log", DEADLINES, cwd=tmp_path)
    with pytest.raises(ConfigError, match="is not an executable"):
        CommandRuntime("no-such-server-xyz {address}", tmp_path / "log", DEADLINES)


def _stash_rows(tmp_path: Path, sandbox: bool, tag: str) -> list[dict[str, Any]]:
    out = tmp_path / f"run-{sandbox}"
    command = f"{sys.executable} -m apmbench.adapters tests.helpers.cheaters:DiskStash "
    evaluate(
        EvaluateOptions(
            dataset=MINI,
            out=out,
            runtime=runtime_spec(
                command=command + "--address {address}",
                sandbox=sandbox,
                env=(f"APMBENCH_CHEAT_TAG={tag}", f"PYTHONPATH={REPO}"),
            ),
            persistence=Persistence.RESTART,
        )
    )
    lines = (out / "instances.jsonl").read_text().splitlines()
    return [json.loads(json.loads(line)["raw_output"]) for line in lines]


@pytest.mark.slow
@needs_bwrap
@pytest.mark.parametrize("sandbox", [True, False], ids=["sandboxed", "unconfined"])
def test_a_command_that_stashes_memory_on_disk_finds_nothing_when_sandboxed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox: bool
) -> None:
    tag = uuid.uuid4().hex[:12]
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(REPO)
    try:
        said = _stash_rows(tmp_path, sandbox, tag)
    finally:
        # Unconfined, it also stashes in its working directory, the repository.
        for place in ("/tmp", "/dev/shm", str(REPO)):
            Path(place, f"apm-cheat-{tag}").unlink(missing_ok=True)
    assert any(s["written"] for s in said)
    recalled = [s["recalled"] for s in said]
    if sandbox:
        assert not any(recalled), "a restarted command found what an earlier one stashed"
    else:
        assert any(recalled)  # the cheat works unconfined: the test can see it


@needs_bwrap
def test_the_template_passes_check_started_from_another_directory(
    node_template: Path, tmp_path: Path
) -> None:
    """`node /abs/dir/server.js` from anywhere: the named file's directory is readable, so
    node finds the template's node_modules and its .proto beside the script."""
    command = f"node {node_template / 'server.js'} {{address}}"
    runtime = command_process(
        command, tmp_path / "system.log", DEADLINES, 30, sandbox=True, cwd=tmp_path
    )
    with runtime:
        report = run_suite(runtime, select())
    assert report.ok, "\n".join(failures(report))


@needs_bwrap
def test_a_server_under_tmp_evaluates_when_started_from_tmp(
    node_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`evaluate --command "node /tmp/X/server.js {address}"` run from /tmp itself: the box's
    /tmp is its own, and the named directory under the host's /tmp is bound into it."""
    server = tmp_path / "srv"
    shutil.copytree(node_template, server, symlinks=True)
    assert str(server).startswith("/tmp/")
    monkeypatch.chdir("/tmp")
    out = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=MINI,
            out=out,
            runtime=runtime_spec(command=f"node {server / 'server.js'} {{address}}"),
            persistence=Persistence.RESET,
        )
    )
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    assert rows and all(r["raw_output"] for r in rows)
    assert json.loads((out / "report.json").read_text())["sandbox"]["confined"] is True


def test_a_shim_interpreter_is_refused_naming_the_real_one(tmp_path: Path) -> None:
    """A version manager's shim (a script that execs the interpreter it picks) would fail
    inside the box with a missing file: refused before anything starts, naming the real
    interpreter it asked the shim for."""
    shim = tmp_path / "shims" / "python3"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    shim.chmod(0o755)
    with pytest.raises(ConfigError) as refused:
        parse_command(f"{shim} server.py {{address}}", tmp_path)
    message = str(refused.value)
    assert str(shim) in message and f"give the interpreter it runs, {sys.executable}" in message


def _readable(
    policy_cwd: Path, words: list[str], probe: str, unmask: bool = False
) -> dict[str, Any]:
    from apmbench.harness.runtimes.command import command_policy
    from apmbench.harness.runtimes.sandbox import Sandbox, labelled_dirs

    policy = command_policy(words, Path(sys.executable), policy_cwd, (), {})
    if unmask:  # the protection switched off: the labelled directories' masks removed
        labelled = set(labelled_dirs(policy.read_only))
        policy = dataclasses.replace(
            policy, hidden=tuple(h for h in policy.hidden if h not in labelled)
        )
    done = Sandbox(policy).run([sys.executable, "-c", probe])
    assert done.returncode == 0, done.stderr
    seen: dict[str, Any] = json.loads(done.stdout)
    return seen


@needs_bwrap
def test_runs_datasets_caches_and_the_harness_stay_masked_under_a_readable_directory(
    tmp_path: Path,
) -> None:
    """An earlier run under the directory a command starts from (the default --out lies
    there) holds labels and judge references: masked, like any dataset, judge cache and
    the harness package, wherever they lie under what the sandbox can read."""
    work = tmp_path / "method"
    (work / "runs" / "old" / "trajectories").mkdir(parents=True)
    (work / "runs" / "old" / "manifest.json").write_text("{}")
    (work / "runs" / "old" / "instances.jsonl").write_text('{"correct_option_id": "C"}\n')
    (work / "copy" / "of" / "data").mkdir(parents=True)
    (work / "copy" / "of" / "data" / "dataset.json").write_text("{}")
    (work / "elsewhere" / "judge-cache").mkdir(parents=True)
    (work / "elsewhere" / "judge-cache" / "reply.json").write_text("{}")
    (work / "server.py").write_text("")
    probe = (
        "import json, os, importlib.util\n"
        f"root = {str(work)!r}\n"
        "paths = ['runs/old', 'copy/of/data', 'elsewhere/judge-cache']\n"
        "seen = {p: sorted(os.listdir(os.path.join(root, p))) for p in paths}\n"
        "seen['server'] = os.path.exists(os.path.join(root, 'server.py'))\n"
        "seen['harness'] = importlib.util.find_spec('apmbench.harness') is not None\n"
        "print(json.dumps(seen))\n"
    )
    seen = _readable(work, [sys.executable, str(work / "server.py")], probe)
    assert seen == {
        "runs/old": [], "copy/of/data": [], "elsewhere/judge-cache": [],
        "server": True, "harness": False,
    }  # fmt: skip
    # The other half: without those masks the same server reads the earlier run's labels.
    bare = _readable(work, [sys.executable, str(work / "server.py")], probe, unmask=True)
    assert "instances.jsonl" in bare["runs/old"]
    assert bare["copy/of/data"] == ["dataset.json"]
    assert bare["elsewhere/judge-cache"] == ["reply.json"]


@needs_bwrap
def test_a_server_that_dies_before_serving_is_told_what_its_sandbox_passed(
    tmp_path: Path,
) -> None:
    from apmbench.harness.errors import RuntimeStartError

    server = tmp_path / "server.py"
    server.write_text("import sys\nsys.exit('no model directory given')\n")
    runtime = command_process(
        f"{sys.executable} {server} {{address}}",
        tmp_path / "log",
        DEADLINES,
        30,
        sandbox=True,
        cwd=tmp_path,
    )
    with pytest.raises(RuntimeStartError) as failed, runtime:
        runtime.start()
    message = str(failed.value)
    assert "no model directory given" in message
    readable = message.split("could read only the system directories and: ")[1].split(";")[0]
    assert str(tmp_path) in readable.split(", ")
    assert "--env NAME=VALUE" in message and "name the path on the command line" in message


@pytest.mark.slow
def test_a_command_is_named_by_its_executable_beside_its_describe_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`go-memory --no-batches {address}` is "go-memory" (once it was "--no-batches"); the
    manifest keeps that name beside the one the server's Describe gives."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "go-memory"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -m apmbench.adapters null --address "$2"\n')
    exe.chmod(0o755)
    monkeypatch.chdir(REPO)
    # Unconfined: the sandbox's private /tmp would hide the wrapper (naming is the same).
    spec = runtime_spec(command=f"{exe} --no-batches {{address}}", sandbox=False)
    assert spec.label == "go-memory"
    out = tmp_path / "run"
    evaluate(EvaluateOptions(dataset=MINI, out=out, runtime=spec))
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["system_name"] == {"harness": "go-memory", "described": "null"}
    assert manifest["system"]["name"] == "null"
    assert manifest["runtime"]["kind"] == "command"
