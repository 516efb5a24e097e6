"""The `template` section of `make bench`: fresh sandboxed starts against template starts
(`--start template`), alternated (fresh, template, template, fresh) so that a load that
changes during the run shifts both sides alike.

- restarts: RESTARTS restarts of a sandboxed `null` process runtime with spares, the CPU
  per restart (the harness, bubblewrap or the fork, the interpreter or not, imports,
  the server, the old one's stop) and the wall time per restart;
- tiny: wall time and CPU of `evaluate --synthetic tiny --system null`;
- paper: the same for the first APMBENCH_BENCH_PAPER_TRAJECTORIES (default 2) paper
  trajectories (paper_bench.py's dataset).

CPU is what a cgroup holding the measured process tree used (cpuacct.usage, v1, or
cpu.stat's usage_usec, v2) where the harness may make one: exact however loaded the
machine. Elsewhere it is the machine's busy CPU from /proc/stat over the measurement,
which counts every other process too (`cpu_source` says which). Target: a template
start costs at most half a fresh start's CPU (`restart_cpu_ratio` <= 0.5).
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

RESTARTS = 20
CPU_RATIO_TARGET = 0.5
ORDER = ("fresh", "template", "template", "fresh")
V1 = Path("/sys/fs/cgroup/cpuacct")
V2 = Path("/sys/fs/cgroup")

RESTART_SCRIPT = r"""
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from template_bench import cpu_s
from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.process import sandboxed_process
mode, n, group = sys.argv[1], int(sys.argv[2]), sys.argv[4]
runtime = sandboxed_process("null", Path(sys.argv[5]) / "system.log", Deadlines(), 60,
                            sandbox=True, spare=True, start=mode)
with runtime:
    runtime.start().describe()
    runtime.restart().describe()  # the spares are up
    cpu, wall = cpu_s(group), time.perf_counter()
    for _ in range(n):
        runtime.restart().describe()
    wall, cpu = time.perf_counter() - wall, cpu_s(group) - cpu
print(json.dumps({"cpu_s": cpu, "wall_s": wall}))
"""


def _log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def make_group() -> str:
    """A fresh cgroup for one measured process tree ("" where none can be made here)."""
    name = f"apmbench-bench-{uuid.uuid4().hex[:8]}"
    for root in (V1, V2):
        if not (root / "cgroup.procs").exists():
            continue
        path = root / name
        try:
            path.mkdir()
        except OSError:
            continue
        if (path / "cpuacct.usage").exists() or (path / "cpu.stat").exists():
            return str(path)
        path.rmdir()
    return ""


def drop_group(group: str) -> None:
    if group:
        with contextlib.suppress(OSError):
            os.rmdir(group)


def cpu_s(group: str) -> float:
    """CPU seconds the group has used so far; without one, the machine's busy seconds."""
    if group:
        usage = Path(group, "cpuacct.usage")
        if usage.exists():
            return int(usage.read_text()) / 1e9
        for line in Path(group, "cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec"):
                return int(line.split()[1]) / 1e6
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _in_group(group: str, argv: list[str]) -> list[str]:
    """`argv`, started inside `group` (the shell joins it, then becomes the command)."""
    if not group:
        return argv
    return ["sh", "-c", f'echo $$ > "{group}/cgroup.procs" && exec "$@"', "sh", *argv]


def _restarts(mode: str, tmp: Path) -> dict[str, float]:
    group = make_group()
    here = str(Path(__file__).resolve().parent)
    out = tmp / f"restarts-{mode}-{uuid.uuid4().hex[:6]}"
    out.mkdir()
    try:
        argv = [sys.executable, "-c", RESTART_SCRIPT, mode, str(RESTARTS), here, group, str(out)]
        done = subprocess.run(
            _in_group(group, argv), capture_output=True, text=True, check=True, timeout=600
        )
    finally:
        drop_group(group)
    got: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return {"cpu_ms": got["cpu_s"] / RESTARTS * 1000, "wall_ms": got["wall_s"] / RESTARTS * 1000}


def _evaluate(mode: str, dataset: list[str], tmp: Path) -> dict[str, float]:
    group = make_group()
    out = tmp / f"run-{mode}-{uuid.uuid4().hex[:6]}"
    argv = [
        sys.executable, "-m", "apmbench.harness.cli", "evaluate", *dataset, "--system", "null",
        "--start", mode, "--out", str(out),
    ]  # fmt: skip
    try:
        before, started = cpu_s(group), time.perf_counter()
        done = subprocess.run(_in_group(group, argv), capture_output=True, text=True, timeout=3600)
        wall, cpu = time.perf_counter() - started, cpu_s(group) - before
    finally:
        drop_group(group)
    if done.returncode != 0:
        raise RuntimeError(
            f"evaluate --start {mode} exited {done.returncode}:\n{done.stderr[-3000:]}"
        )
    starts = json.loads((out / "logs" / "starts.json").read_text())["starts"]
    return {"wall_s": wall, "cpu_s": cpu, "starts": starts}


def _alternated(measure: Any) -> dict[str, Any]:
    samples: dict[str, list[dict[str, float]]] = {"fresh": [], "template": []}
    for mode in ORDER:
        samples[mode].append(measure(mode))
    keys = samples["fresh"][0].keys()
    best = {
        mode: {k: round(min(s[k] for s in runs), 3) for k in keys} for mode, runs in samples.items()
    }
    mean = {
        mode: {k: round(statistics.mean(s[k] for s in runs), 3) for k in keys}
        for mode, runs in samples.items()
    }
    ratios = {
        k: round(mean["template"][k] / mean["fresh"][k], 3)
        for k in keys
        if k != "starts" and mean["fresh"][k]
    }
    return {"best": best, "mean": mean, "template_over_fresh": ratios}


def bench_template(tmp: Path) -> dict[str, Any]:
    from paper_bench import paper_dataset

    probe = make_group()
    source = "cgroup" if probe else "/proc/stat (whole machine)"
    drop_group(probe)
    _log(f"template: {RESTARTS} restarts per run, {ORDER}")
    restarts = _alternated(lambda mode: _restarts(mode, tmp))
    _log("template: evaluate --synthetic tiny --system null")
    from apmbench.harness.suites import datasets, get_suite

    made = datasets.synthetic(
        get_suite("apmbench"), "tiny", 1
    )  # generated (or cached) before timing
    tiny = _alternated(lambda mode: _evaluate(mode, ["--dataset", str(made)], tmp))
    k = int(os.environ.get("APMBENCH_BENCH_PAPER_TRAJECTORIES", "2"))
    _log(f"template: the first {k} paper trajectories")
    dataset = paper_dataset(tmp, k)
    paper = _alternated(lambda mode: _evaluate(mode, ["--dataset", str(dataset)], tmp))
    ratio = restarts["template_over_fresh"]["cpu_ms"]
    return {
        "restarts": restarts,
        "tiny": tiny,
        "paper": {**paper, "trajectories": k},
        "restart_cpu_ratio": ratio,
        "cpu_source": source,
        "order": list(ORDER),
        "load_1m": round(os.getloadavg()[0], 2),
        "target": f"restart_cpu_ratio <= {CPU_RATIO_TARGET}",
        "met": ratio <= CPU_RATIO_TARGET,
    }


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="apmb", dir="/tmp") as tmp:
        print(json.dumps(bench_template(Path(tmp)), indent=2))
