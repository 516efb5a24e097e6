"""Nothing outside a runtime branches on a runtime's kind: what a resumed run must keep
(`Runtime.resume_facts`) and what a report says of the confinement
(`Runtime.confinement_facts`) are each runtime's own, found by the kind the manifest
records through the one registry; what the rest of the harness needs to know of a system's
runtime (its name, what --resume must find unchanged, whether spares apply) it asks the
spec, which asks the runtime's own config (`RuntimeConfig`)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from apmbench.harness.errors import ConfigError
from apmbench.harness.runtimes import (
    RuntimeConfig,
    confinement,
    resume_facts,
    runtime_spec,
)
from apmbench.harness.runtimes.base import PluginOptions
from apmbench.harness.runtimes.docker.settings import ContainerSettings, GpuRequest
from apmbench.harness.runtimes.registry import BUILTIN as RUNTIMES
from apmbench.harness.runtimes.registry import RUNTIME_REGISTRY

ROOT = Path(__file__).resolve().parents[2]
SCANNED = (ROOT / "harness", ROOT / "adapters")
RUNTIMES_DIR = ROOT / "harness" / "runtimes"


def _builtin_names() -> tuple[set[str], set[str]]:
    """The built-in runtimes' classes and config types (with the config bases they share),
    and their config's fields: what code outside the runtimes would name to tell one
    runtime from another, or to read one runtime's settings."""
    classes = {"RUNTIME_REGISTRY"}  # the kind -> class table is the runtimes' own
    fields: set[str] = set()
    for kind in RUNTIMES:
        runtime = RUNTIME_REGISTRY.load(kind)
        classes.add(runtime.__name__)
        for config in runtime.config_type.__mro__:
            if config is RuntimeConfig:
                break
            classes.add(config.__name__)
        fields |= {f.name for f in dataclasses.fields(runtime.config_type)}
    # The options that name a runtime, read off a spec as the flat one once held them.
    return classes, fields | {"system", "command", "endpoint", "image"}


CLASSES, FIELDS = _builtin_names()
SPEC_NAMES = ("spec", "runtime", "config")
"""What a spec, a runtime or a runtime's config is called where it is held."""


def _kind_strings(node: ast.expr) -> list[str]:
    values = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return [
        v.value
        for v in values
        if isinstance(v, ast.Constant) and isinstance(v.value, str) and v.value in RUNTIMES
    ]


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def violations(source: str, where: str) -> list[str]:
    """Each place in `source` that tells a built-in runtime from another: a runtime's kind
    compared with (`spec.kind == "docker"`, `kind in ("process", "command")`), matched
    (`case "endpoint":`) or used as a key (`{"docker": ...}[kind]`); a built-in runtime's
    class or config type named (`isinstance(runtime, EndpointRuntime)`); or one runtime's
    setting read off a spec, runtime or config (`spec.image is not None`,
    `opts.runtime.command`, `spec.config.address`). The same words elsewhere (a click
    option's name "command", the package "docker", `args.command`) are not flagged."""
    tree = ast.parse(source, where)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.Compare):
            kinds = [k for v in (node.left, *node.comparators) for k in _kind_strings(v)]
            what = f"compares with {kinds}" if kinds else None
        elif isinstance(node, ast.MatchValue):
            kinds = _kind_strings(node.value)
            what = f"matches {kinds}" if kinds else None
        elif isinstance(node, ast.Dict):
            kinds = [k for key in node.keys if key is not None for k in _kind_strings(key)]
            what = f"keys a table by {kinds}" if kinds else None
        elif isinstance(node, ast.Name) and node.id in CLASSES:
            what = f"names {node.id}"
        elif isinstance(node, ast.alias) and node.name in CLASSES:
            what = f"imports {node.name}"
        elif isinstance(node, ast.Attribute):
            if node.attr in CLASSES:
                what = f"names {node.attr}"
            elif node.attr in FIELDS and id(node) not in called:
                holder = _last_name(node.value) or ""
                if holder.endswith(SPEC_NAMES):
                    what = f"reads {holder}.{node.attr}"
        if what is not None:
            found.append(f"{where}:{getattr(node, 'lineno', '?')}: {what}")
    return found


