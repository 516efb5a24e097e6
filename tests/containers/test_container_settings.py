"""Container options: parsing, the hardened defaults, what the manifest records. No engine needed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.errors import ConfigError
from apmbench.harness.runtimes.docker import leftovers
from apmbench.harness.runtimes.docker.cli_options import OPTION_DEFAULTS, container_settings
from apmbench.harness.runtimes.docker.settings import ContainerSettings, GpuRequest, parse_size

pytestmark = pytest.mark.containers

DEFAULT_ARGS = dict(OPTION_DEFAULTS)


def test_defaults_are_hardened_and_relax_nothing() -> None:
    s = container_settings(**DEFAULT_ARGS)  # type: ignore[arg-type]
    record = s.record()
    assert record["network"] == "none" and record["read_only_root"] is True
    assert record["cap_drop"] == ["ALL"] and record["cap_add"] == []
    assert record["no_new_privileges"] is True and record["init"] is True
    assert record["memory_bytes"] == record["memswap_bytes"] == 16 << 30
    assert record["cpus"] == 4.0 and record["pids_limit"] == 4096
    assert record["gpus"] == "none" and record["relaxations"] == []
    uid = record["user"].split(":")[0]
    assert uid != "0" and (uid == str(os.getuid()) or os.getuid() == 0)


def test_every_relaxation_is_recorded() -> None:
    args = dict(DEFAULT_ARGS, allow_network=True, writable_root=True, container_user="root",
                cap_add=("cap_sys_ptrace",), allow_new_privileges=True, memory="none",
                cpus="none", pids_limit="none", container_env=("API_KEY=secret",))  # fmt: skip
    record = container_settings(**args).record()  # type: ignore[arg-type]
    assert record["network"] == "bridge" and record["cap_add"] == ["SYS_PTRACE"]
    assert record["user"] == "0:0"
    assert record["env_names"] == ["API_KEY"] and "secret" not in str(record)
    assert record["relaxations"] == [
        "network: bridge", "writable root filesystem", "runs as root",
        "capabilities: SYS_PTRACE", "new privileges allowed",
        "no memory limit", "no cpus limit", "no pids limit",
    ]  # fmt: skip
    named = container_settings(**dict(DEFAULT_ARGS, network="host"))  # type: ignore[arg-type]
    assert named.network == "host"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("none", GpuRequest()), ("0", GpuRequest(device_ids=("0",))), ("all", GpuRequest(count=-1)),
     ("2", GpuRequest(count=2)), ("0,1", GpuRequest(device_ids=("0", "1"))),
     ("device=GPU-abc", GpuRequest(device_ids=("GPU-abc",)))],
)  # fmt: skip
def test_gpus(text: str, expected: GpuRequest) -> None:
    assert GpuRequest.parse(text) == expected
    assert GpuRequest.parse(expected.describe()) == expected


@pytest.mark.parametrize(
    ("override", "message"),
    [({"memory": "lots"}, "--memory 'lots': give a size such as 512m or 16g"),
     ({"cpus": "-1"}, "--cpus '-1': must be positive"),
     ({"pids_limit": "1.5"}, "--pids-limit '1.5': give a whole number"),
     ({"shm_size": "none"}, "--shm-size 'none': give a size"),
     ({"container_env": ("NOVALUE",)}, "--env 'NOVALUE': give KEY=VALUE"),
     ({"container_env": ("1X=2",)}, "--env '1X': give KEY=VALUE with a valid variable name"),
     ({"container_user": "me; rm"}, "--user 'me; rm': give uid[:gid]"),
     ({"gpus": "0,,1"}, "--gpus '0,,1': give none, all, a count, or device ids")],
)  # fmt: skip
def test_bad_options_say_what_to_fix(override: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        container_settings(**dict(DEFAULT_ARGS, **override))  # type: ignore[arg-type]


def test_sizes() -> None:
    assert parse_size("512m", "--x") == 512 << 20
    assert parse_size("1.5G", "--x") == 3 << 29
    assert parse_size("1024", "--x") == 1024
    assert parse_size("none", "--x") is None


def test_container_names_are_fixed_per_run_and_trajectory(tmp_path: Path) -> None:
    key = leftovers.run_key(tmp_path / "run")
    assert key == leftovers.run_key(tmp_path / "run") != leftovers.run_key(tmp_path / "other")
    assert leftovers.container_name(key, "T01") == f"apmbench-{key}-T01"
    odd = leftovers.container_name(key, "kitchen/day 1")
    assert odd.startswith(f"apmbench-{key}-kitchen_day_1-") and odd != leftovers.container_name(
        key, "kitchen_day_1"
    )


def test_user_must_be_numeric() -> None:
    with pytest.raises(ConfigError):
        ContainerSettings(user="nobody")


def test_container_options_without_an_image_are_refused(mini: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main,
        ["evaluate", "--dataset", str(mini), "--system", "null", "--out", str(out),
         "--gpus", "all", "--allow-network", "--memory", "2g"],
    )  # fmt: skip
    assert result.exit_code == 2
    # --gpus goes with --system too (the sandbox passes the GPU: test_sandbox_gpu.py).
    assert "--allow-network, --memory: only for --image (a container)" in result.output
    assert not out.exists()
