"""`--help` a person can read: every option of every command with more than a few options
sits in a titled section, each command's help starts with an example, help renders off a
terminal as plain text (no escape codes), and `--env` is worded once for every command."""

from __future__ import annotations

import re
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.commands.common import ENV_HELP

GROUPED_ABOVE = 8
"""A command with more options than this lists them in titled sections."""
ESCAPE = re.compile(r"\x1b|\x9b")


def _options(command: click.Command) -> list[click.Option]:
    return [
        p
        for p in command.params
        if isinstance(p, click.Option) and p.name != "help" and not p.hidden
    ]


def _section_of(command: click.Command) -> dict[str, str]:
    """Option name -> the title of the section (rich-click panel) that lists it."""
    placed: dict[str, str] = {}
    for panel in getattr(command, "panels", []):
        for name in getattr(panel, "options", []):
            for param in _options(command):
                if name in (*param.opts, param.name):
                    assert param.name not in placed, f"{param.name} is in two sections"
                    placed[str(param.name)] = panel.name
    return placed


@pytest.fixture(autouse=True)
def not_forced_to_colour(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS", "TERMINAL_WIDTH"):
        monkeypatch.delenv(name, raising=False)


COMMANDS = sorted(main.commands.items())
GROUPED = [(name, c) for name, c in COMMANDS if len(_options(c)) > GROUPED_ABOVE]


def test_the_big_commands_are_the_ones_grouped() -> None:
    # evaluate (63 options), check and score: a new big command is grouped or fails below.
    assert {name for name, _ in GROUPED} >= {"evaluate", "check", "score"}


@pytest.mark.parametrize(("name", "command"), GROUPED, ids=[n for n, _ in GROUPED])
def test_every_option_sits_in_a_titled_section(name: str, command: click.Command) -> None:
    placed = _section_of(command)
    loose = sorted(str(p.name) for p in _options(command) if p.name not in placed)
    assert not loose, f"{name}: options in no section (add them to its `sections`): {loose}"
    titles = {panel.name for panel in getattr(command, "panels", [])}
    assert "Options" not in titles and all(t.strip() for t in titles)


@pytest.mark.parametrize(("name", "command"), GROUPED, ids=[n for n, _ in GROUPED])
def test_help_renders_its_sections_as_plain_text(name: str, command: click.Command) -> None:
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert not ESCAPE.search(result.output)
    for title in set(_section_of(command).values()):
        assert re.search(rf"^{re.escape(title)}:$", result.output, re.M), title
    # Every option is shown once, in the section the command gave it.
    for param in _options(command):
        assert (
            result.output.count(f"  {param.opts[0]} ") + result.output.count(f"  {param.opts[0]}\n")
            >= 1
        ), param.opts[0]
    assert not [line for line in result.output.splitlines() if line != line.rstrip()]


@pytest.mark.parametrize("name", [n for n, _ in COMMANDS])
def test_each_help_starts_with_an_example(name: str) -> None:
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0, result.output
    head = result.output.split("\n\n")[:4]
    example = re.compile(rf"^ {{4}}apmbench-grpc {name}\b", re.M)
    assert any(example.search(part) for part in head), result.output[:600]


def test_help_through_a_pipe_has_no_escape_codes() -> None:
    piped = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "TERM": "xterm-256color"},
    )
    assert piped.returncode == 0, piped.stderr
    assert "Judge:" in piped.stdout and "Container:" in piped.stdout
    assert not ESCAPE.search(piped.stdout)


def test_errors_stay_one_line_for_scripts_and_logs() -> None:
    result = CliRunner().invoke(main, ["evaluate", "--dataset", "d", "--synthetic", "tiny"])
    assert result.exit_code == 2
    assert "Error: give --dataset DIR or --synthetic PRESET, not both\n" in result.output


@pytest.mark.parametrize("name", ["evaluate", "check"])
def test_env_is_worded_once(name: str) -> None:
    command = main.commands[name]
    (env,) = [p for p in command.params if "--env" in getattr(p, "opts", ())]
    assert env.help == ENV_HELP
    others = " ".join(str(getattr(p, "help", "")) for p in command.params if p is not env)
    # Other options name --env without a second description of what it takes.
    assert not re.search(r"--env (NAME|KEY)", others), others
