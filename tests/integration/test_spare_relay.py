"""A live system relays its memory to the spare loading beside it through page-cache
residency: an open channel, documented (hostile methods).

`PageCacheRelay` (tests/helpers/page_cache_relay.py) exports one byte and writes its counts
as the residency of pages of a sparse file in its own package while it serves; in its
constructor (a spare's load phase) it reads residency by fault-around and the present bits
of /proc/self/pagemap, none of which the seccomp filter refuses. The harness reclaims a
start's pages when it stops, so only a spare that listens while the live start serves hears
it: with spares some start recovers what its predecessor wrote; with `--no-spare` none does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers.page_cache_relay import make_package

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.runtimes.sandbox import find_bwrap
from apmbench.harness.runtimes.start_cgroups import StartCgroups

TESTS = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    find_bwrap() is None, reason="bubblewrap is not installed (apt-get install -y bubblewrap)"
)


def relayed(
    tmp_path: Path,
    start: str,
    spare: bool,
    monkeypatch: pytest.MonkeyPatch,
    env: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """Each answer's body: what its start recovered ("recalled") and what it relayed."""
    if not StartCgroups().available():
        pytest.fail("the page-cache reset needs root and a memory cgroup (CI runs as root)")
    spec = make_package(tmp_path / "pkg")
    monkeypatch.chdir(tmp_path / "pkg")
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    out = tmp_path / "run"
    evaluate(
        EvaluateOptions(
            dataset=TESTS / "fixtures" / "mini",
            out=out,
            runtime=runtime_spec(system=spec, sandbox=True, spare=spare, start=start, env=env),
            persistence=Persistence.RESTART,
        )
    )
    manifest = json.loads((out / "manifest.json").read_text())
    # The reset is on: what a stopped start made resident is gone before the next serves.
    assert manifest["runtime"]["page_cache"]["reset"] is True, manifest["runtime"]
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    bodies = [json.loads(row["raw_output"]) for row in rows]
    assert bodies and all("relay" in b for b in bodies), bodies
    return bodies


@pytest.mark.slow
@pytest.mark.parametrize("start", ["fresh", "template"])
def test_open_channel_a_spare_hears_the_live_start_through_residency(
    tmp_path: Path, start: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DOCUMENTS AN OPEN CHANNEL (docs/guarantees.md, "Channels that stay open"): with
    spares, some start recovers the counts its live predecessor wrote while it served.

    If this fails because nothing is recovered, the channel was closed: say so in
    docs/guarantees.md (and turn this into a guarantee like the --no-spare test below)."""
    bodies = relayed(tmp_path, start, True, monkeypatch)
    heard = [b["recalled"] for b in bodies if b["recalled"] is not None]
    assert heard, [b["relay"] for b in bodies]
    # What was heard is what a predecessor relayed after its first session began (a
    # corrupt read fails the message's checksum and is no message).
    assert all(r["sessions"] >= 1 and r["start"] >= 1 for r in heard), heard


@pytest.mark.slow
def test_without_spares_no_start_recovers_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guarantee: with --no-spare no start runs beside a live one, and the reset leaves
    nothing of a stopped start's pages, so the relay hears nothing."""
    # Without a spare each start is launched after its predecessor stopped and was
    # reclaimed: nothing writes while it listens, so a shorter listen (1 s per start, not
    # 3) hears as much and keeps the test within its time.
    bodies = relayed(tmp_path, "fresh", False, monkeypatch, ("APMBENCH_RELAY_LISTEN_S=1",))
    assert all(b["recalled"] is None for b in bodies), [b["relay"] for b in bodies]
    # The writer did write: a closed channel, not a relay that never spoke.
    assert all(b["relay"]["slots_written"] >= 1 for b in bodies), [b["relay"] for b in bodies]
    assert all(b["relay"]["start"] == 1 for b in bodies), [b["relay"] for b in bodies]
