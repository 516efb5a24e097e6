"""No package index URL (a mirror's may carry a credential) in any image's history or layer.

The images install packages with the host's index passed as a build argument; the
classic builder writes every build argument a RUN sees into `docker history`, and a
file written in one layer stays in the image even if a later one deletes it. The
Dockerfiles therefore install in a build stage and copy only what was added.
"""

from __future__ import annotations

import io
import tarfile
import uuid

import docker
import pytest

from apmbench.harness.build.images import BASE, Builder

pytestmark = pytest.mark.timeout(900)


def _history(engine: docker.DockerClient, image_id: str) -> str:
    return "\n".join(str(step.get("CreatedBy", "")) for step in engine.api.history(image_id))


def _layers_hold(engine: docker.DockerClient, image_id: str, needle: bytes) -> list[str]:
    """The files of the saved image (layers and config) that contain `needle`."""
    saved = io.BytesIO()
    for chunk in engine.images.get(image_id).save(named=False):
        saved.write(chunk)
    saved.seek(0)
    found = []
    with tarfile.open(fileobj=saved) as outer:
        for member in outer:
            data = outer.extractfile(member) if member.isfile() else None
            if data is None:
                continue
            blob = data.read()
            if needle in blob:
                found.append(member.name)
                continue
            try:
                with tarfile.open(fileobj=io.BytesIO(blob)) as layer:
                    for entry in layer:
                        content = layer.extractfile(entry) if entry.isfile() else None
                        if content is not None and needle in content.read():
                            found.append(f"{member.name}:{entry.name}")
            except tarfile.TarError:
                pass
    return found


def test_built_images_keep_no_index_url_in_their_history(
    engine: docker.DockerClient, images: dict[str, str]
) -> None:
    # Every image the project ships on the engine: what `make images` builds (the fixture
    # made sure of those) and whatever else was built here, the VLM images included. (The
    # tests' own images derive from these and add no build argument.)
    ours = {
        tag: image.id
        for image in engine.images.list()
        for tag in image.tags
        if tag.startswith("apmbench/")
    }
    leaking = {
        name: [line for line in _history(engine, image_id).splitlines() if "INDEX_URL" in line]
        for name, image_id in {**images, **ours}.items()
    }
    assert {name: lines for name, lines in leaking.items() if lines} == {}


def test_an_index_credential_reaches_neither_history_nor_layers(
    engine: docker.DockerClient, builder: Builder, images: dict[str, str]
) -> None:
    secret = f"apmbench-sentinel-{uuid.uuid4().hex}"
    # PyPI ignores the basic-auth credential; a private mirror would check it.
    index = f"https://{secret}:s3cret@pypi.org/simple"
    dockerfile = (builder.root / "containers" / "system" / "Dockerfile").read_bytes()
    tag = "apmbench-test/index-secret:latest"
    image_id = builder.build(
        tag,
        {"Dockerfile": dockerfile},
        {"BASE": BASE, "SYSTEM": "null", "EXTRAS": "six", "PIP_INDEX_URL": index},
        parent=images[BASE],
    )
    try:
        # The extra did arrive (through that index), and the image still runs as its user.
        out = engine.containers.run(
            image_id,
            entrypoint=["python", "-c", "import six; print(six.__version__)"],
            remove=True,
        )
        assert out.decode().strip()
        assert secret not in _history(engine, image_id)
        assert _layers_hold(engine, image_id, secret.encode()) == []
    finally:
        engine.images.remove(image_id, force=True)
