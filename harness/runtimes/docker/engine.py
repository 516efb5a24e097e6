"""The Docker engine as the harness needs it: a connection, facts for the manifest, images.

Engine failures become `EngineError` (a `ConfigError`: nothing was started,
the message says what to fix), raised `from` the docker SDK's error.
"""

from __future__ import annotations

import docker
import docker.errors
from docker.models.images import Image

from apmbench.harness.errors import EngineError
from apmbench.harness.json_types import JsonObject

# What the engine answers when a GPU is requested and no runtime provides one,
# e.g. 'could not select device driver "" with capabilities: [[gpu]]'.
NO_GPU_DRIVER = "could not select device driver"


def connect(timeout_s: float = 30.0) -> docker.DockerClient:
    """A client for the engine named by DOCKER_HOST (default: the local socket), checked alive."""
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except docker.errors.DockerException as e:
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
