"""Containers that carry the harness's labels without its proof (another user's harness on
a shared engine, a forger) are left alone, and said so in one line per start, not one per
container at every `--image` run."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from docker.models.containers import Container
from structlog.testing import capture_logs

from apmbench.harness import logs
from apmbench.harness.runtimes.docker import leftovers

pytestmark = [pytest.mark.containers]

EMPTY_IMAGE = "apmbench-test/empty:latest"
FORGED = 5


@pytest.fixture
def forged(engine: docker.DockerClient, tmp_path: Path) -> Iterator[list[Container]]:
    """Containers (created, never started) with copied labels and a wrong proof."""
    blank = io.BytesIO()
    tarfile.open(fileobj=blank, mode="w").close()  # an image of no files: nothing to run
    engine.api.import_image_from_data(blank.getvalue(), repository="apmbench-test/empty")
    owner = leftovers.Owner("elsewhere", 1, 0.0)
    made = []
    try:
        for n in range(FORGED):
            labels = leftovers.labels("forged", tmp_path, f"T{n}", owner, tmp_path)
            labels[leftovers.PROOF] = "0" * 64
            made.append(engine.containers.create(EMPTY_IMAGE, ["/none"], labels=labels))
        yield made
    finally:
        for container in made:
            leftovers.remove(container)


def test_foreign_containers_are_kept_and_summed_up_in_one_line(
    engine: docker.DockerClient, forged: list[Container]
) -> None:
    logs.configure(verbose=True)  # as with -v: the names are logged at debug
    try:
        with capture_logs() as logged:
            removed = leftovers.clean(engine, "a-run-key", leftovers.Owner.me())
    finally:
        logs.configure()
    assert not set(removed) & {c.name for c in forged}
    for container in forged:
        container.reload()  # still there: not this harness's to remove
    infos = [e for e in logged if e["log_level"] == "info"]
    said = [e for e in infos if "did not make" in e["event"]]
    assert len(said) == 1, infos
    assert said[0]["count"] >= FORGED  # another user's may share the engine
    assert not [e for e in infos if e.get("name") in {c.name for c in forged}]
    (listed,) = [e for e in logged if e["log_level"] == "debug" and "did not make" in e["event"]]
    assert all(str(c.name) in listed["names"] for c in forged)
