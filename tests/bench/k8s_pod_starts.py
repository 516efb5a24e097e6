"""What a start costs in a Kubernetes shard's pod (deploy/k8s/evaluate-job.yaml): the pod's
container run here with the manifest's security settings (tests/containers/test_k8s_pod.py
translates them), `evaluate --synthetic tiny --system null` in it under `reset`, `restart`
with spares (the default) and `restart --no-spare`, alternated ROUNDS times; the best wall
time of each and the starts the restart runs made. Needs the apmbench-test/k8s-pod image
(the container test builds it).

    .venv/bin/python tests/bench/k8s_pod_starts.py [ROUNDS]
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "containers"))

from test_k8s_pod import POD_TAG, pod_options, run_in_pod

MODES = {
    "reset": "--persistence reset",
    "restart": "--persistence restart",
    "restart-no-spare": "--persistence restart --no-spare",
}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    base = "--synthetic tiny --seed 5 --system null"
    runs = {"warm": base}  # the synthetic dataset is made once, before any timed run
    for r in range(rounds):
        for mode, args in MODES.items():
            runs[f"{mode}-{r}"] = f"{base} {args}"
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results"
        done = run_in_pod(POD_TAG, pod_options(), runs, results, timeout=3000)
        assert done.returncode == 0, done.stderr
        out: dict[str, dict[str, float]] = {}
        for name in runs:
            if name == "warm":
                continue
            assert (results / f"{name}.rc").read_text().strip() == "0", name
            t0 = float((results / f"{name}.t0").read_text())
            t1 = (results / f"{name}.rc").stat().st_mtime
            log = (results / name / "logs" / "system.log").read_text()
            starts = len(re.findall(r"^--- start #", log, re.M))
            mode = name.rsplit("-", 1)[0]
            best = out.setdefault(mode, {"wall_s": float("inf"), "starts": starts})
            best["wall_s"] = round(min(best["wall_s"], t1 - t0), 2)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