def _scan(roots: tuple[Path, ...], skip: Path) -> list[str]:
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if path.is_relative_to(skip):
                continue
            found += violations(path.read_text(), str(path.relative_to(root.parent)))
    return found


def test_no_module_outside_the_runtimes_tells_one_runtime_from_another() -> None:
    assert _scan(SCANNED, RUNTIMES_DIR) == []


PLANTED = """
def system_spec(spec, runtime, opts, record):
    if spec.image is not None:
        return f"{spec.image} ({runtime.describe()['image']['id']})"
    if opts.runtime.command:
        return spec.config.address or spec.endpoint
    if record["kind"] in ("process", "command"):
        return None
    match spec.kind:
        case "endpoint":
            return None
    if isinstance(runtime, EndpointRuntime):
        return {"docker": 1}[spec.kind]
    return RUNTIME_REGISTRY.load(spec.kind)
"""

UNRELATED = """
import click

HARNESS_ONLY = ("apmbench-grpc", "click", "docker")

@click.option("--command", "command", help="a command line")
def run(command, args, parser):
    parser.add_subparsers(dest="command")
    runtime.start()
    return args.command, args.image, runtime.kind, spec.name, spec.label
"""


def test_the_scan_finds_a_planted_violation_of_each_kind_and_nothing_unrelated(
    tmp_path: Path,
) -> None:
    found = violations(PLANTED, "planted.py")
    assert [line.split(": ", 1)[1] for line in found if ":3:" in line] == ["reads spec.image"], (
        found
    )
    for what in (
        "reads spec.image",
        "reads runtime.command",
        "reads config.address",
        "reads spec.endpoint",
        "compares with ['process', 'command']",
        "matches ['endpoint']",
        "names EndpointRuntime",
        "keys a table by ['docker']",
        "names RUNTIME_REGISTRY",
    ):
        assert any(line.endswith(what) for line in found), (what, found)
    assert violations(UNRELATED, "unrelated.py") == []
    # And the whole scan fails once such a module lies outside harness/runtimes/.
    (tmp_path / "harness" / "orchestrate").mkdir(parents=True)
    (tmp_path / "harness" / "orchestrate" / "planted.py").write_text(PLANTED)
    assert _scan((tmp_path / "harness",), tmp_path / "harness" / "runtimes") != []


def test_each_builtin_runtime_is_built_from_its_own_config() -> None:
    specs = {
        "process": runtime_spec(system="null"),
        "command": runtime_spec(command="server {address}"),
        "endpoint": runtime_spec(endpoint="unix:/s"),
        "docker": runtime_spec(image="x:y"),
    }
    assert set(specs) == set(RUNTIMES)
    for kind, spec in specs.items():
        assert spec.kind == kind
        assert isinstance(spec.config, RUNTIME_REGISTRY.load(kind).config_type), kind
    plugin = runtime_spec(runtime="plain-process", runtime_options=(("serve", "null"),))
    assert isinstance(plugin.config, PluginOptions) and plugin.kind == "plain-process"
    assert plugin.runtime_options == (("serve", "null"),) and plugin.name == "plain-process"
    assert specs["process"].runtime_options == ()


def test_what_the_harness_asks_of_a_spec_is_as_before() -> None:
    # The names the manifest's system_name and the default directories were made of.
    assert runtime_spec(system="pkg.mod:Cls").name == "pkg.mod:Cls"
    assert runtime_spec(system="pkg.mod:Cls").label == "pkg.mod_Cls"
    assert runtime_spec(endpoint="unix:/run/s").label == "unix__run_s"
    assert runtime_spec(image="me/m:dev").name == "me/m:dev"
    # What --resume must find unchanged (the manifest's system_spec), no runtime asked.
    assert runtime_spec(system="null").system_spec(None) == "null"  # type: ignore[arg-type]
    assert runtime_spec(endpoint="unix:/s").system_spec(None) == "unix:/s"  # type: ignore[arg-type]
    command = "go-memory --no-batches {address}"
    assert runtime_spec(command=command).system_spec(None) == command  # type: ignore[arg-type]
    plugin = runtime_spec(runtime="plain-process")
    assert plugin.system_spec(None) is None  # type: ignore[arg-type]
    # Spares: asked for, and not on a shared network or a GPU.
    one = GpuRequest(count=1)
    assert runtime_spec(system="null", spare=True).wants_spare
    assert not runtime_spec(system="null").wants_spare
    assert not runtime_spec(system="null", spare=True, sandbox_net=True).wants_spare
    assert not runtime_spec(
        command="s {address}", spare=True, container=ContainerSettings(gpus=one)
    ).wants_spare
    assert runtime_spec(image="x", spare=True).wants_spare
    host = ContainerSettings(network="host")
    assert not runtime_spec(image="x", spare=True, container=host).wants_spare
    assert not runtime_spec(endpoint="unix:/s", spare=True).wants_spare
    assert runtime_spec(runtime="plain-process", spare=True).wants_spare


