"""Nothing outside a runtime branches on a runtime's kind: what a resumed run must keep
(`Runtime.resume_facts`) and what a report says of the confinement
(`Runtime.confinement_facts`) are each runtime's own, found by the kind the manifest
records through the one registry."""

from __future__ import annotations

import ast
from pathlib import Path

from apmbench.harness.runtimes.registry import BUILTIN as RUNTIMES
from apmbench.harness.runtimes.sandbox import resume_facts

HARNESS = Path(__file__).resolve().parents[2] / "harness"


def test_no_module_outside_the_runtimes_compares_with_a_runtime_kind() -> None:
    found = []
    for path in sorted(HARNESS.rglob("*.py")):
        if path.is_relative_to(HARNESS / "runtimes"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Compare):
                continue
            values = [node.left, *node.comparators]
            strings = [
                e.value
                for v in values
                for e in ([v] if not isinstance(v, ast.Tuple | ast.List | ast.Set) else v.elts)
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
            if set(strings) & set(RUNTIMES):
                found.append(f"{path.relative_to(HARNESS)}:{node.lineno}")
    assert found == [], found


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
