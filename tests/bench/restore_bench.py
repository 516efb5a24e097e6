"""The `restore` section of `make bench`: a start that loads against one that restores.

For each system, alternated (fresh, snapshot, snapshot, fresh) so that a load that changes
during the run shifts both sides alike, RESTARTS restarts of:

- fresh: a sandboxed `--system` in bubblewrap with no spare (`--no-spare`: every restart
  waits for the system's whole load, the honest shared-kernel mode);
- snapshot: `--start snapshot`, every restart a gVisor restore of the snapshot taken at
  the loaded point (harness/runtimes/snapshot.py).

Target: the stand-in's fresh restart takes at least TARGET_RATIO times its restored one.

The systems: `null`, `text-log`, and `model-sim` standing in for a real method whose every
start loads for LOAD_S seconds (a weights file read and checksummed, then a wait). Printed:
wall seconds per restart on each side and their ratio, the snapshot's first load,
checkpoint time and image bytes. Needs root and runsc; a section that cannot run says why.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESTARTS = 5
LOAD_S = 20.0
ORDER = ("fresh", "snapshot", "snapshot", "fresh")
TARGET_RATIO = 10.0


def _log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def _systems(work: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    from apmbench.adapters.systems.model_sim import prepare_weights

    weights = work / "weights"
    prepare_weights(weights, 8)
    sim = (
        f"APMBENCH_VLM_MODEL={weights}",
        "APMBENCH_SIM_WEIGHTS_MB=8",
        f"APMBENCH_SIM_LOAD_S={LOAD_S:g}",
    )
    return {"null": ("null", ()), "text-log": ("text-log", ()), "model-sim-20s": ("model-sim", sim)}


def _restarts(mode: str, system: str, env: tuple[str, ...], work: Path) -> dict[str, Any]:
    from apmbench.harness.protocol.client import Deadlines
    from apmbench.harness.runtimes.process import sandboxed_process, served_target, snapshot_process

    log = work / f"{mode}-{system}-{time.monotonic_ns()}" / "system.log"
    target = served_target(system)
    if mode == "snapshot":
        runtime = snapshot_process(target, log, Deadlines(), 300, sandbox=True, env=env)
    else:
        runtime = sandboxed_process(target, log, Deadlines(), 300, sandbox=True, env=env)
    with runtime:
        first = time.perf_counter()
        runtime.start().describe()
        first_s = time.perf_counter() - first
        each = []
        for _ in range(RESTARTS):
            began = time.perf_counter()
            runtime.restart().describe()
            each.append(time.perf_counter() - began)
    out: dict[str, Any] = {"first_start_s": round(first_s, 3), "restart_s": each}
    if mode == "snapshot":
        measured = json.loads((log.parent / "starts.json").read_text())
        out.update(
            load_s=measured["load_s"],
            checkpoint_s=measured["checkpoint_s"],
            image_bytes=measured["image_bytes"],
        )
    return out


def restore_section() -> dict[str, Any]:
    if shutil.which("runsc") is None or os.geteuid() != 0:
        return {"met": False, "skipped": "needs root and gVisor's runsc (apt-get install -y runsc)"}
    work = Path(tempfile.mkdtemp(prefix="apm-restore-bench-"))
    results: dict[str, Any] = {}
    try:
        for name, (system, env) in _systems(work).items():
            sides: dict[str, list[dict[str, Any]]] = {"fresh": [], "snapshot": []}
            for mode in ORDER:
                _log(f"restore: {name}, {mode}")
                sides[mode].append(_restarts(mode, system, env, work))
            fresh = statistics.median(s for run in sides["fresh"] for s in run["restart_s"])
            snap = statistics.median(s for run in sides["snapshot"] for s in run["restart_s"])
            last = sides["snapshot"][-1]
            results[name] = {
                "fresh_restart_s": round(fresh, 3),
                "snapshot_restart_s": round(snap, 3),
                "fresh_over_snapshot": round(fresh / snap, 2),
                "snapshot_load_s": round(last["load_s"], 3),
                "snapshot_checkpoint_s": round(last["checkpoint_s"], 3),
                "snapshot_image_bytes": last["image_bytes"],
                "fresh_first_start_s": [run["first_start_s"] for run in sides["fresh"]],
                "snapshot_first_start_s": [run["first_start_s"] for run in sides["snapshot"]],
            }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    stand_in = results["model-sim-20s"]
    return {
        # A start costs a restore, not a load: the 20 s-load stand-in restarts at least ten
        # times faster restored than loaded.
        "met": stand_in["fresh_over_snapshot"] >= TARGET_RATIO,
        "target": f"model-sim-20s fresh/snapshot restart >= {TARGET_RATIO:g}",
        "restarts_per_run": RESTARTS,
        "order": list(ORDER),
        "systems": results,
        "note": "wall seconds per restart, median over both runs of each side; fresh is "
        "a bubblewrap start with no spare, snapshot a gVisor restore of the loaded point",
    }


if __name__ == "__main__":
    print(json.dumps(restore_section(), indent=1))
