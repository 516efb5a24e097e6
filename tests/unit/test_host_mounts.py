"""Which host paths a box may bind (harness/runtimes/host_mounts.py), on a mount table in
proc(5)'s mountinfo format: never a kernel file system, never a whole host tmpfs."""

from __future__ import annotations

from pathlib import Path

import pytest

from apmbench.harness.errors import ConfigError
from apmbench.harness.runtimes import host_mounts

TABLE = """\
22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:21 / /proc rw,nosuid - proc proc rw
24 22 0:22 / /sys rw,nosuid - sysfs sysfs rw
25 24 0:23 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755
26 25 0:24 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
27 22 0:5 / /dev rw - devtmpfs udev rw
28 27 0:25 / /dev/shm rw - tmpfs tmpfs rw
29 22 0:26 / /run rw - tmpfs tmpfs rw
30 29 0:4 net:[4026532] /run/docker/netns/default rw - nsfs nsfs rw
31 22 0:27 / /tmp rw - tmpfs tmpfs rw
32 22 253:2 / /srv/models\\040old rw - ext4 /dev/vdb rw
33 22 253:3 / /data rw - ext4 /dev/vdc rw
34 33 0:28 / /data/scratch rw - tmpfs tmpfs rw
"""


def refused(path: str) -> str | None:
    try:
        host_mounts.refuse_pseudo_filesystems({Path(path): "APMBENCH_VLM_MODEL"}, TABLE)
    except ConfigError as e:
        return str(e)
    return None


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/proc/self", "lies on /proc (proc)"),
        ("/sys", "is a sysfs mount"),
        ("/sys/fs/cgroup", "is a tmpfs mount"),
        ("/sys/fs/cgroup/memory/system.slice", "lies on /sys/fs/cgroup/memory (cgroup)"),
        ("/dev", "is a devtmpfs mount"),
        ("/dev/shm", "is a tmpfs mount"),
        ("/run", "is a tmpfs mount"),
        # An ordinary disk with a host tmpfs mounted inside it: the bind would bring it.
        ("/data", "has /data/scratch (tmpfs) mounted below it"),
    ],
)
def test_a_kernel_file_system_or_a_whole_tmpfs_is_refused_naming_path_and_setting(
    path: str, why: str
) -> None:
    said = refused(path)
    assert said is not None and said.startswith(f"APMBENCH_VLM_MODEL names {path}, which "), said
    assert why in said, said


@pytest.mark.parametrize(
    "path", ["/srv/models old/qwen", "/tmp/pytest-1/weights", "/data/models", "/dev/shm/x"]
)
def test_ordinary_directories_and_directories_inside_a_tmpfs_are_bound(path: str) -> None:
    assert refused(path) is None


def test_escaped_mount_points_are_read_as_the_kernel_writes_them() -> None:
    points = {m.point for m in host_mounts.mounts(TABLE)}
    assert Path("/srv/models old") in points and Path("/run/docker/netns/default") in points


def test_this_hosts_own_table_refuses_its_proc_and_sys() -> None:
    for path in ("/proc", "/sys"):
        with pytest.raises(ConfigError, match=f"names {path}, which"):
            host_mounts.refuse_pseudo_filesystems({Path(path): "--command's path"})
