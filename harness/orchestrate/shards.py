"""Shards: a run split into parts that any scheduler can place (`evaluate --shard i/N`).

The trajectory is the unit that must stay on one machine (memory flows through
it); the harness only decides which trajectories a part runs, and leaves
placing the parts to the user's engine (Slurm array, Kubernetes Indexed Job,
Ray). The assignment depends on nothing but the dataset: its hash and the
trajectory ids order ties, and the sessions' durations balance the parts
(longest first onto the least loaded part), so every machine computes the same
split without talking to the others.

A part writes the usual atomic per-trajectory records. Several parts may share
one run directory: each has its own manifest (RUN/shards/<name>.json), work
area (RUN/work/<name>/) and logs (RUN/shards/<name>/logs/), and touches only
the records of its own trajectories. `apmbench-grpc merge` joins the parts.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from apmbench.harness.errors import ConfigError, RunDirError
from apmbench.harness.media.timeline import Trajectory
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.run.manifest import load as load_manifest
from apmbench.harness.run.records import RunDir

SHARDS = "shards"


@dataclass(frozen=True)
class Shard:
    """Part `index` of `count` (0-based), or the explicit trajectories `only` (a Ray task)."""

    index: int
    count: int
    only: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        if self.only is not None:
            return "-".join(self.only)
        return f"{self.index}-of-{self.count}"

    @classmethod
    def parse(cls, text: str) -> Shard:
        """`i/N` with 0 <= i < N, as Slurm's and Kubernetes' 0-based indexes give it."""
        index, sep, count = text.partition("/")
        try:
            i, n = int(index), int(count)
        except ValueError:
            i, n = -1, 0
        if not sep or n < 1 or not 0 <= i < n:
            raise ConfigError(
                f"--shard {text!r}: give i/N with 0 <= i < N (e.g. 0/4 ... 3/4; Slurm: "
                "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT with --array=0-(N-1))"
            )
        return cls(i, n)

    def as_dict(self) -> dict[str, object]:
        return {"index": self.index, "count": self.count, "only": self.only, "name": self.name}


def trajectory_seconds(trajectory: Trajectory) -> float:
    return sum(s.duration_s for s in trajectory.sessions)


def assign(dataset_hash: str, trajectories: Sequence[Trajectory], count: int) -> dict[str, int]:
    """Each trajectory's part: longest first, onto the part with the least video so far."""

    def tie(tid: str) -> str:
        return hashlib.sha256(f"{dataset_hash}/{tid}".encode()).hexdigest()

    order = sorted(trajectories, key=lambda t: (-trajectory_seconds(t), tie(t.trajectory_id)))
    load = [0.0] * count
    parts: dict[str, int] = {}
    for t in order:
        part = min(range(count), key=lambda k: (load[k], k))
        parts[t.trajectory_id] = part
        load[part] += trajectory_seconds(t)
    return parts


def selected(shard: Shard, dataset_hash: str, trajectories: Sequence[Trajectory]) -> list[str]:
    """The trajectory ids of `shard`, in dataset order."""
    ids = [t.trajectory_id for t in trajectories]
    if shard.only is not None:
        unknown = sorted(set(shard.only) - set(ids))
        if unknown:
            raise ConfigError(f"trajectories {', '.join(unknown)} are not in the dataset")
        return [tid for tid in ids if tid in shard.only]
    parts = assign(dataset_hash, trajectories, shard.count)
    return [tid for tid in ids if parts[tid] == shard.index]


class ShardRunDir(RunDir):
    """A part's view of a (possibly shared) run directory: its own manifest, work area and
    logs; the records of its own trajectories only."""

    def __init__(self, root: Path, shard: Shard, owned: Iterable[str]) -> None:
        super().__init__(root)
        self.shard = shard
        self.owned = frozenset(owned)
        self.manifest_path = self.root / SHARDS / f"{shard.name}.json"
        self.work = self.root / "work" / shard.name
        self.runtime_dir = self.root / SHARDS / shard.name

    def owns(self, trajectory_id: str) -> bool:
        return trajectory_id in self.owned

    def check_usable(self, resume: bool) -> None:
        if (self.root / "manifest.json").exists():
            raise RunDirError(
                f"{self.root} holds a whole run, not shards: give each shard's --out a "
                "directory of shards (or a new one)"
            )
        if self.manifest_path.exists():
            if not resume:
                raise RunDirError(
                    f"{self.root} already holds shard {self.shard.name}: pass --resume to "
                    "continue it, or choose another --out"
                )
        elif self.root.exists():
            foreign = sorted(
                p.name
                for p in self.root.iterdir()
                if p.name not in {SHARDS, "trajectories", "work", "logs"}
            )
            if foreign:
                raise RunDirError(
                    f"{self.root} is not a directory of apmbench shards (it holds "
                    f"{', '.join(foreign[:5])})"
                )

    def clean_stale(self) -> None:
        # Another part may be writing its own records right now: touch only ours.
        for tid in self.owned:
            self.record_path(tid).with_name(f".{tid}.json.tmp").unlink(missing_ok=True)


def shard_manifests(root: Path) -> list[tuple[Path, Manifest]]:
    """The manifests of the parts in `root`: its shards', or its own for a whole run."""
    whole = root / "manifest.json"
    if whole.is_file():
        return [(whole, load_manifest(whole))]
    found = sorted((root / SHARDS).glob("*.json")) if (root / SHARDS).is_dir() else []
    if not found:
        raise RunDirError(
            f"{root} holds neither a run (manifest.json) nor shards ({SHARDS}/*.json): "
            "is it the --out of an `evaluate --shard` run?"
        )
    return [(p, load_manifest(p)) for p in found]


def copy_record(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    shutil.copyfile(source, tmp)
    tmp.replace(target)


def parts_dir(out: Path) -> Path:
    """Where `--backend ray` keeps each trajectory's part of the run `out` until they are
    merged (and after a failure, for --resume)."""
    return out.with_name(out.name + ".parts")


def recorded_manifests(out: Path) -> list[Path]:
    """Every manifest a run into `out` may have left: its own, its suites' (`--benchmark
    all`), its shards' and a Ray run's parts' (each a one-trajectory shard)."""
    return [
        out / "manifest.json",
        *sorted(out.glob("*/manifest.json")),
        *sorted(out.glob("shards/*.json")),
        *sorted(parts_dir(out).glob("*/shards/*.json")),
    ]
