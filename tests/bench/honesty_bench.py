"""The price of `restart` persistence for a model-based method (`run_bench.py --only honesty`).

The first trajectories of the `paper` preset with `model-sim` (adapters/systems/model_sim.py:
a weights file read and checksummed plus a load wait at every start, time per frame and per
answer) in `restart` and in `reset`, as `--system`, as `--command` and as `--image`,
alternated (restart, reset; then reset, restart; ...). Printed per runtime: both wall times,
restart/reset, the starts of the restart run and how many of them the harness waited for
(logs/starts.json: a start it waited more than 0.1 s for, i.e. no spare was ready). Target:
restart/reset at most 1.15 for each.

By default the six runs go side by side (`APMBENCH_BENCH_HONESTY_SIDE_BY_SIDE` [1]; 0 runs
them one after another, alternated): a model's time is asleep (the accelerator's, not the
host's), so six runs leave a 2-core host mostly idle, and a restart run and its reset run
see the same load at the same moments, which alternation only approximates. The machine's
load is sampled every 5 s while they run and printed with the result. At the full setting
one after another is some four hours; side by side, the longest run.

Settings (environment, defaults of the issue that asked for it in brackets):
APMBENCH_BENCH_HONESTY_TRAJECTORIES [8], APMBENCH_BENCH_HONESTY_LOAD_S [10],
APMBENCH_BENCH_HONESTY_FRAME_MS [20], APMBENCH_BENCH_HONESTY_QUERY_MS [1000],
APMBENCH_BENCH_HONESTY_WEIGHTS_MB [64], APMBENCH_BENCH_HONESTY_RUNTIMES
[system,command,image]. The full setting pushes about 11,800 frames per trajectory at
20 ms each: about 4 minutes of frame time per trajectory and mode; on a shared 2-core
machine, run it smaller and say so.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

from paper_bench import paper_dataset

TARGET = 1.15
IMAGE = "apmbench-test/model-sim:latest"
IMAGE_PARENT = "apmbench/text-log:latest"
SITE = "/opt/apmbench/lib/python3.11/site-packages/apmbench/adapters/systems"
SERVE = """import sys
from apmbench.adapters.__main__ import main
sys.exit(main(["model-sim", "--address", sys.argv[1], "--exit-with-parent"]))
"""


def _log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _setting(name: str, default: float) -> float:
    return float(os.environ.get(f"APMBENCH_BENCH_HONESTY_{name}", default))


def build_image() -> str | None:
    """`model-sim` on the text-log image (the module copied beside text-log's), as a test
    tag; None (with the reason logged) without an engine or that image."""
    try:
        import docker

        engine = docker.from_env()
        engine.images.get(IMAGE_PARENT)
    except Exception as e:  # any engine trouble: the image row is skipped
        _log(f"honesty: no image run ({type(e).__name__}: {e})")
        return None
    source = Path(__file__).resolve().parents[2] / "adapters" / "systems" / "model_sim.py"
    dockerfile = (
        f"FROM {IMAGE_PARENT}\n"
        f"COPY model_sim.py {SITE}/model_sim.py\n"
        "ENV APMBENCH_SYSTEM=apmbench.adapters.systems.model_sim:ModelSim\n"
    )
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for name, data in (
            ("Dockerfile", dockerfile.encode()),
            ("model_sim.py", source.read_bytes()),
        ):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    context.seek(0)
    engine.images.build(
        fileobj=context, custom_context=True, tag=IMAGE, rm=True, network_mode="none"
    )
    engine.close()
    return IMAGE


def _command(runtime: str, dataset: Path, out: Path, mode: str, weights: Path) -> list[str]:
    base = [
        sys.executable, "-m", "apmbench.harness.cli", "evaluate", "--dataset", str(dataset),
        "--persistence", mode, "--out", str(out),
    ]  # fmt: skip
    if runtime == "system":
        return [*base, "--system", "model-sim", "--env", f"APMBENCH_VLM_MODEL={weights}"]
    if runtime == "command":
        command = f"{sys.executable} {weights / 'serve.py'} {{address}}"
        return [*base, "--command", command, "--env", f"APMBENCH_VLM_MODEL={weights}"]
    sim = [f"{k}={v}" for k, v in os.environ.items() if k.startswith("APMBENCH_SIM_")]
    return [
        *base, "--image", IMAGE, "--mount", f"{weights}:/weights",
        "--env", "APMBENCH_VLM_MODEL=/weights", *(x for kv in sim for x in ("--env", kv)),
    ]  # fmt: skip


class _Run:
    """One `evaluate` of the bench, started at construction; `result()` waits for it."""

    def __init__(self, runtime: str, dataset: Path, tmp: Path, mode: str, weights: Path) -> None:
        self.name = f"{runtime} {mode}"
        self.out = tmp / f"honesty-{runtime}-{mode}"
        self.log = tmp / f"honesty-{runtime}-{mode}.log"
        self.load = round(os.getloadavg()[0], 2)
        self.started = time.perf_counter()
        with self.log.open("wb") as f:
            self.proc = subprocess.Popen(
                _command(runtime, dataset, self.out, mode, weights), stdout=f, stderr=f
            )
        # Its own waiter: side by side, each run's end is taken when it ends, not when
        # result() comes to it.
        self._waiter = threading.Thread(target=self._wait, daemon=True)
        self._waiter.start()

    def _wait(self) -> None:
        self.proc.wait()
        self.ended = time.perf_counter()
        self.load_after = round(os.getloadavg()[0], 2)

    def result(self) -> dict[str, Any]:
        self._waiter.join()
        code = self.proc.returncode
        wall = round(self.ended - self.started, 1)
        if code != 0:
            raise RuntimeError(f"honesty {self.name} exited {code}:\n"
                               + self.log.read_text(errors="replace")[-3000:])  # fmt: skip
        starts = json.loads((self.out / "logs" / "starts.json").read_text())
        _log(f"honesty: {self.name} {wall} s, {starts}")
        return {"wall_s": wall, "load_before": self.load,
                "load_after": self.load_after, **starts}  # fmt: skip


class _LoadSampler:
    """The 1-minute load average every 5 s while the runs go (a thread, stopped by stop())."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(5.0):
            self.samples.append(os.getloadavg()[0])

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        s = self.samples or [os.getloadavg()[0]]
        return {"mean": round(sum(s) / len(s), 2), "max": round(max(s), 2)}


def bench_honesty(tmp: Path) -> dict[str, Any]:
    from apmbench.adapters.systems.model_sim import prepare_weights

    count = int(_setting("TRAJECTORIES", 8))
    sim = {
        "APMBENCH_SIM_LOAD_S": _setting("LOAD_S", 10),
        "APMBENCH_SIM_FRAME_MS": _setting("FRAME_MS", 20),
        "APMBENCH_SIM_QUERY_MS": _setting("QUERY_MS", 1000),
        "APMBENCH_SIM_WEIGHTS_MB": int(_setting("WEIGHTS_MB", 64)),
    }
    os.environ.update({k: f"{v:g}" if isinstance(v, float) else str(v) for k, v in sim.items()})
    runtimes = os.environ.get("APMBENCH_BENCH_HONESTY_RUNTIMES", "system,command,image")
    _log(f"honesty: {count} paper trajectories, model-sim {sim}")
    dataset = paper_dataset(tmp, count)
    weights = tmp / "weights"
    prepare_weights(weights, int(sim["APMBENCH_SIM_WEIGHTS_MB"]))
    (weights / "serve.py").write_text(SERVE)
    side_by_side = os.environ.get("APMBENCH_BENCH_HONESTY_SIDE_BY_SIDE", "1") != "0"
    rows: dict[str, Any] = {}
    chosen = []
    for runtime in runtimes.split(","):
        if runtime == "image" and build_image() is None:
            rows[runtime] = {"skipped": "no Docker engine or no apmbench/text-log image"}
        else:
            chosen.append(runtime)
    sampler = _LoadSampler()
    results: dict[str, dict[str, dict[str, Any]]] = {}
    if side_by_side:
        started = {
            runtime: {mode: _Run(runtime, dataset, tmp, mode, weights)
                      for mode in ("restart", "reset")}
            for runtime in chosen
        }  # fmt: skip
        try:
            results = {r: {m: run.result() for m, run in modes.items()}
                       for r, modes in started.items()}  # fmt: skip
        finally:  # one run failed: the others are not left running
            for modes in started.values():
                for run in modes.values():
                    if run.proc.poll() is None:
                        run.proc.terminate()
                        run.proc.wait()
    else:
        for number, runtime in enumerate(chosen):
            order = ("restart", "reset") if number % 2 == 0 else ("reset", "restart")
            results[runtime] = {m: _Run(runtime, dataset, tmp, m, weights).result() for m in order}
    load = sampler.stop()
    for runtime, runs in results.items():
        ratio = runs["restart"]["wall_s"] / runs["reset"]["wall_s"]
        rows[runtime] = {
            "restart_s": runs["restart"]["wall_s"],
            "reset_s": runs["reset"]["wall_s"],
            "restart_over_reset": round(ratio, 3),
            "restart_starts": runs["restart"]["starts"],
            "restart_waited": runs["restart"]["waited"],
            "restart_waited_s": runs["restart"]["waited_s"],
            "cold_start_s": runs["restart"]["cold_start_s"],
            "reset_starts": runs["reset"]["starts"],
            "runs": runs,
        }
    ratios = [r["restart_over_reset"] for r in rows.values() if "restart_over_reset" in r]
    return {
        "trajectories": count,
        "model_sim": sim,
        "side_by_side": side_by_side,
        "load_average_during": load,
        **rows,
        "target": f"restart / reset <= {TARGET} for each runtime",
        "met": bool(ratios) and len(ratios) == len(rows) and max(ratios) <= TARGET,
    }
