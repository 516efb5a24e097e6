"""What the frozen /proc view costs a start, measured with and without it.

Each cover is one more mount in every start: bwrap binds it after `--proc` (and reads
/proc/self/mountinfo after each bind), a template start binds it again over the /proc it
mounts. This times, alternating the two so that the host's load falls on both alike,
a fresh box running `true` (bwrap's set-up alone) and a template start of the `null`
system until it answers Describe (a `restart` with no spare), and prints the medians.

    PYTHONPATH=tests .venv/bin/python -m helpers.proc_view_cost --runs 40
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from apmbench.harness.protocol.client import Deadlines
from apmbench.harness.runtimes.process import ProcessRuntime
from apmbench.harness.runtimes.sandbox import Sandbox, python_policy


def measure(runs: int) -> dict[str, float | int]:
    policy = python_policy("null", [], {})
    boxes = {view: Sandbox(policy, proc_view=view) for view in (False, True)}
    fresh: dict[bool, list[float]] = {False: [], True: []}
    template: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as folder:
        runtimes = {
            view: ProcessRuntime(
                "null",
                Path(folder, f"{view}.log"),
                Deadlines(),
                120,
                sandbox=boxes[view],
                start="template",
            )
            for view in (False, True)
        }
        for rt in runtimes.values():
            rt.start()
        try:
            for i in range(runs):
                for view in (False, True) if i % 2 else (True, False):
                    began = time.perf_counter()
                    done = boxes[view].run(["true"])
                    fresh[view].append(time.perf_counter() - began)
                    assert done.returncode == 0, done.stderr
                    began = time.perf_counter()
                    runtimes[view].restart().describe()
                    template[view].append(time.perf_counter() - began)
        finally:
            for rt in runtimes.values():
                rt.stop()

    def ms(values: list[float]) -> float:
        return round(statistics.median(values) * 1000, 1)

    return {
        "runs": runs,
        "covers": len(boxes[True].proc_covers()),
        "fresh_box_ms": ms(fresh[False]),
        "fresh_box_with_view_ms": ms(fresh[True]),
        "template_start_ms": ms(template[False]),
        "template_start_with_view_ms": ms(template[True]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
