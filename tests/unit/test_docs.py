"""The documentation stays true to the code and whole: the protocol version the pages
name is the one the SDK speaks, every page of docs/ is in the site's nav (a page
left out is unreachable on the site), the README stays a short front door, and
the measured figures keep their one page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from apmbench.adapters.sdk.types import PROTOCOL_VERSION

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _nav_pages(node: Any) -> list[str]:
    """Every page file named anywhere in mkdocs.yml's nav, sections included."""
    if isinstance(node, str):
        return [node] if node.endswith(".md") else []
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


def test_architecture_names_the_protocol_version_of_the_code() -> None:
    text = (DOCS / "ARCHITECTURE.md").read_text()
    named = set(re.findall(r"protocol \*\*(\d+\.\d+)\*\*", text))
    assert named == {PROTOCOL_VERSION}, (
        f"docs/ARCHITECTURE.md names protocol {sorted(named)}; the code speaks {PROTOCOL_VERSION}"
    )


def test_protocol_reference_names_the_protocol_version_of_the_code() -> None:
    title = (DOCS / "PROTOCOL.md").read_text().splitlines()[0]
    assert title.endswith(f"version {PROTOCOL_VERSION}"), title


def test_architecture_covers_every_suite() -> None:
    text = (DOCS / "ARCHITECTURE.md").read_text()
    for suite, folder in (
        ("APM-Bench", "apmbench"),
        ("EgoProbe", "egoprobe"),
        ("ProactEgoMem", "proactegomem"),
    ):
        assert suite in text and f"harness/suites/{folder}/" in text, suite
    for name, folder in (
        ("apmbench.harness", "harness/"),
        ("apmbench.adapters", "adapters/"),
        ("apmbench.v1", "proto/apmbench/v1/"),
    ):
        assert re.search(rf"`{re.escape(name)}` \| `{re.escape(folder)}`", text), name


def test_every_page_is_in_the_nav() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = _nav_pages(config["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(set(nav)) == pages, (
        f"not in nav: {sorted(set(pages) - set(nav))}; "
        f"in nav, no such page: {sorted(set(nav) - set(pages))}"
    )
    assert len(nav) == len(set(nav)), "a page is in the nav twice"


def test_readme_is_a_front_door() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 250
    for needed in ("make demo", "make test", "apmbench-grpc evaluate", "`.ci/run`"):
        assert needed in readme, needed
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).exists(), link


def test_no_link_leaves_the_repository() -> None:
    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue
            resolved = (page.parent / target.split("#", 1)[0]).resolve()
            assert resolved == ROOT or ROOT in resolved.parents, f"{page.name}: {target}"
