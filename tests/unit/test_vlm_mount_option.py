"""`evaluate --image ... --mount HOST:CONTAINER[:ro|rw]`: how a model directory reaches a container."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from apmbench.harness.cli import main
from apmbench.harness.errors import ConfigError
from apmbench.harness.runtimes.docker.settings import BindMount, ContainerSettings


def test_a_mount_is_read_only_unless_rw_and_is_recorded(tmp_path: Path) -> None:
    ro = BindMount.parse(f"{tmp_path}:/models/vlm")
    rw = BindMount.parse(f"{tmp_path}/.:/scratch:rw")
    assert (ro.host, ro.container, ro.read_only) == (str(tmp_path), "/models/vlm", True)
    assert rw.host == str(tmp_path) and not rw.read_only
    settings = ContainerSettings(mounts=(ro, rw))
    record = settings.record()
    assert record["mounts"] == [f"{tmp_path}:/models/vlm:ro", f"{tmp_path}:/scratch:rw"]
    # Only a writable mount gives up a default.
    assert record["relaxations"] == [f"writable mount {tmp_path}:/scratch:rw"]


@pytest.mark.parametrize(
    "spec,message",
    [
        ("{tmp}", "give HOST_PATH:CONTAINER_PATH"),
        ("{tmp}:/m:rx", "give HOST_PATH:CONTAINER_PATH"),
        ("{tmp}/missing:/m", "does not exist on this host"),
        ("{tmp}:relative", "must be absolute"),
        ("{tmp}:/", "must be absolute, and neither /"),
        ("{tmp}:/run/apmbench", "the socket directory"),
        ("{tmp}:/run/apmbench/models", "the socket directory"),
    ],
)
def test_a_bad_mount_says_what_to_fix(tmp_path: Path, spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        BindMount.parse(spec.format(tmp=tmp_path))


def test_mount_without_an_image_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["evaluate", "--system", "null", "--mount", f"{tmp_path}:/m"])
    assert (
        result.exit_code == 2 and "--mount" in result.output and "only for --image" in result.output
    )
