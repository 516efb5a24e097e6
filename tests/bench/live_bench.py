"""`make bench`'s live section: does the harness keep the clock?

`evaluate --live --speed 1` with the `null` system on a bench dataset of two 20 s sessions,
at 1 and at 30 frames per second, against the offline replay of the same dataset at the
same frame rate (the baseline, measured in the same run). For each: the harness's pacing
error (how late it offered items against the clock: p50, p99, worst; report.json's
`live.pacing_ms`), the frames dropped, and the CPU seconds spent per second of video by
the evaluate process tree (the harness, its frame workers and the `null` server: an upper
bound on the harness's own). Target: the p99 pacing error under 5 ms at 30 fps.

    .venv/bin/python tests/bench/run_bench.py --only live
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SESSION_S = 20
P99_TARGET_MS = 5.0


def _evaluate(cli: list[str], dataset: Path, out: Path, fps: int, live: bool) -> dict[str, Any]:
    cmd = [
        *cli, "evaluate", "--dataset", str(dataset), "--system", "null",
        "--persistence", "trust", "--fps", str(fps), "--out", str(out),
        *(["--live", "--speed", "1"] if live else []),
    ]  # fmt: skip
    log_path = out.parent / f"{out.name}.log"
    started = time.perf_counter()
    with log_path.open("wb") as log_file:
        proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT)
        # wait4: the CPU of the process and every child it reaped (the server, the workers).
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        tail = log_path.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"evaluate {'--live ' if live else ''}--fps {fps} failed:\n{tail}")
    report = json.loads((out / "report.json").read_text())
    video_s = 2 * SESSION_S
    cpu = usage.ru_utime + usage.ru_stime
    result: dict[str, Any] = {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "cpu_s_per_video_s": round(cpu / video_s, 4),
    }
    if live:
        played = report["live"]
        result.update(
            pacing_ms=played["pacing_ms"],
            frames_offered=played["frames_offered"],
            frames_dropped=played["frames_dropped"],
            achieved_fps_mean=played["achieved_fps_mean"],
        )
    return result


def bench_live(
    tmp: Path,
    cli: list[str],
    build_dataset: Callable[[Path, int], None],
    log: Callable[[str], None],
) -> dict[str, Any]:
    dataset = tmp / "live-dataset"
    build_dataset(dataset, SESSION_S)
    out: dict[str, Any] = {"session_s": SESSION_S, "sessions": 2}
    for fps in (1, 30):
        log(f"live: offline replay at {fps} fps (the baseline)")
        offline = _evaluate(cli, dataset, tmp / f"offline-{fps}", fps, live=False)
        log(f"live: --live --speed 1 at {fps} fps ({2 * SESSION_S} s of video)")
        live = _evaluate(cli, dataset, tmp / f"live-{fps}", fps, live=True)
        live["cpu_ratio_to_offline"] = (
            round(live["cpu_s"] / offline["cpu_s"], 3) if offline["cpu_s"] else None
        )
        out[f"fps_{fps}"] = {"offline": offline, "live": live}
    p99 = out["fps_30"]["live"]["pacing_ms"]["p99_ms"]
    out["target"] = f"p99 pacing error at 30 fps < {P99_TARGET_MS} ms"
    out["met"] = p99 < P99_TARGET_MS
    return out


if __name__ == "__main__":
    import tempfile

    sys.path.insert(0, str(Path(__file__).parent))
    from run_bench import _cli, build_dataset, log

    with tempfile.TemporaryDirectory(prefix="apmb-live") as tmp:
        print(json.dumps(bench_live(Path(tmp), _cli(), build_dataset, log), indent=2))
