"""`apmbench-grpc leaderboard` over real runs: four reference systems on all three suites'
`tiny` and one unconfined run, built by the command line and checked in a real headless
Chromium (Debian's `chromium`, driven by Playwright), as the viewer is (test_view.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.reference_runs import SUITES, SYSTEMS, UNCONFINED, run_name

from apmbench.harness.reports.format import size
from apmbench.harness.reports.scores import resolve

# The reference runs (13 evaluations) and 12 bundles verified as they are read: minutes
# on a loaded 2-core machine, paid by whichever test asks first.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

TESTS = Path(__file__).resolve().parents[1]
ARTEFACTS = Path(os.environ.get("APMBENCH_TEST_ARTEFACTS", TESTS.parent / "test-artefacts"))


BUNDLED: dict[str, Path] = {}
"""Each bundle's id (what the site names a bundle by), and the run directory it was made of."""


@pytest.fixture(scope="module")
def site(reference_runs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The confined runs as result bundles (verified as they are read), the unconfined one
    as its run directory (not verified)."""
    top = tmp_path_factory.mktemp("leaderboard")
    out, bundles = top / "site", top / "bundles"
    bundles.mkdir()
    inputs = []
    for run in sorted(p for p in reference_runs.iterdir() if p.is_dir()):
        if run.name == run_name(*UNCONFINED, confined=False):
            inputs.append(run)
            continue
        target = bundles / f"{run.name}.apmbundle.tar"
        made = subprocess.run(
            [sys.executable, "-m", "apmbench.harness.cli", "bundle", str(run), "--out", str(target)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        BUNDLED[made.stdout.split()[-1]] = run
        inputs.append(target)
    done = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "leaderboard", *map(str, inputs),
         "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (out / "index.html").as_uri() in done.stdout
    return out


def _root(source: str) -> Path:
    """The run directory a leaderboard source came from (a bundle's, or the directory)."""
    return BUNDLED.get(source, Path(source))


def _data(site: Path) -> dict[str, Any]:
    return dict(json.loads((site / "leaderboard.json").read_text()))


def _shown_from(value: object, shown: str, column: str = "") -> bool:
    """Whether `shown` is `value` as the suites format numbers (digits, sizes, yes/no).
    Persistent is derived from the measured peak state size: yes exactly when it is above 0."""
    if column == "Persistent" and isinstance(value, int):
        return shown == ("yes" if value > 0 else "no")
    if value is None:
        return shown in ("n/c", "n/a", "-")
    if isinstance(value, bool):
        return shown == ("yes" if value else "no")
    assert isinstance(value, int | float)
    return any(shown == f"{value:.{d}f}" for d in range(5)) or shown.startswith(size(value))


def test_one_ranking_per_suite_with_every_run_and_every_number_from_its_source(
    site: Path,
) -> None:
    data = _data(site)
    rankings = data["rankings"]
    assert [r["benchmark"] for r in rankings] == list(SUITES), "one dataset per suite"
    for ranking in rankings:
        benchmark = ranking["benchmark"]
        expected = {run_name(benchmark, s) for s in SYSTEMS}
        if benchmark == UNCONFINED[0]:
            expected.add(run_name(*UNCONFINED, confined=False))
        assert {_root(r["source_name"]).name for r in ranking["runs"]} == expected
        ranks = [r["rank"] for r in ranking["runs"]]
        assert ranks == sorted(ranks) and ranks[0] == 1
        for run in ranking["runs"]:
            root = _root(run["source_name"])
            docs = {
                name: json.loads((root / name).read_text())
                for name in ("report.json", "manifest.json")
            }
            assert docs["manifest.json"]["dataset_hash"] == ranking["dataset"]["hash"]
            assert run["scores"], run["label"]
            for score in run["scores"]:
                assert score["source"] == run["source_name"]
                assert resolve(docs, score["field"]) == score["value"], score
                assert _shown_from(score["value"], score["shown"], score["column"]), score
            unconfined = root.name == run_name(*UNCONFINED, confined=False)
            assert ("unconfined" in run["marks"]) is unconfined
            assert run["verification"] == ("not verified" if unconfined else "verified"), run
    apm = rankings[0]["runs"][0]["scores"]
    assert {"Overall", "CS Und.", "Storage/hr", "TTFT (s)", "ER", "EA"} <= {
        s["column"] for s in apm
    }


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_the_site_renders_in_headless_chromium_with_a_plot_per_ranking(site: Path) -> None:
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        executable = None
    if executable is None:
        message = "needs Debian's chromium (apt-get install -y chromium) and playwright (pip)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    html = (site / "index.html").read_text()
    assert "<link" not in html and not re.search(r"<script[^>]*\bsrc=", html)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    data = _data(site)
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((site / "index.html").as_uri())
            assert page.locator("section.ranking").count() == len(SUITES)
            for ranking in data["rankings"]:
                section = page.locator(f"section#{ranking['id']}")
                runs = ranking["runs"]
                assert section.locator("table.ranking-table tbody tr").count() == len(runs)
                tables = section.locator("table.results")
                assert tables.count() == (2 if ranking["benchmark"] == "apmbench" else 1)
                assert section.locator("table.results tbody tr").count() == tables.count() * len(
                    runs
                )
                # The trade-off plot: one SVG, and in it each method's bubble (one link in
                # the scatter) and its label (a link per line of text), linked to its row.
                plot = section.locator(f"#tradeoff-{ranking['id']} svg")
                assert plot.count() == 1
                assert ranking["plotted"] == [r["label"] for r in runs], "every method has a point"
                bubbles = plot.evaluate(
                    "svg => Array.from(svg.querySelectorAll('g[id^=PathCollection] a'),"
                    " a => a.href.baseVal)"
                )
                assert sorted(bubbles) == sorted(f"#{r['id']}" for r in runs)
                labels = plot.evaluate(
                    "svg => Array.from(svg.querySelectorAll('g[id^=text] a'), a => a.href.baseVal)"
                )
                assert {f"#{r['id']}" for r in runs} == set(labels)
            unconfined = page.locator("tr.unconfined .mark-unconfined")
            assert unconfined.count() == 1
            # A number's link leads to its source's row.
            number = page.locator("table.results a.num").first
            target = number.get_attribute("href")
            number.click()
            assert page.evaluate("location.hash") == target
            assert page.locator(f"tr{target} .mark-verified").count() == 1  # a bundle
            # Sorting by a column (the rank: descending, then ascending) keeps every row.
            first = page.locator("table.results").first
            rank_header = first.locator("thead th").first

            def shown_ranks() -> list[int]:
                return [int(t) for t in first.locator("tbody td:first-child").all_inner_texts()]

            before = shown_ranks()
            rank_header.click()
            assert shown_ranks() == sorted(before, reverse=True)
            rank_header.click()
            assert shown_ranks() == sorted(before)
            page.goto((site / "index.html").as_uri())
            page.screenshot(path=str(ARTEFACTS / "leaderboard.png"), full_page=True)
        finally:
            browser.close()
    assert errors == []
