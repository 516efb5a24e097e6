"""No package index URL (a mirror's may carry a credential) in any image's history or layer.

The images install packages with the host's index passed as a build argument; the
classic builder writes every build argument a RUN sees into `docker history`, and a
file written in one layer stays in the image even if a later one deletes it. The
Dockerfiles therefore install in a build stage and copy only what was added.
"""

from __future__ import annotations

import io
import json
import tarfile
import uuid

import docker
import pytest

from apmbench.harness.build.images import BASE, Builder

pytestmark = pytest.mark.timeout(900)


def _history(engine: docker.DockerClient, image_id: str) -> str:
    return "\n".join(str(step.get("CreatedBy", "")) for step in engine.api.history(image_id))


class UnreadableLayer(AssertionError):
    """A layer the saved image lists that is not a readable tar: the scan cannot vouch for it."""


def _saved(engine: docker.DockerClient, image_id: str) -> bytes:
    saved = io.BytesIO()
    for chunk in engine.images.get(image_id).save(named=False):
        saved.write(chunk)
    return saved.getvalue()


def _layers_hold(engine: docker.DockerClient, image_id: str, needle: bytes) -> list[str]:
    """The files of the saved image (layers and config) that contain `needle`."""
    return _scan(_saved(engine, image_id), needle)


def _scan(saved: bytes, needle: bytes) -> list[str]:
    """The members of a `docker save` archive, and the files inside its layers, that contain
    `needle`. A layer that manifest.json lists and that cannot be read as a tar raises
    UnreadableLayer: skipping it would report "nothing found" for a layer never looked at."""
    found = []
    with tarfile.open(fileobj=io.BytesIO(saved)) as outer:
        members = {m.name: m for m in outer if m.isfile()}
        manifest_member = members.get("manifest.json")
        if manifest_member is None:
            raise UnreadableLayer("the saved image has no manifest.json: its layers are unknown")
        manifest = json.loads(_read(outer, manifest_member))
        layers = {name for entry in manifest for name in entry.get("Layers", [])}
        if missing := sorted(layers - set(members)):
            raise UnreadableLayer(f"layers listed but not in the archive: {missing}")
        for name, member in members.items():
            blob = _read(outer, member)
            if name not in layers:
                if needle in blob:
                    found.append(name)
                continue
            try:
                with tarfile.open(fileobj=io.BytesIO(blob)) as layer:
                    for entry in layer:
                        content = layer.extractfile(entry) if entry.isfile() else None
                        if content is not None and needle in content.read():
                            found.append(f"{name}:{entry.name}")
            except tarfile.TarError as e:
                raise UnreadableLayer(f"layer {name} cannot be read: {e}") from e
    return found


def _read(archive: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    data = archive.extractfile(member)
    assert data is not None
    return data.read()


def _archive(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def test_the_scan_refuses_a_layer_it_cannot_read() -> None:
    layer = _archive({"etc/planted": b"the needle"})
    manifest = json.dumps([{"Config": "c.json", "Layers": ["a/layer.tar", "b/layer.tar"]}])
    good = {"manifest.json": manifest.encode(), "c.json": b"{}", "a/layer.tar": layer}
    # A readable layer is searched inside ...
    assert _scan(_archive({**good, "b/layer.tar": layer}), b"needle") == [
        "a/layer.tar:etc/planted",
        "b/layer.tar:etc/planted",
    ]
    # ... an unreadable or missing one is an error, not "nothing found".
    with pytest.raises(UnreadableLayer, match=r"b/layer\.tar"):
        _scan(_archive({**good, "b/layer.tar": b"\x1f\x8b not a tar"}), b"needle")
    with pytest.raises(UnreadableLayer, match=r"b/layer\.tar"):
        _scan(_archive(good), b"needle")


def test_the_scan_finds_a_planted_secret_in_history_and_in_a_deleted_file(
    engine: docker.DockerClient, builder: Builder, images: dict[str, str]
) -> None:
    # The positive control of the two checks below: a build that does leak, as the
    # classic builder records a RUN's build arguments and keeps a file a later layer deletes.
    secret = f"apmbench-planted-{uuid.uuid4().hex}"
    dockerfile = (
        b"ARG BASE\nFROM ${BASE}\nARG PIP_INDEX_URL\n"
        b'RUN echo "$PIP_INDEX_URL" > /tmp/planted\nRUN rm /tmp/planted\n'
    )
    image_id = builder.build(
        "apmbench-test/planted-secret:latest",
        {"Dockerfile": dockerfile},
        {"BASE": BASE, "PIP_INDEX_URL": f"https://{secret}:x@mirror.invalid/simple"},
        parent=images[BASE],
    )
    try:
        assert secret in _history(engine, image_id)
        assert any("INDEX_URL" in line for line in _history(engine, image_id).splitlines())
        held = _layers_hold(engine, image_id, secret.encode())
        assert any(name.endswith(":tmp/planted") for name in held), held
    finally:
        engine.images.remove(image_id, force=True)


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
