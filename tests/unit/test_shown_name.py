"""The name reports give a system: its Describe name, and what the harness ran where that
is something else, so a method cannot read as another by calling itself by its name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from apmbench.harness.orchestrate.bundle.archive import Bundle, summary
from apmbench.harness.orchestrate.bundle.verify import Verification
from apmbench.harness.orchestrate.compare import Run, labelled
from apmbench.harness.reports.system_text import MD_CHARS, html_text, md_cell
from apmbench.harness.run.manifest import Manifest


def _manifest(name: str, spec: object = None, harness: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"system": {"name": name}}
    if spec is not None:
        data["system_spec"] = spec
    if harness is not None:
        data["system_name"] = {"harness": harness, "described": name}
    return data


def test_a_registered_system_of_its_own_name_is_shown_by_it() -> None:
    record = Manifest.of(_manifest("text-log", spec="text-log"))
    assert record.run_as == "text-log"
    assert record.shown_name == "text-log"


def test_a_name_unlike_what_was_run_says_what_was_run() -> None:
    record = Manifest.of(_manifest("text-log", spec="helpers.impersonator:Impersonator"))
    assert record.shown_name == "text-log (run as helpers.impersonator:Impersonator)"
    # The image's id is in the sources table, not in the name.
    image = Manifest.of(_manifest("text-log", spec="relay:latest (sha256:" + "ab" * 32 + ")"))
    assert image.shown_name == "text-log (run as relay:latest)"
    # A run from before system_spec: the harness's name for it, where recorded.
    older = Manifest.of(_manifest("text-log", harness="relay"))
    assert older.shown_name == "text-log (run as relay)"


def test_a_run_that_recorded_nothing_run_is_shown_by_its_describe_name() -> None:
    record = Manifest.of(_manifest("my-method"))
    assert record.run_as is None
    assert record.shown_name == "my-method"
    assert Manifest.of({}).shown_name == "?"


def test_the_whole_shown_name_is_escaped_for_markdown_and_html() -> None:
    hostile = "evil|x <b>y</b> [a](http://e)"
    run = Run(Path("/runs/a"), _manifest("text-log", spec=hostile), {}, "")
    (md,) = labelled([run], md_cell)
    assert md.label == md_cell(f"text-log (run as {hostile})")
    assert "<b>" not in md.label and "\\|" in md.label and "](" not in md.label
    (html,) = labelled([run], lambda name: html_text(name, MD_CHARS))
    # Jinja escapes the markup; Markdown's backslashes would show on the page.
    assert html.label == f"text-log (run as {hostile})"


def test_two_runs_of_one_shown_name_are_told_apart_by_directory() -> None:
    spec = "helpers.impersonator:Impersonator"
    runs = [Run(Path(f"/runs/{d}"), _manifest("text-log", spec=spec), {}, "") for d in "ab"]
    other = Run(Path("/runs/c"), _manifest("text-log", spec="text-log"), {}, "")
    labels = [r.label for r in labelled([*runs, other], lambda name: name)]
    assert labels == [
        f"text-log (run as {spec}) (a)",
        f"text-log (run as {spec}) (b)",
        "text-log",
    ]


def test_verify_names_a_bundled_system_as_its_reports_do() -> None:
    manifest = _manifest("text-log", spec="helpers.impersonator:Impersonator")
    run = {"dir": "", **summary(Manifest.of(manifest), blind=False)}
    # The index keeps the Describe name, as bundles made before shown_name do (verify
    # compares it with manifest.json's summary); the title says what was run.
    assert run["system"] == "text-log"
    members = {"manifest.json": json.dumps(manifest).encode()}
    bundle = Bundle(Path("b.tar"), {"runs": [run]}, members)
    head = Verification(bundle, (), 0.0).head()
    assert head["system"] == "text-log (run as helpers.impersonator:Impersonator)"
    # No readable manifest: the index's name, as before.
    assert (
        Verification(Bundle(Path("b.tar"), {"runs": [run]}, {}), (), 0.0).head()["system"]
        == "text-log"
    )
