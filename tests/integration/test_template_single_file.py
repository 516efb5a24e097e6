"""A system that is one file (`module:Class` whose module is `module.py` in a directory of
its own, as a method author's first try often is) starts from the template as it does
fresh. The template re-binds read-only paths under /tmp into each start's fresh /tmp, and
made a directory for every one: a single file's bind failed with "Not a directory" (red
team 9 found it), and `--start template` could not run the system at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.sandbox import find_bwrap

TESTS = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    find_bwrap() is None, reason="bubblewrap is not installed (apt-get install -y bubblewrap)"
)


@pytest.mark.parametrize("start", ["template", "fresh"])
def test_a_one_file_system_starts_from_the_template(
    tmp_path: Path, start: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "mine"
    home.mkdir()
    (home / "onefile.py").write_text(
        "from apmbench.adapters.systems.null import NullSystem\n\n\n"
        "class One(NullSystem):\n    pass\n"
    )
    monkeypatch.chdir(home)
    monkeypatch.syspath_prepend(str(home))
    out = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=TESTS / "fixtures" / "mini",
            out=out,
            runtime=runtime_spec(system="onefile:One", sandbox=True, start=start),
            persistence=Persistence.RESTART,
        )
    )
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["runtime"]["start"] == start
    assert (out / "report.json").exists()
