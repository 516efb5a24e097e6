"""`verify_bundle`: every rule of verify on one bundle, in order, as one `Verification`.

The rules (rules.py, rescore.py), each pass, fail or not applicable:

1. index: BUNDLE.json's id is the sha256 of its canonical form, its entries are well
   formed, its summary of the run is manifest.json's;
2. members: each member's sha256 and size are the index's, none missing or extra;
3. seal: a blind run's predictions.json hash chain, and manifest.json and trajectories/
   agree with the sealed records;
4. numbers: every number of report.json re-derived from the records;
5. records: instances.jsonl, sessions.jsonl and report.md as re-scoring writes them;
6. blind-score: with labels, a blind run's predictions scored with them;
7. timing: every recorded time could have been measured.

A failed rule does not stop the others: a bundle edited in one place is reported with
everything that edit broke.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from apmbench.harness.bundle import rescore, rules
from apmbench.harness.bundle.archive import Bundle, harness_version, read_bundle
from apmbench.harness.bundle.rescore import RescoreOptions
from apmbench.harness.bundle.rules import Outcome, RuleResult
from apmbench.harness.json_types import JSON, JsonObject


@dataclass(frozen=True)
class Verification:
    """What verify found: one result per rule, in the order above."""

    bundle: Bundle
    results: tuple[RuleResult, ...]
    seconds: float

    @property
    def ok(self) -> bool:
        """No rule failed."""
        return all(r.outcome is not Outcome.FAIL for r in self.results)

    def counts(self) -> dict[str, int]:
        return {o.value: sum(r.outcome is o for r in self.results) for o in Outcome}

    def head(self) -> JsonObject:
        """What the verification was of (for the table's title and --json)."""
        run = self.bundle.index.get("run")
        run = run if isinstance(run, dict) else {}
        suites = self.bundle.index.get("suites")
        return {
            "bundle": str(self.bundle.path),
            "id": self.bundle.id,
            "suites": suites if isinstance(suites, list) else [],
            "system": run.get("system"),
            "dataset": run.get("dataset"),
            "dataset_hash": run.get("dataset_hash"),
            "blind": self.bundle.blind,
            "harness_version": self.bundle.index.get("harness_version"),
            "verified_by": harness_version(),
            "ok": self.ok,
            "counts": dict[str, JSON](self.counts()),
            "seconds": round(self.seconds, 3),
        }

    def to_json(self) -> str:
        return rules.dumps(self.results, self.head())


def verify_bundle(bundle: Bundle | Path, options: RescoreOptions | None = None) -> Verification:
    """Check `bundle` (a `Bundle`, or a path `read_bundle` reads) against every rule.

    Raises `BundleError` only when a path cannot be read as a bundle; everything else is
    a rule's verdict. Scoring happens in a temporary folder, removed afterwards.
    """
    started = time.monotonic()
    if not isinstance(bundle, Bundle):
        bundle = read_bundle(bundle)
    options = options or RescoreOptions()
    with tempfile.TemporaryDirectory(prefix="apmbench-verify-") as tmp:
        work = Path(tmp)
        results = [
            _guarded(rules.INDEX, rules.INDEX_TITLE, lambda: rules.check_index(bundle)),
            _guarded(rules.MEMBERS, rules.MEMBERS_TITLE, lambda: rules.check_members(bundle)),
            _guarded(rules.SEAL, rules.SEAL_TITLE, lambda: rules.check_seal(bundle)),
            *rescore.rederive(bundle, options, work / "rederive"),
            rescore.blind_score(bundle, options, work / "blind"),
            _guarded(rules.TIMING, rules.TIMING_TITLE, lambda: rules.check_timing(bundle)),
        ]
    return Verification(bundle, tuple(results), time.monotonic() - started)


def _guarded(rule: str, title: str, check: Callable[[], RuleResult]) -> RuleResult:
    """A rule's verdict; a member it cannot read (edited into another shape) fails it."""
    try:
        return check()
    except rescore.UNREADABLE as e:
        return rules.failed(rule, title, [rescore.unreadable(e)], lead="cannot read the bundle")
