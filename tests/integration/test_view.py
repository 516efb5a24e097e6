"""The HTML viewer: written by evaluate, self-contained, every query drilled down, escaped,
and checked in a real headless Chromium (Debian's `chromium`, driven by Playwright)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from helpers.runs import TESTS, mini_runs
from helpers.view_systems import INJECTION

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.orchestrate.html.view import VIEW_NAME, ViewOptions, write_view
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec

pytestmark = pytest.mark.integration

ARTEFACTS = Path(os.environ.get("APMBENCH_TEST_ARTEFACTS", TESTS.parent / "test-artefacts"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("view")
    made = mini_runs(root)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PYTHONPATH", str(TESTS))
        evaluate(
            EvaluateOptions(
                dataset=TESTS / "fixtures" / "mini",
                out=root / "inject",
                runtime=runtime_spec(system="helpers.view_systems:HtmlInjector"),
                persistence=Persistence.RESET,
            )
        )
    return [made["null"], made["intervene"], root / "inject"]


@pytest.fixture(scope="module")
def comparison(runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_view(runs, tmp_path_factory.mktemp("cmp") / "compare.html")


def _instances(run: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run / "instances.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_evaluate_writes_a_report_html_into_each_run(runs: list[Path]) -> None:
    for run in runs:
        html = (run / VIEW_NAME).read_text()
        assert "paper Table 3" in html and "<svg" in html
        for row in _instances(run):
            assert f"· {row['instance_id']} ·" in html


def test_the_file_is_self_contained(comparison: Path) -> None:
    html = comparison.read_text()
    assert "<link" not in html
    assert not re.search(r"<script[^>]*\bsrc=", html)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "url(http" not in html and "@import" not in html


def test_every_query_has_its_prompt_frames_answer_and_parse(
    runs: list[Path], comparison: Path
) -> None:
    html = comparison.read_text()
    queries = html.count('<details class="query"')
    assert queries == sum(len(_instances(r)) for r in runs)
    assert html.count('<pre class="prompt">') == queries
    images = json.loads(re.search(r'id="frames-data">(.*?)</script>', html, re.S).group(1))  # type: ignore[union-attr]
    keys = set(re.findall(r'data-frame="([^"]+)"', html))
    assert keys and keys <= set(images), "every thumbnail a query names is in the file"
    assert "format_reason" in html and "gate_passed" in html


def test_a_systems_output_is_shown_as_text_never_run(comparison: Path) -> None:
    html = comparison.read_text()
    assert INJECTION not in html
    assert "&lt;script&gt;window.pwned" in html


def test_without_the_dataset_the_records_still_show_and_the_page_says_why(
    runs: list[Path], tmp_path: Path
) -> None:
    moved = tmp_path / "run"
    shutil.copytree(runs[0], moved)
    manifest = json.loads((moved / "manifest.json").read_text())
    manifest["dataset"]["path"] = str(tmp_path / "gone")
    (moved / "manifest.json").write_text(json.dumps(manifest))
    html = write_view([moved], tmp_path / "v.html", ViewOptions()).read_text()
    assert "prompts and frames are not shown" in html
    assert html.count('<details class="query"') == len(_instances(moved))


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
def test_renders_in_headless_chromium_without_console_errors(comparison: Path) -> None:
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

    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(comparison.as_uri())
            title = page.title()
            assert page.locator("table.results").count() >= 4
            assert page.locator("table.results tbody tr").count() >= 4 * 3
            assert page.locator("#tradeoff svg").count() == 1
            total = page.locator("details.query").count()
            assert page.locator("#shown").inner_text() == f"{total} of {total} queries"
            page.select_option("#filter-run", "null")
            shown = page.locator("details.query:not([hidden])")
            assert 0 < shown.count() < total
            assert page.locator("#shown").inner_text() == f"{shown.count()} of {total} queries"
            first = shown.first
            first.locator("summary").click()
            assert first.locator("pre.prompt").is_visible()
            assert first.locator("pre.answer").is_visible()
            img = first.locator("img[data-frame]").first
            assert (img.get_attribute("src") or "").startswith("data:image/jpeg;base64,")
            page.wait_for_function(
                "img => img.complete && img.naturalWidth > 0", arg=img.element_handle()
            )
            # A module:Class system is named with what was run (Manifest.shown_name).
            page.select_option(
                "#filter-run", "html-injector (run as helpers.view_systems:HtmlInjector)"
            )
            page.locator("details.query:not([hidden]) summary").first.click()
            assert page.evaluate("typeof window.pwned") == "undefined"
            assert page.title() == title
            page.screenshot(path=str(ARTEFACTS / "view-compare.png"), full_page=True)
        finally:
            browser.close()
    assert errors == []


def test_view_command_and_the_thumbnail_limit(runs: list[Path], tmp_path: Path) -> None:
    import subprocess
    import sys

    out = tmp_path / "one.html"
    result = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "view", str(runs[0]), "--out", str(out),
         "--max-thumbnail-queries", "1"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert out.as_uri() in result.stdout
    html = out.read_text()
    assert "frame thumbnails are left out" in html and "data-frame=" not in html
    missing = subprocess.run(
        [sys.executable, "-m", "apmbench.harness.cli", "view", str(tmp_path / "nothing")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert missing.returncode != 0 and "no manifest.json" in missing.stderr


def test_thumbnails_drawn_in_worker_processes_are_the_ones_drawn_here(
    runs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large report draws its thumbnails in frame worker processes, one per core; the
    images are those drawn in the harness's own process."""
    from apmbench.harness.orchestrate.html import queries

    def images(name: str) -> dict[str, str]:
        html = write_view(runs, tmp_path / name).read_text()
        found = re.search(r'id="frames-data">(.*?)</script>', html, re.S)
        assert found is not None
        return dict(json.loads(found.group(1)))

    monkeypatch.setattr(queries, "PARALLEL_SESSIONS", 1)
    monkeypatch.setattr(queries, "usable_cores", lambda: 2)
    spawned: list[int] = []
    real = queries.FrameWorkers.produce

    def counted(self: object, *args: object) -> object:
        spawned.append(1)
        return real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(queries.FrameWorkers, "produce", counted)
    parallel = images("parallel.html")
    assert spawned, "the thumbnails came from the workers"
    monkeypatch.setenv("APMBENCH_FRAME_WORKERS", "0")
    here = images("here.html")
    assert parallel and parallel == here


