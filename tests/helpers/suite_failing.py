"""A system that fails on one suite only, for the multi-suite `evaluate` tests."""

from __future__ import annotations

import os

from apmbench.adapters.systems.null import NullSystem


class FailsOnPrefix(NullSystem):
    """`null`, except that it fails at the start of every trajectory whose id begins with
    $APMBENCH_FAIL_PREFIX (ProactEgoMem's synthetic ids begin with `pem-`); empty or unset:
    `null` itself."""

    def reset(self, trajectory_id: str) -> None:
        prefix = os.environ.get("APMBENCH_FAIL_PREFIX", "")
        if prefix and trajectory_id.startswith(prefix):
            raise RuntimeError(f"this system fails on {trajectory_id}")
        super().reset(trajectory_id)
