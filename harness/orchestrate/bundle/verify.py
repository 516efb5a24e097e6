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
7. timing: every recorded time could have been measured;
8. suites-page: the headlines `evaluate --benchmark all` wrote beside its runs are
   their reports'.

Rules 3 to 7 are about one run: a bundle of `evaluate --benchmark all` has them once per
suite's run, each result naming its run.

A failed rule does not stop the others: a bundle edited in one place is reported with
everything that edit broke.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from apmbench.harness.json_types import JSON, JsonObject
from apmbench.harness.orchestrate.bundle import rescore, rules
from apmbench.harness.orchestrate.bundle.archive import Bundle, harness_version, read_bundle
from apmbench.harness.orchestrate.bundle.rescore import RescoreOptions
from apmbench.harness.orchestrate.bundle.rules import Outcome, RuleResult


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
        listed = self.bundle.index.get("runs")
        runs = [r for r in listed if isinstance(r, dict)] if isinstance(listed, list) else []
        suites = self.bundle.index.get("suites")

        def each(key: str) -> JSON:
            values = sorted({str(r.get(key)) for r in runs})
            return values[0] if len(values) == 1 else list[JSON](values)

        return {
            "bundle": str(self.bundle.path),
            "id": self.bundle.id,
            "suites": suites if isinstance(suites, list) else [],
            "system": self._shown_system() or each("system"),
            "dataset": each("dataset"),
            "dataset_hash": each("dataset_hash"),
            "blind": any(r.get("public_part") is True for r in runs),
            "harness_version": each("harness_version"),
            "verified_by": harness_version(),
            "ok": self.ok,
            "counts": dict[str, JSON](self.counts()),
            "seconds": round(self.seconds, 3),
        }

    def _shown_system(self) -> JSON:
        """The system as its reports name it (`Manifest.shown_name`), from the bundled
        manifests; None when none is readable. The index keeps the bare Describe name (its
        summary of manifest.json, which older bundles hold too), but the name a system
        gives itself is its own to choose: shown alone, a bundle of a cheater calling
        itself text-log would read as the reference system's."""
        manifests = (rules.manifest_of(self.bundle.run(p)) for p in self.bundle.runs)
        names = sorted({m.shown_name for m in manifests if m is not None})
        if not names:
            return None
        return names[0] if len(names) == 1 else list[JSON](names)

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
        ]
        for k, prefix in enumerate(bundle.runs or [""]):
            results += [
                r.of_run(prefix) for r in _run_rules(bundle.run(prefix), options, work / str(k))
            ]
        results.append(
            _guarded(rules.PAGE, rules.PAGE_TITLE, lambda: rules.check_suites_page(bundle))
        )
    return Verification(bundle, tuple(results), time.monotonic() - started)


def _run_rules(run: Bundle, options: RescoreOptions, work: Path) -> list[RuleResult]:
    """The rules about one run (`run`: the bundle, or one run of a multi-suite bundle)."""
    return [
        _guarded(rules.SEAL, rules.SEAL_TITLE, lambda: rules.check_seal(run)),
        *rescore.rederive(run, options, work / "rederive"),
        rescore.blind_score(run, options, work / "blind"),
        _guarded(rules.TIMING, rules.TIMING_TITLE, lambda: rules.check_timing(run)),
    ]


def _guarded(rule: str, title: str, check: Callable[[], RuleResult]) -> RuleResult:
    """A rule's verdict; a member it cannot read (edited into another shape) fails it."""
    try:
        return check()
    except rescore.UNREADABLE as e:
        return rules.failed(rule, title, [rescore.unreadable(e)], lead="cannot read the bundle")
