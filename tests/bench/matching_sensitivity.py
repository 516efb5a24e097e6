"""How much ProactEgoMem's headline metrics move with the matching parameters the paper
leaves open: one run of a system (default `proact-rules`) on the built-in synthetic
ProactEgoMem benchmark, its step outputs rescored with every setting of
`apmbench.harness.suites.proactegomem.sensitivity`, as they are and delayed by whole
seconds. Prints a markdown table; docs/PROACTEGOMEM.md holds one.

    .venv/bin/python tests/bench/matching_sensitivity.py [--size small] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.proactegomem import metrics
from apmbench.harness.suites.proactegomem.sensitivity import table
from apmbench.harness.suites.proactegomem.synth import synthetic_dataset


def step_rows(run: Path) -> list[metrics.Row]:
    lines = (run / "instances.jsonl").read_text().splitlines()
    return [
        r for r in metrics.rows([json.loads(line) for line in lines]) if r.get("role") == "step"
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--system", default="proact-rules")
    parser.add_argument("--run", type=Path, help="score this finished run instead of running")
    args = parser.parse_args(argv)
    run = args.run
    if run is None:
        run = Path(tempfile.mkdtemp(prefix="matching-")) / "run"
        print(f"running {args.system} on ProactEgoMem {args.size} seed {args.seed} ...", flush=True)
        evaluate(
            EvaluateOptions(
                dataset=synthetic_dataset(args.size, args.seed),
                out=run,
                runtime=runtime_spec(system=args.system),
                persistence=Persistence.RESET,
                benchmark="proactegomem",
            )
        )
    print("\n".join(table(step_rows(run))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
