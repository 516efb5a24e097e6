"""docs/apmbench.md's preset table and generator version cannot go stale: each row's shape is
the preset's, the candidate counts it quotes for seed 0 are what the generator writes, and
the version it names is GENERATOR_VERSION."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from apmbench.harness.suites.apmbench.dataset import load_dataset
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset
from apmbench.harness.suites.apmbench.synth.live import GENERATOR_VERSION
from apmbench.harness.suites.apmbench.synth.presets import PRESETS

DOC = Path(__file__).resolve().parents[2] / "docs" / "apmbench.md"
ROW = re.compile(r"^\| `(\w+)` \| (\d+) x (\d+) x (\d+) (s|min)\b[^|]*\| ([^|]+) \|", re.M)


def _rows() -> dict[str, tuple[int, int, int, str]]:
    rows = {}
    for name, trajectories, sessions, length, unit, candidates in ROW.findall(DOC.read_text()):
        seconds = int(length) * (60 if unit == "min" else 1)
        rows[name] = (int(trajectories), int(sessions), seconds, candidates.strip())
    return rows


def test_the_table_has_a_row_per_preset_with_its_shape() -> None:
    rows = _rows()
    assert set(rows) == set(PRESETS), "docs/apmbench.md's preset table lists other presets"
    for name, preset in PRESETS.items():
        assert rows[name][:3] == (preset.trajectories, preset.sessions, preset.session_seconds)


def test_the_doc_names_the_current_generator_version() -> None:
    text = " ".join(DOC.read_text().split())
    named = re.search(r"The generator is version (\d+)", text)
    assert named, "docs/apmbench.md no longer says 'The generator is version N'"
    assert int(named.group(1)) == GENERATOR_VERSION


@pytest.mark.parametrize("name", ["tiny", pytest.param("small", marks=pytest.mark.slow)])
def test_the_quoted_candidate_counts_are_the_generators(name: str) -> None:
    quoted = re.fullmatch(r"(\d+) \(seed 0\)", _rows()[name][3])
    assert quoted, f"the {name} row should quote its count as 'N (seed 0)'"
    dataset = load_dataset(synthetic_dataset(name, 0), need_files=False)
    assert len(dataset.candidates) == int(quoted.group(1))
