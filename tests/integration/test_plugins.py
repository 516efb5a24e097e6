"""A method author's system and a benchmark author's suite, from their own distribution.

A tiny package (a system and a suite, each registered by a Python entry point)
is built and pip-installed with `--target` into the test's temp dir, never into
the shared environment; `apmbench-grpc` then finds both by name through
`PYTHONPATH`, as it would after `pip install my-method`, with no edit here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PYPROJECT = """\
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "apmbench-plugin-probe"
version = "0.1"

[tool.setuptools]
packages = ["plugin_probe"]

[project.entry-points."apmbench_grpc.systems"]
echo-null = "plugin_probe.system:EchoNull"
not-a-system = "plugin_probe.system:NotASystem"

[project.entry-points."apmbench_grpc.runtimes"]
plain-process = "plugin_probe.runtime:PlainProcess"

[project.entry-points."apmbench_grpc.suites"]
myprobe = "plugin_probe.suite:MyProbe"

[project.entry-points."apmbench_grpc.judges"]
agree = "plugin_probe.judge:Agree"
"""

# A judge is a class built from the judge settings, with its own check of them: this one
# gives every gate-passing probe the rubric's top score without a model.
JUDGE = """\
import json

from apmbench.harness.errors import ConfigError


class Agree:
    max_concurrency = 4

    @classmethod
    def check_config(cls, config):
        if config.path is not None and not config.path.exists():
            raise ConfigError(f"--judge agree:PATH: {config.path} does not exist")

    def __init__(self, config):
        self.cache_identity = {"kind": "agree"}
        self.identity = {"kind": "agree", "what": "a plugin's judge"}
        self.calls = 0

    def complete(self, messages):
        self.calls += 1
        checks = dict.fromkeys(
            ("task_fidelity", "historical_or_registration_grounding",
             "current_trigger_or_silence_grounding", "factual_support", "usefulness"),
            "pass",
        )
        return json.dumps({"score": 5, "criterion_checks": checks, "critical_issues": [],
                           "justification": "agrees"})

    def close(self):
        pass
"""

# The system's module imports only the SDK: a sandboxed system sees no harness.
SYSTEM = """\
from apmbench.adapters.sdk import SystemInfo
from apmbench.adapters.systems.null import NullSystem


class EchoNull(NullSystem):
    def describe(self) -> SystemInfo:
        info = super().describe()
        return SystemInfo(name="echo-null", version="7", capabilities=info.capabilities)


class NotASystem:
    pass
"""

# A runtime is one class: how it is built, the options it takes; its confinement facts
# are ProcessRuntime's (no sandbox recorded: unconfined).
RUNTIME = """\
import os

from apmbench.harness.runtimes.process import ProcessRuntime


class PlainProcess(ProcessRuntime):
    kind = "plain-process"
    options = {"serve": "the registered system or module:Class to serve, unconfined"}

    @classmethod
    def from_spec(cls, spec, launch):
        serve = dict(spec.runtime_options)["serve"]
        return cls(serve, launch.run_dir / "logs" / "system.log", launch.deadlines,
                   launch.startup_timeout_s, env=dict(os.environ))
"""

# The suite reuses EgoProbe's format under its own name: its datasets say
# "benchmark": "myprobe", and it reads them through a view that EgoProbe's loader accepts.
SUITE = """\
import json
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from apmbench.harness.errors import DatasetError
from apmbench.harness.suites.egoprobe.suite import EgoProbe


class MyProbe(EgoProbe):
    name: ClassVar[str] = "myprobe"
    title: ClassVar[str] = "MyProbe"

    def dataset_format(self):
        own = super().dataset_format()

        def synthetic(preset, seed):
            source = own.synthetic(preset, seed)
            out = source.parent / f"myprobe-{source.name}"
            if not out.is_dir():
                out.mkdir()
                for child in source.iterdir():
                    if child.name != "dataset.json":
                        (out / child.name).symlink_to(child)
                doc = json.loads((source / "dataset.json").read_text())
                (out / "dataset.json").write_text(json.dumps({**doc, "benchmark": "myprobe"}))
            return out

        def load(root, media):
            root = Path(root)
            doc = json.loads((root / "dataset.json").read_text())
            if root.name.endswith("-as-egoprobe"):  # the path a run's manifest records
                return own.load(root, media)
            if doc.get("benchmark") != "myprobe":
                raise DatasetError(f"{root}: not a myprobe dataset")
            view = root.parent / f".{root.name}-as-egoprobe"
            if not view.is_dir():
                view.mkdir()
                for child in root.iterdir():
                    if child.name != "dataset.json":
                        (view / child.name).symlink_to(child.resolve())
                (view / "dataset.json").write_text(json.dumps({**doc, "benchmark": "egoprobe"}))
            return own.load(view, media)

        return replace(own, synthetic=synthetic, load=load)
