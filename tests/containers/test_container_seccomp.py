"""Two containers of one image share kernel state no capability guards: the page cache of
their common lower layer (mincore reports residency of a file the container may write, as
an image's 0666 file is), record locks (F_OFD_GETLK) and file-access events. A red-team
container relayed memory across restarts that way at full score. Docker's default
profile allows all of it; the harness's profile (harness/runtimes/seccomp.py, the same
filter as the process sandbox) refuses it. Both halves run, in hardened containers as
the runtime starts them (no network, read-only root, no capabilities, no-new-privileges).
"""

from __future__ import annotations

import json
from typing import Any

import docker

from apmbench.harness.build.images import BASE
from apmbench.harness.runtimes import seccomp

PROBE = r"""
import ctypes, errno, fcntl, json, os, struct
libc = ctypes.CDLL(None, use_errno=True)
out = {}
path = "/tmp/shared.bin"
with open(path, "wb") as f:
    f.write(bytes(8192))
f = open(path, "r+b")
buffer = ctypes.create_string_buffer(8192)
page = (ctypes.addressof(buffer) + 4095) & ~4095
vec = ctypes.create_string_buffer(1)
ret = libc.mincore(ctypes.c_void_p(page), ctypes.c_size_t(4096), vec)
out["mincore"] = "ok" if ret == 0 else errno.errorcode[ctypes.get_errno()]
try:
    fcntl.fcntl(f.fileno(), fcntl.F_OFD_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, 0, 1, 0))
    out["getlk"] = "ok"
except OSError as e:
    out["getlk"] = errno.errorcode[e.errno]
try:
    os.preadv(f.fileno(), [bytearray(8)], 0, os.RWF_NOWAIT)
    out["nowait"] = "ok"
except OSError as e:
    out["nowait"] = errno.errorcode[e.errno]
ret = libc.inotify_init1(0)
out["inotify"] = "ok" if ret >= 0 else errno.errorcode[ctypes.get_errno()]
fcntl.flock(f.fileno(), fcntl.LOCK_EX)
out["flock"] = "ok"
import socket
for name, family, kind in (("inet", socket.AF_INET, socket.SOCK_DGRAM),
                           ("inet6", socket.AF_INET6, socket.SOCK_DGRAM),
                           ("packet", 17, socket.SOCK_RAW), ("unix", socket.AF_UNIX, socket.SOCK_DGRAM)):
    try:
        socket.socket(family, kind).close()
        out[name] = "ok"
    except OSError as e:
        out[name] = errno.errorcode[e.errno]
try:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.getsockopt(socket.SOL_SOCKET, 57, 8)
    out["cookie"] = "ok"
except OSError as e:
    out["cookie"] = errno.errorcode[e.errno]
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4).close()
    out["sock_diag"] = "ok"
except OSError as e:
    out["sock_diag"] = errno.errorcode[e.errno]
try:
    os.close(os.pidfd_open(os.getpid()))
    out["pidfd"] = "ok"
except OSError as e:
    out["pidfd"] = errno.errorcode[e.errno]
print(json.dumps(out))
"""


def _probe(
    engine: docker.DockerClient, image_id: str, profile: bool, loopback: bool = False
) -> dict[str, Any]:
    options = ["no-new-privileges"]
    if profile:
        options.append(f"seccomp={seccomp.docker_profile(network=loopback)}")
    output = engine.containers.run(
        image_id,
        ["python3", "-c", PROBE],
        entrypoint=[],
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": "rw,nosuid,nodev,size=1m,mode=1777"},
        user="10001:10001",
        cap_drop=["ALL"],
        security_opt=options,
        remove=True,
    )
    seen: dict[str, Any] = json.loads(output.decode().strip().splitlines()[-1])
    return seen


def test_dockers_default_profile_leaves_the_channels_open(
    engine: docker.DockerClient, images: dict[str, str]
) -> None:
    seen = _probe(engine, images[BASE], profile=False)
    assert seen["mincore"] == "ok" and seen["getlk"] == "ok" and seen["inotify"] == "ok"
    assert seen["inet"] == "ok"  # on network none: the container's own loopback
    assert seen["cookie"] == "ok" and seen["sock_diag"] == "ok" and seen["pidfd"] == "ok"


def test_the_harness_profile_closes_them(
    engine: docker.DockerClient, images: dict[str, str]
) -> None:
    seen = _probe(engine, images[BASE], profile=True)
    assert seen == {
        "mincore": "EPERM", "getlk": "EPERM", "nowait": "EPERM", "inotify": "EPERM",
        "flock": "ok",
        # No IP socket on no network: loopback packets move host-wide counters that outlive
        # the container (/proc/self/net/softnet_stat; red team 9: 32-40 bits a restart).
        "inet": "EAFNOSUPPORT", "inet6": "EAFNOSUPPORT", "packet": "EAFNOSUPPORT", "unix": "ok",
        # Socket cookies: one counter for the whole host, a store of any size.
        "cookie": "ENOPROTOOPT", "sock_diag": "EPROTONOSUPPORT", "pidfd": "ENOSYS",
    }  # fmt: skip


def test_allow_loopback_gives_ip_sockets_back(
    engine: docker.DockerClient, images: dict[str, str]
) -> None:
    """`--allow-loopback` (or a network): the profile without the socket rule."""
    seen = _probe(engine, images[BASE], profile=True, loopback=True)
    assert seen["inet"] == "ok" and seen["inet6"] == "ok" and seen["mincore"] == "EPERM"
