"""Synthetic renderers by generator name: a session's render spec names the one that draws it.

Registered as "module:function" strings so that a suite's generator (and
numpy-heavy rendering code) loads only when one of its sessions plays; a
new suite's generator adds one line here and touches no other suite.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from apmbench.harness.errors import DatasetError

RenderFrames = Callable[[Mapping[str, Any], Sequence[int]], Iterator[npt.NDArray[np.uint8]]]

RENDERERS: dict[str, str] = {
    "apmbench-synth": "apmbench.harness.suites.apmbench.synth.live:render_frames",
    "proactegomem-synth": "apmbench.harness.suites.proactegomem.synth:render_frames",
}


def renderer_for(spec: Mapping[str, Any]) -> RenderFrames:
    name = spec.get("generator")
    target = RENDERERS.get(str(name))
    if target is None:
        known = ", ".join(sorted(RENDERERS))
        raise DatasetError(f"render spec names generator {name!r}; known generators: {known}")
    module, _, function = target.partition(":")
    render: RenderFrames = getattr(importlib.import_module(module), function)
    return render
