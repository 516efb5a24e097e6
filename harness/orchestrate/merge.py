"""`apmbench-grpc merge`: join the parts of a run (shards, Ray tasks) into one run directory.

The parts must be parts of the same run: same benchmark, dataset hash, system,
settings, protocol and harness versions, scoring signature. Every trajectory of
the dataset must be recorded by exactly one part. The merged directory holds
the parts' records unchanged and is scored as any run is (`score_run`), so its
report's scores equal those of the same work run on one machine.
"""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from apmbench.harness.errors import RunDirError
from apmbench.harness.orchestrate.scoring import (
    dataset_for_run,
    recorded_judge,
    score_run,
    suite_of_run,
)
from apmbench.harness.orchestrate.shards import SHARDS, copy_record, shard_manifests
from apmbench.harness.reports.head import RunFacts
from apmbench.harness.run import records
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.run.manifest import merged as merged_manifest
from apmbench.harness.scoring.judge import open_judge
from apmbench.harness.suites import base, withheld
from apmbench.harness.wording import counted

MERGE_KEYS = (
    "benchmark",
    "dataset_hash",
    "system_spec",
    "settings",
    "confinement",
    "protocol_version",
    "harness_version",
)
"""What every part must share, beside the scoring signature."""


@dataclass(frozen=True)
class Part:
    root: Path
    manifest_path: Path
    manifest: Manifest

    @property
    def label(self) -> str:
        shard = self.manifest.shard
        where = str(self.root)
        return f"{where} (shard {shard.name})" if shard else where

    @property
    def claims(self) -> list[str] | None:
        """The trajectories this part ran; None: a whole run (all of them)."""
        shard = self.manifest.shard
        return list(shard.trajectories) if shard else None

    @property
    def logs(self) -> Path:
        shard = self.manifest.shard
        return self.root / SHARDS / shard.name / "logs" if shard else self.root / "logs"


def _compared(manifest: Manifest) -> dict[str, object]:
    fields = manifest.values(MERGE_KEYS)
    fields["scoring.signature"] = manifest.scoring_signature
    return fields


def check_compatible(parts: Sequence[Part]) -> None:
    """Refuse parts of different runs, naming the first difference of each."""
    first = parts[0]
    problems = []
    for part in parts[1:]:
        for key, want in _compared(first.manifest).items():
            got = _compared(part.manifest)[key]
            diffs = records._differences(key, want, got)
            problems += [
                f"{path}: {a!r} in {first.label}, {b!r} in {part.label}" for path, a, b in diffs
            ]
    if problems:
        raise RunDirError(
            "these are not parts of the same run: "
            + "; ".join(problems[:8])
            + (f" (and {len(problems) - 8} more)" if len(problems) > 8 else "")
            + ". Run every shard with the same dataset, system, settings and harness"
        )


def collect(run_dirs: Sequence[Path]) -> list[Part]:
    seen: set[Path] = set()
    parts = []
    for root in run_dirs:
        if root.resolve() in seen:
            continue
        seen.add(root.resolve())
        if not root.is_dir():
            raise RunDirError(f"{root} is not a directory")
        parts += [Part(root, path, manifest) for path, manifest in shard_manifests(root)]
    if not parts:
        raise RunDirError("nothing to merge: give the run directories of the shards")
    return parts


def sources(parts: Sequence[Part], trajectory_ids: Sequence[str]) -> dict[str, Path]:
    """Where each trajectory's one record is; errors for missing and duplicate ones."""
    found: dict[str, list[tuple[Part, Path]]] = {tid: [] for tid in trajectory_ids}
    claimed: dict[str, list[Part]] = {tid: [] for tid in trajectory_ids}
    for part in parts:
        for tid in part.claims if part.claims is not None else trajectory_ids:
            if tid not in found:
                raise RunDirError(f"{part.label} ran trajectory {tid!r}, not in the dataset")
            claimed[tid].append(part)
            record = part.root / "trajectories" / f"{tid}.json"
            if record.is_file():
                found[tid].append((part, record))
    missing = [tid for tid, hits in found.items() if not hits]
    twice = {tid: hits for tid, hits in found.items() if len(hits) > 1}
    if twice:
        tid, hits = next(iter(twice.items()))
        raise RunDirError(
            f"trajectory {tid} is recorded by more than one part ("
            + ", ".join(p.label for p, _ in hits)
            + f"; {counted(len(twice), 'such trajectory')}): merge each trajectory's part once"
        )
    if missing:
        unclaimed = [tid for tid in missing if not claimed[tid]]
        if unclaimed:
            raise RunDirError(
                f"no part ran trajectories {', '.join(unclaimed[:10])}"
                + (f" and {len(unclaimed) - 10} more" if len(unclaimed) > 10 else "")
                + ": a shard is missing from the merge (give every shard's directory)"
            )
        unfinished = sorted({p.label for tid in missing for p in claimed[tid]})
        raise RunDirError(
            f"trajectories {', '.join(missing[:10])} have no record yet: finish "
            + ", ".join(unfinished)
            + " with `evaluate ... --shard i/N --resume` first"
        )
    return {tid: hits[0][1] for tid, hits in found.items()}


def merge(run_dirs: Sequence[Path], out: Path, dataset: Path | None = None) -> RunFacts:
    """Write the merged run directory `out` and return its report."""
    parts = collect(run_dirs)
    check_compatible(parts)
    first = parts[0].manifest
    suite = suite_of_run(first)
    data = dataset_for_run(suite, first, dataset)
    where = sources(parts, [t.trajectory_id for t in data.trajectories])
    if out.exists() and any(out.iterdir()):
        raise RunDirError(f"{out} exists and is not empty: merge into a new directory")
    run = records.RunDir(out)
    for tid, record in where.items():
        copy_record(record, run.record_path(tid))
    for part in parts:
        if part.logs.is_dir():
            shutil.copytree(part.logs, run.logs / part.manifest_path.stem, dirs_exist_ok=True)
    manifest = merged_manifest([p.manifest for p in parts], [str(p.root.resolve()) for p in parts])
    records.atomic_write(run.manifest_path, records.dump(manifest))
    if withheld.is_public(data.root):  # no labels here: predictions, scored elsewhere
        from apmbench.harness.orchestrate.blind import write_predictions

        write_predictions(run, suite, data)
        run.update_manifest(finished_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
        return {}
    config = recorded_judge(first)
    backend = open_judge(config, lambda: base.reference_judge(suite, data.root))
    try:
        report = score_run(run, suite, data, config, backend)
    finally:
        if backend is not None:
            backend.close()
    finished = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    if "audit" in report:
        from apmbench.harness.run.audits.summary import audit_headline

        run.update_manifest(finished_at=finished, audit=audit_headline(report["audit"]))
    else:
        run.update_manifest(finished_at=finished)
    from apmbench.harness.orchestrate.html.view import VIEW_NAME, ViewOptions, write_view

    # Like a single run's directory: the viewer's page beside the report.
    write_view([run.root], run.root / VIEW_NAME, ViewOptions(dataset=dataset))
    return report
