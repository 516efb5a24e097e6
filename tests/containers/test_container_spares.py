"""Spare containers: started while the current one serves, promoted by the next restarts.

The gallery's hand-off cheater (helpers.cheaters:LiveHandoff) holds an abstract Unix socket
name and hands what it saw to any process that connects while it runs; a spare container
starts exactly then. Both halves:

- on network `none` (the default, the only network spares are started on), each
  container has its own network namespace, so the spares hear nothing;
- with the protection off (spares forced on a network the containers share, `host`),
  the spare hears the serving container: the test would catch a spare that could.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest
from containertools import ROOT, run_containers, socket_mounts

from apmbench.harness.build.images import BASE, Builder, tree_files
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec, wants_spare
from apmbench.harness.runtimes.docker.runtime import DockerConfig
from apmbench.harness.runtimes.docker.settings import ContainerSettings

pytestmark = pytest.mark.containers

HANDOFF = "apmbench-test/handoff:latest"
DOCKERFILE = b"""ARG BASE=apmbench/base:latest
FROM ${BASE}
COPY helpers /opt/apmbench-tests/helpers
ENV PYTHONPATH=/opt/apmbench-tests
ENTRYPOINT ["python", "-c", "import os; from apmbench.adapters.sdk import serve; \\
from helpers.cheaters import LiveHandoff; serve(LiveHandoff(), os.environ['APMBENCH_ADDRESS'])"]
"""


@pytest.fixture(scope="module")
def handoff(builder: Builder, engine: docker.DockerClient) -> str:
    # The cheater needs only the SDK's serve() and the helpers it copies in: a base image
    # already there serves as it is; only without one are the images built.
    try:
        base = str(engine.images.get(BASE).id)
    except docker.errors.ImageNotFound:
        base = builder.all()[BASE]
    files = {"Dockerfile": DOCKERFILE, **tree_files(ROOT / "tests", ["helpers"], [], "")}
    return builder.build(HANDOFF, files, parent=base)


def _run(mini: Path, out: Path, network: str) -> list[dict[str, Any]]:
    settings = ContainerSettings(
        env=(("APMBENCH_CHEAT_TAG", uuid.uuid4().hex[:12]),), network=network
    )
    evaluate(
        EvaluateOptions(
            dataset=mini, out=out, persistence=Persistence.RESTART,
            runtime=runtime_spec(image=HANDOFF, container=settings, spare=True),
        )
    )  # fmt: skip
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    return [json.loads(r["raw_output"]) for r in rows]


def starts_served(out: Path) -> int:
    return int(json.loads((out / "logs" / "starts.json").read_text())["served"])


def _own_mounts() -> list[str]:
    """This harness's socket-directory mounts (named by its pid; other runs share the host)."""
    return [m for m in socket_mounts() if Path(m).name.startswith(f"apmd-{os.getpid()}-")]


def _promoted_spares(out: Path) -> int:
    """Starts whose container was a spare (named ...-sN), from the system's log."""
    log = (out / "logs" / "system.log").read_text()
    return len(re.findall(r"^--- container \S+-s\d+ \(", log, re.MULTILINE))


@pytest.mark.usefixtures("handoff")
def test_a_spare_container_hears_nothing_from_the_one_serving(
    mini: Path, tmp_path: Path, engine: docker.DockerClient
) -> None:
    out = tmp_path / "run"
    said = _run(mini, out, "none")
    assert sum(s["seen"] for s in said) > 0  # it had something to hand over
    assert _promoted_spares(out) > 0  # the restarts were served by spares
    # One section per served start, in the order the spares were promoted, though the
    # container before each was taken down while it served.
    log = (out / "logs" / "system.log").read_text()
    assert len(re.findall(r"^--- container ", log, re.MULTILINE)) == starts_served(out)
    spares = [int(n) for n in re.findall(r"^--- container \S+-s(\d+) \(", log, re.MULTILINE)]
    assert spares == sorted(spares)
    assert not any(s["recalled"] for s in said), "a spare container heard the serving one"
    starts = json.loads((out / "logs" / "starts.json").read_text())
    assert starts["starts"] > starts["waited"]
    assert _own_mounts() == [] and run_containers(engine, out) == []


@pytest.mark.usefixtures("handoff")
def test_spares_on_a_shared_network_would_hear_it(
    mini: Path, tmp_path: Path, engine: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The protection: no spare on a network the containers share.
    assert not wants_spare(runtime_spec(image=HANDOFF, spare=True,
                                       container=ContainerSettings(network="host")))  # fmt: skip
    # Switched off here: a spare beside the serving container on the host's network.
    monkeypatch.setattr(DockerConfig, "spares_allowed", lambda self: True)
    out = tmp_path / "run"
    said = _run(mini, out, "host")
    assert _promoted_spares(out) > 0
    assert any(s["recalled"] for s in said), "the cheat should work with the protection off"
    assert _own_mounts() == [] and run_containers(engine, out) == []
