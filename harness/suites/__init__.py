"""Benchmark suites by name, loaded lazily: a suite's code imports only when it is used.

A new suite adds its folder and one line here; no other suite changes.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from apmbench.harness.errors import ConfigError

if TYPE_CHECKING:
    from apmbench.harness.suites.base import Suite

DEFAULT = "apmbench"
SUITES: dict[str, str] = {
    "apmbench": "apmbench.harness.suites.apmbench.suite:APMBench",
    "egoprobe": "apmbench.harness.suites.egoprobe.suite:EgoProbe",
    "proactegomem": "apmbench.harness.suites.proactegomem.suite:ProactEgoMem",
}


def get_suite(name: str) -> Suite:
    target = SUITES.get(name)
    if target is None:
        raise ConfigError(f"unknown benchmark {name!r}: use one of {', '.join(sorted(SUITES))}")
    module, _, cls = target.partition(":")
    suite: Suite = getattr(importlib.import_module(module), cls)()
    return suite


def suite_of_dataset(root: Path, requested: str | None = None) -> Suite:
    """The suite named by `--benchmark`, else by the dataset's own `benchmark` field, else
    the default. A dataset that names another benchmark than the one requested is refused."""
    declared = None
    doc_path = Path(root) / "dataset.json"
    if doc_path.is_file():
        try:
            declared = json.loads(doc_path.read_text(encoding="utf-8")).get("benchmark")
        except (OSError, ValueError, AttributeError):
            declared = None  # the suite's loader reports a broken file with more context
    if requested is not None and declared is not None and requested != declared:
        raise ConfigError(
            f"{root} is a {declared!r} dataset but --benchmark {requested!r} was given: "
            f"drop --benchmark or pass --benchmark {declared}"
        )
    return get_suite(requested or declared or DEFAULT)
