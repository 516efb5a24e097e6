"""Bundles: a run directory as one content-addressed archive, and the checks a leaderboard
runs on one before it trusts the numbers (`apmbench-grpc bundle`, `apmbench-grpc verify`;
docs/bundles.md).

For a site that reads bundles: `read_bundle(path)` gives a `Bundle` (its index and every
member's bytes); `verify_bundle(bundle)` checks it.

    from apmbench.harness.orchestrate.bundle import read_bundle, verify_bundle

    bundle = read_bundle(Path("3f2a....apmbundle.tar"))
    bundle.id, bundle.index["suites"], bundle.json("report.json")
    verification = verify_bundle(bundle)   # .ok, .results
"""

from apmbench.harness.orchestrate.bundle.archive import (
    SUFFIX,
    Bundle,
    BundleError,
    Written,
    read_bundle,
    write_bundle,
)
from apmbench.harness.orchestrate.bundle.rescore import RescoreOptions
from apmbench.harness.orchestrate.bundle.rules import Outcome, RuleResult
from apmbench.harness.orchestrate.bundle.verify import Verification, verify_bundle

__all__ = [
    "SUFFIX",
    "Bundle",
    "BundleError",
    "Outcome",
    "RescoreOptions",
    "RuleResult",
    "Verification",
    "Written",
    "read_bundle",
    "verify_bundle",
    "write_bundle",
]
