"""docs/checking.md's table of checks cannot go stale: a row for every check `check` runs and
no other, each with the version its rule dates from and the slow mark the code gives it."""

from __future__ import annotations

import re
from pathlib import Path

from apmbench.harness.check import CHECKS

DOC = Path(__file__).resolve().parents[2] / "docs" / "checking.md"


def _rows() -> dict[str, tuple[str, bool]]:
    """check name -> (since, marked slow), from the table's rows."""
    rows = {}
    for line in DOC.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        for name in re.findall(r"`([a-z0-9-]+)`", cells[0]):
            rows[name] = (cells[2], "(slow)" in cells[0])
    return rows


def test_the_table_has_a_row_per_check() -> None:
    rows, names = _rows(), [c.name for c in CHECKS]
    assert set(rows) == set(names), (
        f"not in docs/checking.md: {sorted(set(names) - set(rows))}; "
        f"not a check: {sorted(set(rows) - set(names))}"
    )


def test_each_row_gives_the_checks_version_and_slowness() -> None:
    rows = _rows()
    for c in CHECKS:
        assert rows[c.name] == (c.since, c.slow), c.name


def test_the_rule_summaries_name_every_numbered_rule_of_the_proto() -> None:
    """docs/method-server.md's summary and PROTOCOL.md's contents follow the .proto's rules."""
    proto = (DOC.parents[1] / "proto" / "apmbench" / "v1" / "memory_system.proto").read_text()
    numbered = sorted({int(n) for n in re.findall(r"^// R(\d+) ", proto, re.M)})
    assert numbered == list(range(1, numbered[-1] + 1))
    summary = (DOC.parent / "method-server.md").read_text()
    missing = [n for n in numbered if not re.search(rf"\bR{n}\b", summary)]
    assert not missing, f"docs/method-server.md's rule summary lacks R{missing}"
    contents = (DOC.parent / "PROTOCOL.md").read_text()
    assert f"[Rules R1-R{numbered[-1]}](#rules)" in contents


def test_the_documented_environment_allowlist_is_the_sandboxs() -> None:
    from apmbench.harness.runtimes.sandbox import PASSED_NAMES, PASSED_PREFIXES

    text = " ".join((DOC.parent / "method-server.md").read_text().split())
    said = re.search(r"Passed on from the harness's environment: (.*?); set by the box", text)
    assert said, "docs/method-server.md no longer lists the environment passed to --command"
    names = set(re.findall(r"`([A-Z_]+)`", said.group(1)))
    assert names == set(PASSED_NAMES) | set(PASSED_PREFIXES)