def test_the_command_line_is_refused_as_before() -> None:
    with pytest.raises(ConfigError, match="give exactly one of"):
        runtime_spec(system="null", image="x")
    with pytest.raises(ConfigError, match="give exactly one of"):
        runtime_spec()
    with pytest.raises(ConfigError, match="only with --runtime NAME"):
        runtime_spec(system="null", runtime_options=(("k", "v"),))
    gpus = ContainerSettings(gpus=GpuRequest(count=1))
    with pytest.raises(ConfigError, match="only for --image, --system or --command"):
        runtime_spec(runtime="plain-process", container=gpus)
    with pytest.raises(ConfigError, match="no-such-system"):
        runtime_spec(system="no-such-system").check_system()
    runtime_spec(system="null").check_system()
    # A built-in runtime chosen by --runtime gets no settings of its own: refused by name.
    spec = runtime_spec(runtime="endpoint")
    from apmbench.harness.runtimes.endpoint import EndpointConfig

    with pytest.raises(ConfigError, match="not chosen with --runtime"):
        spec.config_as(EndpointConfig)


def test_each_runtime_says_what_a_resume_keeps() -> None:
    process = {
        "kind": "process", "max_log_bytes": 9, "system": "null", "python": "/usr/bin/python3",
        "sandbox": {"confined": True, "tool": "bubblewrap", "network": "none",
                    "tmp_size_bytes": 64, "bwrap": "/usr/bin/bwrap"},
        "start": "template",
    }  # fmt: skip
    assert resume_facts(process) == {
        "kind": "process", "max_log_bytes": 9, "start": "template",
        "sandbox": {"confined": True, "tool": "bubblewrap", "network": "none",
                    "tmp_size_bytes": 64},
    }  # fmt: skip
    command = {**process, "kind": "command", "start": "fresh"}
    assert resume_facts(command)["kind"] == "command" and "start" not in resume_facts(command)
    docker = {
        "kind": "docker", "max_log_bytes": 9, "image": {"id": "sha256:1", "created": "now"},
        "container": {"network": "none", "env_names": ["KNOB"]}, "image_volumes_as_tmpfs": [],
    }  # fmt: skip
    assert resume_facts(docker) == {
        "kind": "docker", "max_log_bytes": 9, "container": {"network": "none"},
        "image_volumes_as_tmpfs": [],
    }  # fmt: skip
    endpoint = {"kind": "endpoint", "max_log_bytes": None, "address": "unix:/s"}
    assert resume_facts(endpoint) == endpoint
    assert resume_facts({"kind": "gone"}) == {"kind": "gone", "max_log_bytes": None}


def test_each_runtime_says_what_a_report_states_of_its_confinement() -> None:
    gpu = {"request": "device=0", "devices": ["/dev/nvidia0"]}
    sandbox = {"confined": True, "tool": "bubblewrap", "network": "host", "gpu": gpu}
    template = {"kind": "process", "sandbox": sandbox, "start": "template"}
    assert confinement(template) == {
        "confined": True, "tool": "bubblewrap", "network": "host", "start": "template",
        "gpus": "device=0",
    }  # fmt: skip
    unconfined = {"confined": False, "note": "unconfined: numbers not comparable"}
    assert confinement({"kind": "command", "sandbox": {"confined": False}}) == unconfined
    assert confinement({"kind": "process"}) == unconfined  # from before the sandbox
    assert confinement({"kind": "docker", "container": {}}) is None
    assert confinement({"kind": "endpoint", "address": "unix:/s"}) is None
    assert confinement({"kind": "gone"}) is None
