"""What a container may do, tried from inside it: no network, non-root, read-only root, limits.

The probe system of the test image tries each thing at start-up and reports
the outcome in its Describe details.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from containertools import TEST_IMAGE, run_containers

from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.docker.runtime import DockerRuntime
from apmbench.harness.runtimes.docker.settings import ContainerSettings

pytestmark = [pytest.mark.containers, pytest.mark.usefixtures("images")]

PROBE = ContainerSettings(env=(("TESTSYS", "probe"), ("PROBE_X", "1")))


def probe(run_dir: Path, settings: ContainerSettings) -> dict[str, str]:
    """The probe's details, and the limits the engine set on its container (its own cgroup
    files are masked from it: an empty read-only directory at /sys/fs/cgroup)."""
    with DockerRuntime(TEST_IMAGE, run_dir, Deadlines(), settings, startup_timeout_s=60) as rt:
        details = dict(rt.start().describe().details)
        details["manifest_relaxations"] = ";".join(rt.describe()["container"]["relaxations"])
        engine = docker.from_env()
        try:
            host = run_containers(engine, run_dir)[0].attrs["HostConfig"]  # a spare alike
        finally:
            engine.close()
        details["memory_max"] = str(host.get("Memory") or "max")
        pids = host.get("PidsLimit") or 0
        details["pids_max"] = str(pids) if pids > 0 else "max"  # 0 and -1: no limit
        quota = host.get("CpuQuota") or (host.get("NanoCpus") or 0) // 10_000
        details["cpu_max"] = f"{quota or 'max'} {host.get('CpuPeriod') or 100000}"
        return details


@pytest.fixture(scope="module")
def hardened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    yield probe(tmp_path_factory.mktemp("hardened"), PROBE)


def test_no_network_connection_can_be_opened(hardened: dict[str, str]) -> None:
    assert hardened["interfaces"] == "lo"
    assert hardened["connect_ip"].startswith("failed: OSError"), hardened["connect_ip"]
    assert hardened["connect_pypi"].startswith("failed:"), hardened["connect_pypi"]
    assert hardened["dns"].startswith("failed:"), hardened["dns"]


def test_non_root_on_a_read_only_root_with_a_writable_tmp(hardened: dict[str, str]) -> None:
    assert hardened["uid"] != "0" and hardened["gid"] != "0"
    assert "Read-only file system" in hardened["write_root"], hardened["write_root"]
    assert "Read-only file system" in hardened["write_opt"], hardened["write_opt"]
    assert hardened["write_tmp"] == "ok: /tmp/probe"


def test_no_capabilities_no_new_privileges_limits_and_init(hardened: dict[str, str]) -> None:
    assert int(hardened["cap_eff"], 16) == 0
    assert hardened["no_new_privs"] == "1"
    # The harness's seccomp profile, not Docker's default (which allows it).
    assert hardened["mincore"] == "ok: EPERM", hardened["mincore"]
    # Its own cgroup tree is masked (a red team read its memory cgroup's statistics across
    # starts): the limits are read from the engine.
    assert hardened["cgroup_entries"] == "ok: 0", hardened["cgroup_entries"]
    assert hardened["memory_max"] == str(16 << 30)
    assert hardened["pids_max"] == "4096"
    quota, period = hardened["cpu_max"].split()
    assert quota != "max" and int(quota) > 0 and int(period) > 0
    assert hardened["pid1"] in ("/sbin/docker-init", "/dev/init", "docker-init")
    assert hardened["env_names"] == "PROBE_X"
    assert hardened["manifest_relaxations"] == ""


def test_each_relaxation_takes_effect_and_is_recorded(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    relaxed = dataclasses.replace(
        PROBE, network="host", read_only_root=False, user="0:0", memory_bytes=None, pids=None
    )
    details = probe(tmp_path / "relaxed", relaxed)
    assert details["interfaces"] != "lo"
    assert details["connect_pypi"].startswith("ok:"), details["connect_pypi"]
    assert details["uid"] == "0"
    assert details["write_root"] == "ok: /probe-root"
    assert details["memory_max"] == "max" and details["pids_max"] == "max"
    assert details["manifest_relaxations"] == (
        "network: host;writable root filesystem;runs as root;no memory limit;no pids limit"
    )
    assert run_containers(engine, tmp_path / "relaxed") == []
