"""The bubblewrap sandbox on its own: what a wrapped process can see, reach and inherit."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sys
from pathlib import Path

import pytest

from apmbench.harness.errors import ConfigError
from apmbench.harness.runtimes.sandbox import (
    Sandbox,
    allowed_env,
    find_bwrap,
    parse_env,
    python_policy,
)

PROBE = """
import json, os, socket
seen = {"env": sorted(os.environ), "home": os.environ.get("HOME"), "net": None}
try:
    socket.create_connection(("127.0.0.1", 22), timeout=1)
    seen["net"] = "connected"
except OSError as e:
    seen["net"] = type(e).__name__
seen["secret_dir"] = os.path.exists(os.environ["SECRET_DIR"])
seen["hidden_files"] = os.listdir(os.environ["HIDDEN"]) if os.path.isdir(os.environ["HIDDEN"]) else None
try:
    open(os.path.join(os.environ["HIDDEN"], "x"), "w")
    seen["hidden_writable"] = True
except OSError:
    seen["hidden_writable"] = False
print(json.dumps(seen))
"""


def test_env_entries_set_or_pass_on() -> None:
    assert parse_env(["A=1", "B"], {"B": "2"}) == {"A": "1", "B": "2"}
    with pytest.raises(ConfigError, match="not set here"):
        parse_env(["C"], {})
    with pytest.raises(ConfigError, match="NAME=VALUE"):
        parse_env(["=x"], {})
    env = allowed_env({"X": "1"}, {"APMBENCH_VLM_MODEL": "/m", "AWS_SECRET": "s", "PATH": "/p"})
    assert env == {"APMBENCH_VLM_MODEL": "/m", "X": "1"}


@pytest.mark.skipif(
    find_bwrap() is None and os.environ.get("CI") != "true",
    reason="bubblewrap is not installed (under CI=true this fails instead)",
)
def test_wrapped_process_sees_only_its_allowlist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    monkeypatch.setenv("HARNESS_TOKEN", "do-not-leak")
    # A hidden directory under a bound one: bound read-only, masked empty.
    bound = Path(sys.prefix)
    hidden = bound / "apm-hidden-probe"
    hidden.mkdir(exist_ok=True)
    (hidden / "label.json").write_text("{}")
    try:
        env = allowed_env({"SECRET_DIR": str(secret), "HIDDEN": str(hidden)})
        sandbox = Sandbox(python_policy("null", [hidden], env))
        done = sandbox.run([sys.executable, "-c", PROBE])
        masked = sandbox.describe()["masked"]
    finally:
        (hidden / "label.json").unlink()
        hidden.rmdir()
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert "HARNESS_TOKEN" not in seen["env"] and seen["home"] == "/tmp/home"
    assert seen["net"] != "connected"
    assert seen["secret_dir"] is False  # tmp_path is not bound
    assert seen["hidden_files"] == [] and seen["hidden_writable"] is False
    assert str(hidden) in masked


@pytest.mark.skipif(
    find_bwrap() is None and os.environ.get("CI") != "true",
    reason="bubblewrap is not installed (under CI=true this fails instead)",
)
def test_sandbox_net_shares_the_host_network_and_tmp_binds_stay_visible(tmp_path: Path) -> None:
    """--sandbox-net reaches a host service; a model directory under /tmp is readable
    although the sandbox's own /tmp is a fresh tmpfs mounted over the host's."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    probe = (
        "import os, socket, sys\n"
        f"print(os.path.exists({str(model / 'config.json')!r}))\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2); print('reached')\n"
        "except OSError: print('unreachable')\n"
    )
    policy = python_policy("null", (), {"APMBENCH_VLM_MODEL": str(model)})
    for share, expected in ((False, "unreachable"), (True, "reached")):
        sandbox = Sandbox(dataclasses.replace(policy, share_net=share))
        out = sandbox.run([sys.executable, "-c", probe])
        assert out.stdout.split() == ["True", expected], out.stderr
    listener.close()
