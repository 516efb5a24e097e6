"""The `startup` section of `make bench`: what a method server pays before it serves.

- import_ms: `import apmbench.adapters.sdk` as `python -X importtime` reports it
  (the cumulative time of that row), median of IMPORT_RUNS fresh interpreters
  (target: under IMPORT_TARGET_MS).
- process_serving_ms: `python -m apmbench.adapters null` started to health SERVING
  on a Unix socket, median of SERVING_RUNS.
- container_serving_ms: `apmbench/null` (from `make images`) started with the
  harness's confinement (no network, --init, a uid it does not choose) to
  SERVING, median of SERVING_RUNS, with the image's size; skipped without an
  engine or the image.
- restart_cpu_ms: the CPU the whole machine spends per `restart` of a sandboxed
  `null` process runtime (the harness, bubblewrap, the new interpreter, its imports
  and server, the stop of the old one), over RESTARTS restarts with spares, from
  /proc/stat; and the harness's own share. A paper-shaped trajectory restarts the
  system about 32 times in `restart` mode: on 2 cores this is the dry run's largest
  cost (docs/performance.md, "Cost model").

Machines under load stretch every figure alike; `load_1m` says how loaded this one was.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from apmbench.harness.protocol.client import SystemClient

IMPORT_RUNS = 9
SERVING_RUNS = 5
IMPORT_TARGET_MS = 100.0
RESTARTS = 20
NULL_IMAGE = "apmbench/null:latest"
_ROW = re.compile(r"import time:\s+\d+ \|\s+(\d+) \| apmbench\.adapters\.sdk$")


def import_ms() -> float:
    """One fresh interpreter's cumulative import time of apmbench.adapters.sdk, in ms."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import apmbench.adapters.sdk"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    )
    for line in out.stderr.splitlines():
        if match := _ROW.match(line.strip()):
            return int(match.group(1)) / 1000
    raise RuntimeError(f"no apmbench.adapters.sdk row in -X importtime:\n{out.stderr[-2000:]}")


def process_serving_ms(tmp: Path) -> float:
    sock = tmp / "startup.sock"
    sock.unlink(missing_ok=True)
    address = f"unix:{sock}"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "apmbench.adapters", "null", "--address", address],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd="/",
    )
    try:
        with SystemClient(address) as client:
            client.wait_serving(60, lambda: proc.poll() is None)
        return (time.perf_counter() - started) * 1000
    finally:
        proc.terminate()
        proc.wait(10)


def container_serving(tmp: Path) -> dict[str, Any]:
    try:
        import docker
        import docker.errors

        engine = docker.from_env()
        image = engine.images.get(NULL_IMAGE)
    except Exception as e:  # no engine, no image: report why, measure the rest
        return {"skipped": f"{type(e).__name__}: {e}"}
    samples = []
    for i in range(SERVING_RUNS):
        sockdir = Path(tempfile.mkdtemp(prefix=f"startup{i}", dir=tmp))
        sockdir.chmod(0o777)  # the container's uid is not ours
        started = time.perf_counter()
        container = engine.containers.run(
            NULL_IMAGE,
            detach=True,
            init=True,
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": ""},
            user=f"{os.getuid() or 10001}",
            volumes={str(sockdir): {"bind": "/run/apmbench", "mode": "rw"}},
        )
        try:
            with SystemClient(f"unix:{sockdir / 'sock'}") as client:
                client.wait_serving(60)
            samples.append((time.perf_counter() - started) * 1000)
        finally:
            container.remove(force=True)
    return {
        "image": NULL_IMAGE,
        "size_mb": round(image.attrs["Size"] / 1e6),
        "median_ms": round(statistics.median(samples), 1),
        "samples_ms": [round(s, 1) for s in samples],
    }


def _busy_s() -> float:
    """Seconds of CPU the whole machine has spent, all cores, all processes."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def restart_cpu(tmp: Path) -> dict[str, Any]:
    import resource

    from apmbench.harness.protocol.client import Deadlines
    from apmbench.harness.runtimes.process import sandboxed_process

    runtime = sandboxed_process(
        "null", tmp / "restart" / "system.log", Deadlines(), 30, sandbox=True, spare=True
    )
    with runtime:
        runtime.start().describe()
        busy, own = _busy_s(), resource.getrusage(resource.RUSAGE_SELF)
        started = time.perf_counter()
        for _ in range(RESTARTS):
            runtime.restart().describe()
        wall = time.perf_counter() - started
        machine = _busy_s() - busy
        mine = resource.getrusage(resource.RUSAGE_SELF)
    harness = (mine.ru_utime + mine.ru_stime) - (own.ru_utime + own.ru_stime)
    return {
        "restart_cpu_ms": round(machine / RESTARTS * 1000, 1),
        "restart_harness_cpu_ms": round(harness / RESTARTS * 1000, 1),
        "restart_wall_ms": round(wall / RESTARTS * 1000, 1),
        "restarts": RESTARTS,
    }


def bench_startup(tmp: Path) -> dict[str, Any]:
    imports = [import_ms() for _ in range(IMPORT_RUNS)]
    serving = [process_serving_ms(tmp) for _ in range(SERVING_RUNS)]
    median_import = statistics.median(imports)
    return {
        "import_ms": round(median_import, 1),
        "import_samples_ms": [round(s, 1) for s in imports],
        "process_serving_ms": round(statistics.median(serving), 1),
        **restart_cpu(tmp),
        "container_serving": container_serving(tmp),
        "load_1m": round(os.getloadavg()[0], 2),
        "target": f"import_ms < {IMPORT_TARGET_MS}",
        "met": median_import < IMPORT_TARGET_MS,
        "note": f"medians of {IMPORT_RUNS} imports and {SERVING_RUNS} starts to SERVING",
    }


if __name__ == "__main__":
    import json

    with tempfile.TemporaryDirectory(prefix="apmb", dir="/tmp") as tmp:
        print(json.dumps(bench_startup(Path(tmp)), indent=2))
