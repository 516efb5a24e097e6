"""The container tier: real images on a real Docker engine.

Without an engine these tests skip, saying how to enable them; with CI=true
(or APMBENCH_REQUIRE_DOCKER=1) they fail instead, so CI cannot pass by
skipping them. The images are built (or found up to date) once per session
with the same builder as `make images`, plus the test image from image/; under
pytest-xdist one worker builds at a time, so two workers wanting one image build it
once (the second finds it up to date).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import docker
import pytest
from containertools import HERE, ROOT, TEST_IMAGE, unavailable
from helpers.shared import Shared

from apmbench.adapters.sdk.errors import ApmbenchError
from apmbench.harness.build.images import BASE, Builder, tree_files
from apmbench.harness.runtimes.docker.engine import connect


@pytest.fixture(scope="session")
def engine() -> Iterator[docker.DockerClient]:
    try:
        client = connect()  # the harness's own: a busy engine gets its time and retries
    except ApmbenchError as e:
        unavailable(f"no Docker engine answers ({e})")
        raise AssertionError("unreachable") from e
    yield client
    client.close()


@dataclass
class OneBuildAtATime(Builder):
    """`make images`'s builder, holding the session's lock around each build."""

    shared: Shared | None = None

    def build(self, *args: Any, **kwargs: Any) -> str:
        assert self.shared is not None
        with self.shared.lock("images"):
            return super().build(*args, **kwargs)

    def rootfs(self, *args: Any, **kwargs: Any) -> str:
        assert self.shared is not None
        with self.shared.lock("images"):
            return super().rootfs(*args, **kwargs)


@pytest.fixture(scope="session")
def builder(engine: docker.DockerClient, shared: Shared) -> Builder:
    return OneBuildAtATime(ROOT, engine, say=lambda line: None, shared=shared)


@pytest.fixture(scope="session")
def images(builder: Builder) -> dict[str, str]:
    """Image name -> id: what `make images` builds (a no-op when up to date) and the test image."""
    try:
        built = builder.all()
    except ApmbenchError as e:
        unavailable(f"the images cannot be built ({e})")
        raise AssertionError("unreachable") from e
    files = {
        "Dockerfile": (HERE / "image" / "Dockerfile").read_bytes(),
        "testsys.py": (HERE / "image" / "testsys.py").read_bytes(),
        **tree_files(ROOT / "tests", ["helpers"], [], ""),
    }
    built[TEST_IMAGE] = builder.build(TEST_IMAGE, files, parent=built[BASE])
    return built