"""


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("plugin-src")
    (src / "pyproject.toml").write_text(PYPROJECT)
    (src / "plugin_probe").mkdir()
    (src / "plugin_probe" / "__init__.py").write_text("")
    (src / "plugin_probe" / "system.py").write_text(SYSTEM)
    (src / "plugin_probe" / "suite.py").write_text(SUITE)
    (src / "plugin_probe" / "runtime.py").write_text(RUNTIME)
    (src / "plugin_probe" / "judge.py").write_text(JUDGE)
    target = tmp_path_factory.mktemp("plugin-site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--no-build-isolation", "--no-index", "--target", str(target), str(src)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert list(target.glob("apmbench_plugin_probe-0.1.dist-info/entry_points.txt"))
    return target


def _cli(args: list[str], plugin: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # The test's own synthetic cache: the plugin suite writes beside its datasets.
    env = {**os.environ, "APMBENCH_CACHE": str(plugin.parent / "plugin-cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(plugin),
                                                       os.environ.get("PYTHONPATH", "")]))}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", *args],
        capture_output=True, text=True, timeout=600, env=env, cwd=cwd,
    )  # fmt: skip


def test_the_plugin_is_not_in_the_shared_environment() -> None:
    from importlib.metadata import PackageNotFoundError, distribution

    with pytest.raises(PackageNotFoundError):
        distribution("apmbench-plugin-probe")


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", [True, False], ids=["sandboxed", "no-sandbox"])
def test_plugin_system_and_suite_evaluate_by_name(
    plugin_path: Path, tmp_path: Path, sandbox: bool
) -> None:
    out = tmp_path / "run"
    args = ["evaluate", "--benchmark", "myprobe", "--synthetic", "tiny", "--seed", "0",
            "--system", "echo-null", "--out", str(out)]  # fmt: skip
    done = _cli(args + ([] if sandbox else ["--no-sandbox"]), plugin_path, tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["benchmark"] == "myprobe"
    assert manifest["system_name"] == {"harness": "echo-null", "described": "echo-null"}
    # Served by its target: the sandbox binds the plugin's package, not its metadata.
    assert manifest["runtime"]["system"] == "plugin_probe.system:EchoNull"
    report = json.loads((out / "report.json").read_text())
    assert report["single_turn"]["all"]["n"] > 0
    # A later command resolves the suite by the name the manifest records.
    rescored = _cli(["score", str(out)], plugin_path, tmp_path)
    assert rescored.returncode == 0, rescored.stderr


@pytest.mark.slow
def test_plugin_runtime_takes_its_declared_options_and_says_it_is_unconfined(
    plugin_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    base = ["evaluate", "--benchmark", "egoprobe", "--synthetic", "tiny", "--seed", "0",
            "--runtime", "plain-process", "--out", str(out)]  # fmt: skip
    wrong = _cli([*base, "--runtime-option", "sevre=null"], plugin_path, tmp_path)
    assert wrong.returncode == 2
    assert "runtime 'plain-process' takes no option sevre (it takes: serve)" in wrong.stderr
    done = _cli([*base, "--runtime-option", "serve=echo-null"], plugin_path, tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["runtime"]["kind"] == "plain-process"
    assert json.loads((out / "report.json").read_text())["sandbox"]["confined"] is False


def test_plugin_names_are_listed_checked_and_suggested(plugin_path: Path, tmp_path: Path) -> None:
    listed = _cli(["systems", "--json"], plugin_path, tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert "apmbench-plugin-probe" in rows["echo-null"]["memory"]
    typo = _cli(["evaluate", "--benchmark", "myprobee", "--synthetic", "tiny"], plugin_path,
                tmp_path)  # fmt: skip
    assert typo.returncode == 2
    assert "(did you mean 'myprobe'" in typo.stderr
    wrong = _cli(["serve", "not-a-system", "--address", f"unix:{tmp_path}/s.sock"], plugin_path,
                 tmp_path)  # fmt: skip
    assert wrong.returncode != 0
    assert "not a subclass of MemorySystem" in wrong.stderr + wrong.stdout


@pytest.mark.slow
def test_a_plugin_judge_is_picked_by_name_and_checks_its_settings(
    plugin_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    base = ["evaluate", "--synthetic", "tiny", "--seed", "0", "--system", "text-log",
            "--out", str(out)]  # fmt: skip
    wrong = _cli([*base, "--judge", f"agree:{tmp_path / 'missing'}"], plugin_path, tmp_path)
    assert wrong.returncode == 2 and "does not exist" in wrong.stderr, wrong.stderr
    assert not out.exists()
    unknown = _cli([*base, "--judge", "agre"], plugin_path, tmp_path)
    assert unknown.returncode == 2 and "(installed: agree)" in unknown.stderr, unknown.stderr
    done = _cli([*base, "--judge", "agree"], plugin_path, tmp_path)
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["scoring"]["judge"]["kind"] == "agree"
    report = json.loads((out / "report.json").read_text())
    assert manifest["scoring"]["judge_calls"]["model_calls"] > 0
    assert report["families"]["adaptive_response"]["score"] is not None
