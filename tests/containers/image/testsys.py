"""Entry point of the test image: serve the system named by $TESTSYS.

$TESTSYS is a test system below ("probe", "wrong-version", "hang"), a
"module:Class" (e.g. "helpers.systems:SlowIngest"), a registered name, or
"no-health": a gRPC server with no services at all, not even health.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path

import grpc
from helpers.systems import JsonMemory

from apmbench.adapters.sdk import Capabilities, Frame, FrameEncoding, Query, SystemInfo, serve
from apmbench.adapters.systems import load_system


def _try(fn: Callable[[], object]) -> str:
    try:
        return f"ok: {fn()}"
    except Exception as e:
        return f"failed: {type(e).__name__}: {e}"


def _connect(host: str, port: int) -> str:
    with socket.create_connection((host, port), timeout=3) as s:
        return str(s.getpeername())


def _write(path: str) -> str:
    Path(path).write_text("x")
    return path


def _status(field: str) -> str:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def _read(*candidates: str) -> str:
    for path in candidates:
        if os.path.exists(path):
            return Path(path).read_text().strip()
    return "?"


def _cgroup_limits() -> dict[str, str]:
    """memory, pids and cpu limits as cgroup v2 writes them ("max" = none), from v2 or v1."""
    cg = "/sys/fs/cgroup"
    memory = _read(f"{cg}/memory.max", f"{cg}/memory/memory.limit_in_bytes")
    if memory.isdigit() and int(memory) >= 1 << 62:  # v1's "unlimited"
        memory = "max"
    cpu = _read(f"{cg}/cpu.max")
    if cpu == "?":
        quota = _read(f"{cg}/cpu/cpu.cfs_quota_us", f"{cg}/cpu,cpuacct/cpu.cfs_quota_us")
        period = _read(f"{cg}/cpu/cpu.cfs_period_us", f"{cg}/cpu,cpuacct/cpu.cfs_period_us")
        cpu = f"{'max' if quota == '-1' else quota} {period}"
    pids = _read(f"{cg}/pids.max", f"{cg}/pids/pids.max")
    return {"memory_max": memory, "cpu_max": cpu, "pids_max": pids}


def _mincore() -> str:
    """Whether mincore (page-cache residency, the relay the harness's seccomp profile
    closes) may be called at all: "ok", or the errno's name."""
    import ctypes
    import errno

    libc = ctypes.CDLL(None, use_errno=True)
    buffer = ctypes.create_string_buffer(8192)
    page = (ctypes.addressof(buffer) + 4095) & ~4095
    vec = ctypes.create_string_buffer(1)
    ret = libc.mincore(ctypes.c_void_p(page), ctypes.c_size_t(4096), vec)
    code = ctypes.get_errno()
    return "ok" if ret == 0 else errno.errorcode.get(code, str(code))


def probe() -> dict[str, str]:
    """What the container may do, tried from inside."""
    return {
        "uid": str(os.getuid()),
        "gid": str(os.getgid()),
        "interfaces": ",".join(sorted(name for _, name in socket.if_nameindex())),
        "connect_ip": _try(lambda: _connect("1.1.1.1", 443)),
        "connect_pypi": _try(lambda: _connect("pypi.org", 443)),
        "dns": _try(lambda: socket.getaddrinfo("pypi.org", 443)[0][4]),
        "write_root": _try(lambda: _write("/probe-root")),
        "write_opt": _try(lambda: _write("/opt/apmbench/probe")),
        "write_tmp": _try(lambda: _write("/tmp/probe")),
        "cap_eff": _status("CapEff"),
        "no_new_privs": _status("NoNewPrivs"),
        "mincore": _try(_mincore),
        **_cgroup_limits(),
        "cgroup_entries": _try(lambda: str(len(os.listdir("/sys/fs/cgroup")))),
        "pid1": Path("/proc/1/cmdline").read_bytes().split(b"\0")[0].decode(),
        "env_names": ",".join(sorted(k for k in os.environ if k.startswith("PROBE_"))),
    }


class Probe(JsonMemory):
    """Reports `probe()` in its Describe details."""

    name = "probe"

    def describe(self) -> SystemInfo:
        base = super().describe()
        return SystemInfo(base.name, base.version, base.capabilities, details=probe())


class WrongVersion(JsonMemory):
    """Claims protocol 2.0: the harness must refuse it."""

    name = "wrong-version"

    def describe(self) -> SystemInfo:
        caps = Capabilities(frame_encodings=(FrameEncoding.JPEG,))
        return SystemInfo(self.name, "1", caps, protocol_version="2.0")


class Hang(JsonMemory):
    """Never answers a query in the trajectory named by $APMBENCH_HANG_TRAJECTORY."""

    name = "hang"
    trajectory = ""

    def reset(self, trajectory_id: str) -> None:
        super().reset(trajectory_id)
        self.trajectory = trajectory_id

    def query(self, query: Query) -> Iterator[str]:
        if self.trajectory == os.environ.get("APMBENCH_HANG_TRAJECTORY"):
            print(f"hanging in a query of {self.trajectory}", flush=True)
            time.sleep(3600)
        yield json.dumps(self.answer(query))


class Hog(Hang):
    """Allocates memory without end in the trajectory named by $APMBENCH_HOG_TRAJECTORY."""

    name = "hog"

    def ingest_frame(self, frame: Frame) -> None:
        if self.trajectory == os.environ.get("APMBENCH_HOG_TRAJECTORY"):
            print(f"allocating in {self.trajectory}", flush=True)
            blocks = []
            while True:
                blocks.append(bytearray(64 << 20))  # written, so really resident
        super().ingest_frame(frame)


SYSTEMS = {"probe": Probe, "wrong-version": WrongVersion, "hang": Hang, "hog": Hog}


def no_health(address: str) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_insecure_port(address)
    server.start()
    print(f"serving nothing at {address}", flush=True)
    threading.Event().wait()


def main() -> None:
    name = os.environ.get("TESTSYS", "probe")
    address = os.environ["APMBENCH_ADDRESS"]
    if name == "no-health":
        no_health(address)
        return
    factory = SYSTEMS.get(name)
    system = factory() if factory is not None else load_system(name)
    print(f"serving {name} at {address}", flush=True)
    serve(system, address)


if __name__ == "__main__":
    main()
