"""The Docker engine as the harness needs it: a connection, facts for the manifest, images.

Engine failures become `EngineError` (a `ConfigError`: nothing was started,
the message says what to fix), raised `from` the docker SDK's error.

A busy engine (other builds, a prune, dozens of containers starting) can take
minutes to answer one call: CI saw an image prune time out at the docker SDK's
30 s while other builds ran. So every client waits `APMBENCH_DOCKER_TIMEOUT`
seconds (default 300) for an answer, and a read that timed out or lost its
connection is asked again (GETs only: asking again for a create could make a
second container). `unanswered` words what is left after that for the user.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from typing import Any

import docker
import docker.errors
import requests
from docker.models.images import Image

from apmbench.harness.errors import ConfigError, EngineError, EngineUnanswered
from apmbench.harness.json_types import JsonObject

TIMEOUT_ENV = "APMBENCH_DOCKER_TIMEOUT"
DEFAULT_TIMEOUT_S = 300.0
"""How long one engine call may take before it is given up (docker's own CLI has no limit;
the docker SDK's default is 60 s, which a loaded engine exceeded)."""
READ_TRIES = 3
"""A GET that timed out or lost its connection is sent this many times in all."""
RETRY_PAUSE_S = 1.0
"""The pause before the second try; it doubles before each later one."""

# What the engine answers when a GPU is requested and no runtime provides one,
# e.g. 'could not select device driver "" with capabilities: [[gpu]]'.
NO_GPU_DRIVER = "could not select device driver"


def timeout_s() -> float:
    """`APMBENCH_DOCKER_TIMEOUT` in seconds, or the default; a bad value is refused."""
    given = os.environ.get(TIMEOUT_ENV, "").strip()
    if not given:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(given)
    except ValueError:
        value = -1.0
    if not 0 < value < 86400:
        raise ConfigError(
            f"{TIMEOUT_ENV}={given!r}: give the seconds one Docker engine call may take, "
            f"a number above 0 (default {DEFAULT_TIMEOUT_S:.0f})"
        )
    return value


def unanswered(
    e: requests.RequestException, what: str, seconds: float | None = None
) -> EngineUnanswered:
    """The error for an engine call that timed out or lost its connection, tries spent."""
    seconds = timeout_s() if seconds is None else seconds
    return EngineUnanswered(
        f"the Docker engine did not answer {what} ({type(e).__name__}: {e}). It may be busy "
        f"(other builds or containers): wait and run the command again, or allow it longer "
        f"with {TIMEOUT_ENV}=SECONDS (now {seconds:g} s a call)"
    )


def _retrying_reads(send: Callable[..., Any]) -> Callable[..., Any]:
    """`send` of a requests session, asking again for a GET or HEAD that timed out or lost
    its connection."""

    @functools.wraps(send)
    def again(request: requests.PreparedRequest, **kwargs: Any) -> Any:
        pause = RETRY_PAUSE_S
        for attempt in range(1, READ_TRIES + 1):
            try:
                return send(request, **kwargs)
            except (requests.Timeout, requests.ConnectionError):
                if request.method not in ("GET", "HEAD") or attempt == READ_TRIES:
                    raise
            time.sleep(pause)
            pause *= 2
        raise AssertionError("unreachable")

    return again


def _client(seconds: int) -> docker.DockerClient:
    """`docker.from_env`, whose first call (the API version) is asked again after a timeout
    (the docker SDK wraps it in a DockerException)."""
    pause = RETRY_PAUSE_S
    for attempt in range(1, READ_TRIES + 1):
        try:
            return docker.from_env(timeout=seconds)
        except docker.errors.DockerException as e:
            if not isinstance(e.__cause__, requests.Timeout) or attempt == READ_TRIES:
                raise
        time.sleep(pause)
        pause *= 2
    raise AssertionError("unreachable")


def connect(timeout: float | None = None) -> docker.DockerClient:
    """A client for the engine named by DOCKER_HOST (default: the local socket), checked
    alive; each call waits `timeout` seconds (default: `timeout_s()`), reads are retried."""
    seconds = timeout_s() if timeout is None else timeout
    try:
        client = _client(max(1, round(seconds)))
        client.api.send = _retrying_reads(client.api.send)  # type: ignore[method-assign]
        client.ping()
    except requests.RequestException as e:
        raise unanswered(e, "a ping", seconds) from e
    except docker.errors.DockerException as e:
        if isinstance(e.__cause__, requests.Timeout):
            raise unanswered(e.__cause__, "when asked its API version", seconds) from e
        raise EngineError(
            f"cannot reach the Docker engine ({e}). Start it (as root: "
            "`dockerd --storage-driver=overlay2 --iptables=false --bridge=none &`), "
            "or point DOCKER_HOST at a running one"
        ) from e
    return client


def engine_facts(client: docker.DockerClient) -> JsonObject:
    """Version and capacity of the engine, recorded in manifest.json."""
    version = client.version()
    info = client.info()
    return {
        "version": version.get("Version"),
        "api_version": version.get("ApiVersion"),
        "os": info.get("OperatingSystem"),
        "kernel": info.get("KernelVersion"),
        "arch": info.get("Architecture"),
        "cpus": info.get("NCPU"),
        "memory_bytes": info.get("MemTotal"),
        "runtimes": sorted(info.get("Runtimes") or {}),
        "storage_driver": info.get("Driver"),
    }


def find_image(client: docker.DockerClient, ref: str) -> Image:
    """The local image `ref`; never pulls (clusters are often air-gapped)."""
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound as e:
        raise EngineError(
            f"image {ref!r} is not on the Docker engine. Build it (`make images` builds "
            "apmbench/base and one apmbench/<system> image per reference system; "
            "containers/template/ shows how to wrap a method), or load it with "
            "`docker load -i IMAGE.tar` (or `docker pull` where a registry is reachable)"
        ) from e
    except docker.errors.APIError as e:
        raise EngineError(f"cannot inspect image {ref!r}: {e.explanation or e}") from e


def image_facts(image: Image, ref: str) -> JsonObject:
    """What identifies the evaluated image: its id (content digest) and any registry digests."""
    labels = image.labels or {}
    return {
        "ref": ref,
        "id": image.id,
        "repo_digests": list(image.attrs.get("RepoDigests") or []),
        "tags": list(image.tags),
        "created": image.attrs.get("Created"),
        "labels": {k: v for k, v in labels.items() if k.startswith("org.")},
    }


def check_network(client: docker.DockerClient, mode: str) -> None:
    """Refuse a network the engine lacks: Docker would start the container with only `lo`.

    An engine started with `--bridge=none` has no "bridge" network, yet accepts
    network_mode="bridge" and quietly gives no connectivity.
    """
    if mode in ("none", "host") or mode.startswith("container:"):
        return
    try:
        client.networks.get(mode)
    except docker.errors.NotFound as e:
        names = sorted(str(n.name) for n in client.networks.list())
        raise EngineError(
            f"network {mode!r} does not exist on this Docker engine (it has: "
            f"{', '.join(names)}), so the container would have no network at all. Use "
            "--network with one of those (e.g. host), create one (`docker network create`), "
            "or start dockerd with a bridge"
        ) from e
