"""Benchmark suites by name, loaded lazily: a suite's code imports only when it is used.

A new suite adds its folder and one line in `BUILTIN`; a suite in another
distribution registers itself under the `apmbench_grpc.suites` entry-point
group instead, and no file here changes. Every command resolves its suite
here, once (`resolve_suite`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from apmbench.adapters.sdk.registry import Registry
from apmbench.harness.errors import ConfigError

if TYPE_CHECKING:
    from apmbench.harness.suites.base import OpaqueSuite

DEFAULT = "apmbench"
BUILTIN: dict[str, str] = {
    "apmbench": "apmbench.harness.suites.apmbench.suite:APMBench",
    "egoprobe": "apmbench.harness.suites.egoprobe.suite:EgoProbe",
    "proactegomem": "apmbench.harness.suites.proactegomem.suite:ProactEgoMem",
}
SUITE_REGISTRY: Registry[type[OpaqueSuite]] = Registry(
    "benchmark",
    BUILTIN,
    "apmbench.harness.suites.base:Suite",
    error=ConfigError,
    group="apmbench_grpc.suites",
)
"""The built-in suites plus those installed distributions register."""
SUITES = BUILTIN
"""The built-in names (kept for callers that list them; plugins: `SUITE_REGISTRY.names()`)."""


def get_suite(name: str) -> OpaqueSuite:
    return SUITE_REGISTRY.load(name)()


def declared_benchmark(root: Path) -> str | None:
    """The `benchmark` field of a dataset's dataset.json, if it has a readable one."""
    doc_path = Path(root) / "dataset.json"
    if not doc_path.is_file():
        return None
    try:
        declared = json.loads(doc_path.read_text(encoding="utf-8")).get("benchmark")
    except (OSError, ValueError, AttributeError):
        return None  # the suite's loader reports a broken file with more context
    return declared if isinstance(declared, str) else None


def benchmark_of_dataset(root: Path, requested: str | None = None) -> str:
    """The name of the suite `suite_of_dataset` builds (see there)."""
    declared = declared_benchmark(root)
    if requested is not None and declared is not None and requested != declared:
        raise ConfigError(
            f"{root} is a {declared!r} dataset but --benchmark {requested!r} was given: "
            f"drop --benchmark or pass --benchmark {declared}"
        )
    return requested or declared or DEFAULT


def suite_of_dataset(root: Path, requested: str | None = None) -> OpaqueSuite:
    """The suite named by `--benchmark`, else by the dataset's own `benchmark` field, else
    the default. A dataset that names another benchmark than the one requested is refused."""
    return get_suite(benchmark_of_dataset(root, requested))
