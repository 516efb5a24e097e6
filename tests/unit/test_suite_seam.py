"""The suite seam stays narrow: a handful of methods, each handing over a suite's own
functions, and no suite class that forwards calls to its modules method by method."""

from __future__ import annotations

import inspect

from apmbench.harness.suites import SUITE_REGISTRY, get_suite
from apmbench.harness.suites.base import Suite

MAX_SEAM_METHODS = 12


def _methods(cls: type) -> set[str]:
    return {name for name, value in vars(cls).items() if inspect.isfunction(value)}


def test_the_seam_has_at_most_twelve_methods() -> None:
    seam = set()
    for cls in Suite.__mro__:
        if cls is not object:
            seam |= {n for n in _methods(cls) if not n.startswith("__")}
    assert seam == {"dataset_format", "plan", "grading", "report_format"}
    assert len(seam) <= MAX_SEAM_METHODS


def test_no_built_in_suite_adds_a_method_to_the_seam() -> None:
    # A suite that grew its own methods would be a second seam the shared machinery could
    # start calling; everything beyond the four lives in the suite's modules.
    allowed = _methods(Suite)
    for name in SUITE_REGISTRY.names():
        cls = type(get_suite(name))
        extra = _methods(cls) - allowed
        assert not extra, f"{name} defines {sorted(extra)} beside the seam"


def test_each_built_in_suite_hands_over_its_functions() -> None:
    for name in SUITE_REGISTRY.names():
        suite = get_suite(name)
        form, grading, report = suite.dataset_format(), suite.grading(), suite.report_format()
        assert callable(form.load) and callable(grading.grade) and callable(report.score)
        # Every suite scores through its own module's function, not a method of its class.
        assert inspect.getmodule(report.score) is not inspect.getmodule(type(suite)), name
