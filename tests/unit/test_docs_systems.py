"""The docs' lists of systems cannot go stale: docs/running.md's `--system NAME` names every
registered system and no other, and docs/systems.md describes each one."""

from __future__ import annotations

import re
from pathlib import Path

from apmbench.adapters.systems import SYSTEMS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_running_md_lists_every_registered_system() -> None:
    text = " ".join((DOCS / "running.md").read_text().split())
    listed = re.search(r"NAME is a registered system \((.*?)\) or `package\.module:Class`", text)
    assert listed, "docs/running.md no longer lists the systems after 'NAME is a registered system'"
    named = set(re.findall(r"`([a-z][a-z0-9-]*)`", listed.group(1)))
    assert named == set(SYSTEMS), (
        f"missing: {sorted(set(SYSTEMS) - named)}; not registered: {sorted(named - set(SYSTEMS))}"
    )


def test_systems_md_describes_every_registered_system() -> None:
    text = (DOCS / "systems.md").read_text()
    missing = [name for name in SYSTEMS if f"`{name}`" not in text]
    assert not missing, missing
