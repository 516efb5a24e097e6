"""The SDK stays lean: one version for both distributions, and a cheap import.

`import apmbench.adapters.sdk` must load no gRPC, protobuf or numpy (they
come with `serve` and `Frame.rgb()`), and a reference system that needs no
pixels serves without numpy: method images and restarts between sessions
pay only for what they use.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from apmbench.harness.build import distributions

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("grpc", "google.protobuf", "numpy", "simplejpeg", "apmbench.harness")


def _loaded(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd="/"
    )
    return [m for m in out.stdout.strip().split(",") if m]


def test_sdk_import_loads_no_grpc_protobuf_or_numpy() -> None:
    assert _loaded("import apmbench.adapters.sdk") == []


def test_serving_null_loads_grpc_but_not_numpy() -> None:
    code = (
        "from apmbench.adapters.sdk import serve\n"
        "import apmbench.adapters.__main__\n"
        "from apmbench.adapters.systems import load_system\n"
        "load_system('null')\n"
    )
    assert _loaded(code) == ["grpc", "google.protobuf"]


def test_lazy_names_resolve_and_unknown_names_still_fail() -> None:
    import apmbench.adapters.sdk as sdk
    from apmbench.adapters.sdk import server

    assert sdk.serve is server.serve
    assert sdk.start_server is server.start_server
    assert sdk.RunningServer is server.RunningServer
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = sdk.no_such_name


def test_frame_rgb_still_decodes_both_encodings() -> None:
    import numpy as np
    import simplejpeg

    from apmbench.adapters.sdk import Frame, FrameEncoding

    pixels = np.zeros((8, 16, 3), dtype=np.uint8)
    pixels[:, 8:] = 255
    raw = Frame(0, FrameEncoding.RGB24, 16, 8, pixels.tobytes())
    assert (raw.rgb() == pixels).all()
    jpeg = Frame(0, FrameEncoding.JPEG, 16, 8, simplejpeg.encode_jpeg(pixels, colorspace="RGB"))
    assert jpeg.rgb().shape == (8, 16, 3)


def test_one_version_and_the_harness_pins_the_sdk_to_it() -> None:
    version = distributions.version(ROOT)
    assert distributions.sdk_pin(ROOT) == f"apmbench-sdk=={version}", (
        "pyproject.toml: apmbench-grpc must depend on apmbench-sdk of its own version"
    )
    staged = distributions.sdk_tree(ROOT)
    assert staged["VERSION"].decode().strip() == version
    sdk_meta = tomllib.loads(staged["pyproject.toml"].decode())
    assert sdk_meta["project"]["dynamic"] == ["version"]


def test_sdk_tree_holds_the_protocol_and_adapters_and_nothing_of_the_harness() -> None:
    staged = distributions.sdk_tree(ROOT)
    assert "proto/apmbench/v1/memory_system_pb2.py" in staged
    assert "proto/apmbench/v1/memory_system.proto" in staged
    assert "adapters/sdk/server.py" in staged
    assert not [p for p in staged if p.startswith("harness/") or "__pycache__" in p]


def test_the_base_image_installs_the_sdk_alone() -> None:
    # What apmbench/base's dependency layer and build context hold: the SDK's
    # dependencies and staged tree, nothing the harness alone needs.
    from apmbench.harness.build import images

    wanted = images.requirements(ROOT).decode().split()
    names = {re.split(r"[<>=!~\[ ]", spec, maxsplit=1)[0].lower() for spec in wanted}
    assert not names & {*distributions.HARNESS_ONLY, "structlog"}, sorted(names)
    assert {"grpcio", "protobuf", "numpy", "simplejpeg"} <= names
    prune = (ROOT / "containers" / "base" / "prune.txt").read_text().split()
    assert "pip" in prune and "numpy/*/tests" in prune