def test_a_single_run_has_no_tradeoff_plot_and_its_settings_are_a_table(runs: list[Path]) -> None:
    """One bubble on a plot of its own shows no trade-off (its axes span only itself): the
    page says how to place the run among others instead. Settings are rows of a table, not
    a JSON blob; yes/no fields read yes/no."""
    html = (runs[0] / VIEW_NAME).read_text()
    plots = html.split('<section id="plots">', 1)[1].split("</section>", 1)[0]
    tradeoff = plots.split("<h2>Scores</h2>", 1)[0]
    assert "<svg" not in tradeoff and "needs two runs or more" in tradeoff
    manifest = html.split('<section id="manifest">', 1)[1].split("</section>", 1)[0]
    assert "<caption>Settings</caption>" in manifest
    assert "<td>persistence</td><td>reset</td>" in manifest
    assert "{&#34;" not in manifest and "{&quot;" not in manifest
    assert ">True<" not in html and ">False<" not in html


def test_storage_per_trajectory_is_drawn_on_a_log_axis() -> None:
    """A KiB text memory stays visible beside a MiB video memory; a zero is written, not
    drawn (a log axis has no place for it)."""
    from apmbench.harness.orchestrate.html.plots import storage_figure

    fig = storage_figure({"text-log": {"T1": 13 * 1024.0, "T2": 0.0}, "video": {"T1": 68e6}})
    [ax] = fig.axes
    assert ax.get_yscale() == "log"
    low, high = ax.get_ylim()
    assert low < 13 * 1024 and high > 68e6
    assert "0 B" in [t.get_text() for t in ax.texts]
    empty = storage_figure({"null": {"T1": 0.0}})
    assert empty.axes[0].get_yscale() == "linear"
