"""The .proto evolves without breaking a server's source: `buf lint` passes with the config in
proto/buf.yaml, and `buf breaking` with the FILE rules (generated source, not only the wire)
against every released version's text (tests/fixtures/proto/v1.0 .. v1.3) reports exactly the
exceptions docs/PROTOCOL.md's evolution policy lists for that version, no other.

buf comes from PyPI's buf-bin (the dev extra); the test requires it, it never skips."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PROTO = ROOT / "proto"
FIXTURES = ROOT / "tests" / "fixtures" / "proto"
RELEASED = ("1.0", "1.1", "1.2", "1.3")
# A row of the policy's exception table: | `RULE` | `subject` | versions | ... |
EXCEPTION_ROW = re.compile(r"^\| `([A-Z_]+)` \| `([a-z_]+)` \| ([0-9., -]+) \|", re.M)


def _buf() -> str:
    found = shutil.which("buf") or str(Path(__import__("sys").executable).parent / "buf")
    assert Path(found).exists(), "buf not found: `make install` installs buf-bin (dev extra)"
    return found


def _breaks(proto_root: Path, version: str) -> set[tuple[str, str]]:
    """(rule, the quoted name it is about) for each break buf reports against `version`."""
    done = subprocess.run(
        [
            _buf(),
            "breaking",
            str(proto_root),
            "--against",
            str(FIXTURES / f"v{version}"),
            "--config",
            str(PROTO / "buf.yaml"),
            "--error-format=json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 100), done.stderr
    found = set()
    for line in done.stdout.splitlines():
        item = json.loads(line)
        subject = re.search(r'(?:option|name) "([a-z_]+)"', item["message"])
        found.add((item["type"], subject.group(1) if subject else item["message"]))
    return found


def _excepted(version: str) -> set[tuple[str, str]]:
    """The exceptions docs/PROTOCOL.md lists as breaking against `version`."""
    text = (ROOT / "docs" / "PROTOCOL.md").read_text()
    rows = EXCEPTION_ROW.findall(text)
    assert rows, "docs/PROTOCOL.md lost its table of excepted breaks"
    return {
        (rule, subject)
        for rule, subject, versions in rows
        if version in [v.strip() for v in versions.split(",")]
    }


def test_buf_lint_passes() -> None:
    done = subprocess.run([_buf(), "lint"], cwd=PROTO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_released_version_is_a_fixture() -> None:
    assert sorted(p.name for p in FIXTURES.iterdir()) == [f"v{v}" for v in RELEASED]
    current = (PROTO / "apmbench" / "v1" / "memory_system.proto").read_text()
    newest = re.search(r'PROTOCOL_VERSION "(1\.\d+)"', current)
    assert newest and newest.group(1) in RELEASED, "a new version needs its fixture"


@pytest.mark.parametrize("version", RELEASED)
def test_buf_breaking_reports_only_the_policys_exceptions(version: str) -> None:
    assert _breaks(PROTO, version) == _excepted(version)


def test_a_new_break_is_caught(tmp_path: Path) -> None:
    """The cheater: another field made `optional` (Go's type changes again) is not hidden
    by the exception granted to interval_start_ms."""
    shutil.copytree(PROTO, tmp_path / "proto", ignore=shutil.ignore_patterns("*.py*", "*.yaml"))
    edited = tmp_path / "proto" / "apmbench" / "v1" / "memory_system.proto"
    text = edited.read_text()
    assert "  uint32 max_output_chars = 9;" in text
    edited.write_text(
        text.replace("  uint32 max_output_chars = 9;", "  optional uint32 max_output_chars = 9;")
    )
    new = _breaks(tmp_path / "proto", "1.3") - _excepted("1.3")
    assert ("FIELD_SAME_CARDINALITY", "max_output_chars") in new
