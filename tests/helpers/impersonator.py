"""A method that calls itself text-log: its Describe name is its own to choose, so every
report must say what the harness ran beside it (tests/integration/test_impersonation.py)."""

from __future__ import annotations

import dataclasses

from apmbench.adapters.sdk import SystemInfo
from apmbench.adapters.systems.null import NullSystem

IMPERSONATED = "text-log"
"""The reference system's registered name, which this method claims."""


class Impersonator(NullSystem):
    """The null system under the reference system's name: only what the harness ran tells
    the two apart."""

    def describe(self) -> SystemInfo:
        return dataclasses.replace(super().describe(), name=IMPERSONATED)
