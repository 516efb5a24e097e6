"""The template box's relaxed filter and bwrap line, and the start mode's checks (no box
needed: tests/integration/test_template_isolation.py starts real ones)."""

from __future__ import annotations

from pathlib import Path

import pytest

from apmbench.harness.errors import ConfigError
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes import seccomp
from apmbench.harness.runtimes.process import ProcessRuntime, sandboxed_process
from apmbench.harness.runtimes.sandbox import Sandbox, SandboxPolicy


def _numbers(program: bytes) -> set[int]:
    """The system-call numbers a program compares against (each JEQ's constant)."""
    found = set()
    for i in range(0, len(program), 8):
        code = int.from_bytes(program[i : i + 2], "little")
        k = int.from_bytes(program[i + 4 : i + 8], "little")
        if code == 0x15:
            found.add(k)
    return found


def test_the_template_filter_leaves_out_only_what_a_start_needs_first() -> None:
    full = seccomp.compile_filter("x86_64")
    relaxed = seccomp.compile_filter("x86_64", allow=seccomp.TEMPLATE_NEEDS)
    numbers = seccomp.ABIS["x86_64"].numbers
    assert full == seccomp.compile_filter("x86_64", allow=frozenset())
    left_out = {numbers["unshare"], numbers["mount"], numbers["clone"]}
    assert left_out <= _numbers(full)
    assert not left_out & _numbers(relaxed)
    for call in ("ptrace", "setns", "bpf", "keyctl", "pivot_root", "umount2", "mincore"):
        assert numbers[call] in _numbers(relaxed), call  # still refused to the template


def test_the_template_box_keeps_only_what_starts_confine_themselves_with(
    tmp_path: Path,
) -> None:
    box = Sandbox(SandboxPolicy(read_only=()), bwrap="/bin/true")
    fresh = box.wrap(["x"])
    templated = box.wrap(["x"], template=True)
    assert "--disable-userns" not in templated
    assert templated[templated.index("--cap-drop") + 1] == "ALL"
    added = [templated[i + 1] for i, a in enumerate(templated) if a == "--cap-add"]
    assert added == ["CAP_SYS_ADMIN", "CAP_SETFCAP"]
    assert "--cap-add" not in fresh and fresh[fresh.index("--uid") + 1] == "65534"


def test_template_starts_are_sandboxed_and_on_no_shared_network(tmp_path: Path) -> None:
    log = tmp_path / "system.log"
    with pytest.raises(ConfigError, match="--no-sandbox"):
        sandboxed_process("null", log, Deadlines(), 10, sandbox=False, start="template")
    with pytest.raises(ConfigError, match="--sandbox-net"):
        sandboxed_process(
            "null", log, Deadlines(), 10, sandbox=True, share_net=True, start="template"
        )
    with pytest.raises(ValueError, match="start mode"):
        ProcessRuntime("null", log, Deadlines(), start="warm")
