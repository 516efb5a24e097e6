"""Synthetic renderers by generator name: a session's render spec names the one that draws it.

The names go through the one registry (`apmbench.adapters.sdk.registry`) so
that a suite's generator (and numpy-heavy rendering code) loads only when one
of its sessions plays; a new suite's generator adds one line here, or an
installed distribution registers it under the `apmbench_grpc.renderers`
entry-point group, and no other suite changes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from apmbench.adapters.sdk.registry import Registry
from apmbench.harness.errors import DatasetError
from apmbench.harness.json_types import JSON
from apmbench.harness.media.patched import Rendered

RenderFrames = Callable[[Mapping[str, JSON], Sequence[int]], Iterator[Rendered]]
"""A renderer: a session's frames at the given times (ms) from its render spec, the JSON
object a dataset holds (each renderer narrows it into its own spec type). A frame is an
RGB image, or a `Patched` one (a shared base with a band of rows replaced) that
consumers turn into pixels with `apmbench.harness.media.patched.pixels`."""

RENDERERS: dict[str, str] = {
    "apmbench-synth": "apmbench.harness.suites.apmbench.synth.live:render_frames",
    "proactegomem-synth": "apmbench.harness.suites.proactegomem.synth:render_frames",
}
RENDERER_REGISTRY: Registry[RenderFrames] = Registry(
    "generator", RENDERERS, "collections.abc:Callable", classes=False, error=DatasetError,
    group="apmbench_grpc.renderers",
)  # fmt: skip


def renderer_for(spec: Mapping[str, JSON]) -> RenderFrames:
    name = spec.get("generator")
    if not isinstance(name, str):
        raise DatasetError(f"render spec names no generator (got {name!r})")
    return RENDERER_REGISTRY.load(name)
