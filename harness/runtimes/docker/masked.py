"""Create a container with paths masked (the Engine API's HostConfig.MaskedPaths).

The harness masks the /proc and /sys files with host-wide counters that runc does not let
a bind land on (procview.py). docker-py's `containers.create` has no keyword for
MaskedPaths, so this builds the same request from its public low-level calls
(`create_host_config`, `create_container`) and adds the field. The list replaces the
engine's own (procview.DOCKER_MASKED keeps those), and an engine that ignores the field
is refused: its containers would read live counters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import docker
from docker.models.containers import Container

from apmbench.harness.errors import EngineError
from apmbench.harness.runtimes.docker import leftovers

CONTAINER_OPTIONS = frozenset({"name", "labels", "environment", "user"})
"""The `containers.create` options that belong to the container's config; every other one
the runtime passes belongs to its host config."""


def create(
    engine: docker.DockerClient, image: str, options: Mapping[str, Any], masked: Sequence[str]
) -> Container:
    """`engine.containers.create(image, **options)` with `masked` as its MaskedPaths."""
    host = engine.api.create_host_config(
        **{k: v for k, v in options.items() if k not in CONTAINER_OPTIONS}
    )
    host["MaskedPaths"] = list(masked)
    made = engine.api.create_container(
        image, host_config=host, **{k: v for k, v in options.items() if k in CONTAINER_OPTIONS}
    )
    container = engine.containers.get(made["Id"])
    applied = set((container.attrs.get("HostConfig") or {}).get("MaskedPaths") or [])
    missing = [p for p in masked if p not in applied]
    if missing:
        leftovers.remove(container)
        raise EngineError(
            f"the container engine ignored the paths to mask ({', '.join(missing[:3])}, ...): "
            "its containers would read the host's live /proc counters; use an engine that "
            "honours HostConfig.MaskedPaths (Docker Engine 20.10 does)"
        )
    return container
