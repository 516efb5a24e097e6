"""No report of any suite shows a Python repr (a dict, a list, None/True/False), in any
format a person reads: report.md, report.html, report.json's strings, and compare's md,
html and json. The judge of a synthetic run carries a nested generator record, the
manifest nested settings and the drill-down yes/no gate fields: each once printed as a
repr (`generator={'name': 'apmbench-synth', ...}`, `<dd>True</dd>`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.repr_scan import reprs

from apmbench.harness.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.slow]

READ = (".md", ".html", ".json")


@pytest.mark.parametrize("benchmark", ["apmbench", "egoprobe", "proactegomem"])
def test_no_report_format_of_any_suite_prints_a_python_repr(
    benchmark: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APMBENCH_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    args = ["evaluate", "--benchmark", benchmark, "--synthetic", "tiny", "--seed", "0"]
    result = CliRunner().invoke(main, [*args, "--system", "null", "--out", str(run)])
    assert result.exit_code == 0, result.output
    again = Path(shutil.copytree(run, tmp_path / "again"))
    out = tmp_path / "cmp"
    result = CliRunner().invoke(main, ["compare", str(run), str(again), "--out", str(out)])
    assert result.exit_code == 0, result.output
    # The same records twice: every score agrees, and compare says so.
    assert "Scores: identical across the 2 runs" in result.output
    assert json.loads((out / "compare.json").read_text())["differences"] == []
    files = [p for d in (run, out) for p in sorted(d.iterdir()) if p.suffix in READ]
    names = {p.name for p in files}
    assert {"report.md", "report.html", "report.json", "manifest.json"} <= names
    assert {"compare.md", "compare.html", "compare.json"} <= names
    # APM-Bench's judge record is nested (its generator) and reaches every format's header;
    # every suite's settings are nested.
    manifest = json.loads((run / "manifest.json").read_text())
    if benchmark == "apmbench":
        assert any(isinstance(v, dict) for v in manifest["scoring"]["judge"].values())
    assert any(isinstance(v, dict) for v in manifest["settings"].values())
    found = [hit for p in files for hit in reprs(p)]
    assert found == [], "\n".join(found)


def test_the_scanner_finds_what_it_looks_for(tmp_path: Path) -> None:
    """The scan is not vacuous: each repr the reports once printed is found."""
    samples = {
        "a.md": "judge (generator={'name': 'apmbench-synth'})",
        "b.html": "<dl><dt>correct</dt><dd>True</dd></dl><svg>None</svg>",
        "c.json": json.dumps({"notes": ["persistent: None"]}),
        "d.md": "options ['A', 'B']",
    }
    for name, text in samples.items():
        (tmp_path / name).write_text(text)
        assert reprs(tmp_path / name), name
    (tmp_path / "clean.html").write_text("<dd>yes</dd><svg><g id='None'/></svg>")
    assert reprs(tmp_path / "clean.html") == []
