"""`--command` names its system after the executable, or the script an interpreter runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.command import command_name


@pytest.mark.parametrize(
    "command,files,expected",
    [
        ("go-memory --no-batches {address}", (), "go-memory"),
        ("/opt/methods/bin/go-memory --address={address}", (), "go-memory"),
        ("./bin/server {address} --verbose", (), "server"),
        # A compiled server's first argument naming a file is its input, not its name.
        ("./go-memory config.yaml {address}", ("config.yaml",), "go-memory"),
        ("node server.js {address}", ("server.js",), "server"),
        ("node server.js {address}", (), "node"),
        ("python3.11 methods/x.py --address {address}", ("methods/x.py",), "x"),
        ("python -m pkg.server {address}", (), "python"),
        ("python -u x.py {address}", ("x.py",), "python"),
        ("'/usr/bin/node' {address}", (), "node"),
    ],
)
def test_the_executable_or_the_interpreted_script_names_the_system(
    tmp_path: Path, command: str, files: tuple[str, ...], expected: str
) -> None:
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    assert command_name(command, tmp_path) == expected


def test_an_absolute_script_path_names_it_wherever_the_run_starts(tmp_path: Path) -> None:
    script = tmp_path / "memory_server.py"
    script.write_text("")
    assert command_name(f"/usr/bin/python3 {script} {{address}}", Path("/")) == "memory_server"


def test_bad_quoting_still_gives_a_name() -> None:
    assert command_name("go-memory 'unclosed {address}", Path("/")) == "go-memory"


def test_the_default_run_directory_is_named_by_the_executable() -> None:
    spec = runtime_spec(command="go-memory --no-batches {address}")
    assert spec.name == spec.label == "go-memory"
    assert runtime_spec(system="pkg.mod:Cls").label == "pkg.mod_Cls"
