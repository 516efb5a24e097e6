"""The run directory: manifest, per-trajectory records written atomically, resume.

    RUN/manifest.json              versions, system, dataset hash, settings, host
    RUN/trajectories/<id>.json     one finished trajectory (atomic: temp + rename)
    RUN/instances.jsonl            one line per query or probe, dataset order
    RUN/sessions.jsonl             one line per main-pass session
    RUN/report.json, report.md     scores and measurements
    RUN/logs/                      system output
    RUN/work/                      state snapshots while a trajectory runs

A trajectory's record appears only when it is complete, so a run killed at
any point loses nothing finished; `--resume` skips trajectories that have a
record and removes leftovers of the one that was running.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NotRequired, TypedDict

from apmbench.harness.errors import RunDirError
from apmbench.harness.json_types import JSON, JsonObject
from apmbench.harness.run.live import LiveSession
from apmbench.harness.run.manifest import Manifest, Synthetic
from apmbench.harness.run.manifest import load as load_manifest

InstanceRow = TypedDict(
    "InstanceRow",
    {
        "instance_id": str,
        "pass": str,
        "segment": str,
        "session_id": str,
        "time_ms": int,
        "raw_output": str,
        "chunks": int,
        "ttft_s": float | None,
        "total_s": float,
        "prefix_s": float,
        "ingest_s": float,
        "rtf": float | None,
        "lookahead_s": float,
        "piece_chars": NotRequired[list[int]],
        "arrivals_s": NotRequired[list[float]],
        "time_to_answer_s": NotRequired[float | None],
        # `evaluate --live` (harness/run/live.py), where ttft_s, total_s and arrivals_s run
        # from the question's due time: how far behind the clock it was sent, the video
        # time its answer took effect, and for a periodic one whether it was late or
        # dropped for a newer one.
        "lag_s": NotRequired[float],
        "effective_ms": NotRequired[int],
        "period_ms": NotRequired[int],
        "late": NotRequired[bool],
        "live_dropped": NotRequired[bool],
    },
)
"""The runner's fields of every instance row (`pass` is a keyword, hence this form); a
suite's row type extends it with the fields of its asks and its grading."""


class SessionRecord(TypedDict):
    """One main-pass session: what was pushed, how long it took, what the export weighed."""

    trajectory_id: str
    session_id: str
    day_id: str
    index: int
    duration_s: float
    frames: int
    user_turns: int
    ingest_s: float
    end_session_s: float
    load_state_s: float
    export_s: float
    state_bytes: int
    state_sha256: str


class TrajectoryRecord(TypedDict):
    """trajectories/<id>.json: everything a finished trajectory produced.

    Each instance row holds the runner's fields (instance_id, pass, segment,
    session_id, time_ms, raw_output, chunks, ttft_s, total_s, prefix_s,
    ingest_s, rtf, lookahead_s, piece_chars, arrivals_s) and the fields its suite put
    in the ask (task, candidate_id, ...), nothing graded: scoring grades each raw output
    into instances.jsonl (a suite narrows those rows into its own row type, which extends
    `InstanceRow`). Records of runs made before the runner stopped grading also hold
    that run's grading and time_to_answer_s, which scoring replaces.
    """

    trajectory_id: str
    instances: list[dict[str, object]]
    sessions: list[SessionRecord]
    max_lookahead_s: float
    forks: NotRequired[dict[str, int]]
    """How many forks started from a mid-session snapshot (R14), and the frames they
    therefore did not replay."""
    live: NotRequired[list[LiveSession]]
    """`evaluate --live`: per session played, what was offered, dropped and taken, and how
    late the harness offered it against the clock."""
    audit: NotRequired[JsonObject]


# Settings that must match for --resume to continue a run.
RESUME_KEYS = ("benchmark", "dataset_hash", "system_spec", "settings", "confinement")
# What a start that failed before the manifest was written leaves in the run directory.
_FAILED_START = frozenset({"logs", "work"})


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def dump(obj: object) -> str:
    """A record as its file holds it: indented, keys sorted (so equal records are equal bytes)."""
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def jsonl(rows: Iterable[Mapping[str, object]]) -> str:
    return "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)


def _differences(path: str, then: object, now: object) -> list[tuple[str, object, object]]:
    """Where two recorded values (`Manifest.values`) differ, key path by key path."""
    if isinstance(then, dict) and isinstance(now, dict):
        return [
            d
            for key in sorted(set(then) | set(now))
            for d in _differences(f"{path}.{key}", then.get(key), now.get(key))
        ]
    return [] if then == now else [(path, then, now)]


def another_seed(root: Path, recorded: Synthetic | None, seed: int | None) -> str | None:
    """Why a --resume of a --synthetic run with another --seed is refused, in the user's
    words (the seeds), not as the dataset hash the other seed's dataset has; None when the
    seeds agree (or either run is not synthetic)."""
    if recorded is None or seed is None or recorded.seed == seed:
        return None
    made = f"seed {recorded.seed} (drawn at random)" if recorded.seed_drawn else None
    return (
        f"cannot resume {root}: the run was made with {made or f'--seed {recorded.seed}'}; "
        f"you asked --seed {seed}: resume without --seed (the run's seed is used) or with "
        f"--seed {recorded.seed}, or choose another --out for a new run"
    )


def _refuse_another_seed(root: Path, recorded: Manifest, asked: Manifest) -> None:
    now = asked.synthetic
    refused = another_seed(root, recorded.synthetic, None if now is None else now.seed)
    if refused is not None:
        raise RunDirError(refused)


class RunDir:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.trajectories = self.root / "trajectories"
        self.work = self.root / "work"
        self.logs = self.root / "logs"
        # A shard of a shared directory has its own (run.shards.ShardRunDir).
        self.manifest_path = self.root / "manifest.json"
        self.runtime_dir = self.root
        """Where the runtime keeps its logs and names its containers by."""

    def owns(self, trajectory_id: str) -> bool:
        """Whether this run (or shard) runs `trajectory_id`."""
        return True

    def clean_stale(self) -> None:
        """Remove the temporary files of records a killed run was writing."""
        for stale in self.trajectories.glob(".*.tmp"):
            stale.unlink()

    def holds_run(self) -> bool:
        return self.manifest_path.exists()

    def finished_count(self) -> int:
        return len(list(self.trajectories.glob("*.json"))) if self.trajectories.is_dir() else 0

    def left_by_failed_start(self) -> bool:
        """A directory holding only what a start that failed before the manifest was written
        leaves (the system's log, an empty snapshot area), or what `prepare` makes before it
        (an empty trajectories/, the manifest's temporary file: a SIGKILL between the two, as
        the fault campaign's sigkill:2457 hit in CI): reusable with or without --resume."""

        def left(p: Path) -> bool:
            if p.name == "trajectories":
                return p.is_dir() and not any(p.iterdir())
            return p.name in _FAILED_START or p.name == f".{self.manifest_path.name}.tmp"

        return self.root.is_dir() and all(left(p) for p in self.root.iterdir())

    def check_usable(self, resume: bool) -> None:
        """Refuse to overwrite: a run needs --resume, anything else another --out."""
        if self.holds_run():
            if not resume:
                raise RunDirError(
                    f"{self.root} already holds a run: pass --resume to continue it, "
                    "or choose another --out"
                )
        elif self.root.exists() and any(self.root.iterdir()) and not self.left_by_failed_start():
            raise RunDirError(
                f"{self.root} exists and is not an apmbench run directory: choose another --out"
            )

    def prepare(self, manifest: Mapping[str, JSON], resume: bool) -> None:
        """Create the directory, or check it against `manifest` when resuming."""
        existing = self.manifest_path
        if existing.exists():
            recorded = load_manifest(existing)
            _refuse_another_seed(self.root, recorded, Manifest.of(manifest))
            old = recorded.values(RESUME_KEYS)
            new = Manifest.of(manifest).values(RESUME_KEYS)
            # A key the run's manifest predates is not compared (a run from before it was kept).
            changes = [
                f"{path}: {then!r} then, {now!r} now"
                for key in RESUME_KEYS
                if recorded.records(key)
                for path, then, now in _differences(key, old[key], new[key])
            ]
            if changes:
                raise RunDirError(
                    f"cannot resume {self.root}: the run was started with other settings ("
                    + "; ".join(changes)
                    + "). Resume with the original settings, or choose another --out"
                )
        for d in (self.trajectories, self.logs):
            d.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.work, ignore_errors=True)
        self.clean_stale()
        if not existing.exists():
            atomic_write(existing, dump(manifest))

    def finish(self) -> None:
        """Drop the snapshot area once every trajectory is recorded."""
        shutil.rmtree(self.work, ignore_errors=True)

    def record_path(self, trajectory_id: str) -> Path:
        return self.trajectories / f"{trajectory_id}.json"

    def is_done(self, trajectory_id: str) -> bool:
        return self.record_path(trajectory_id).exists()

    def save_trajectory(self, trajectory_id: str, record: TrajectoryRecord) -> None:
        atomic_write(self.record_path(trajectory_id), dump(record))
        shutil.rmtree(self.work / trajectory_id, ignore_errors=True)

    def load_trajectory(self, trajectory_id: str) -> TrajectoryRecord:
        data: TrajectoryRecord = json.loads(self.record_path(trajectory_id).read_text())
        return data

    def work_dir(self, trajectory_id: str) -> Path:
        path = self.work / trajectory_id
        path.mkdir(parents=True, exist_ok=True)
        return path

    def update_manifest(self, **fields: object) -> Manifest:
        """Set `fields` in manifest.json; returns the manifest as written, so the stage
        that wrote it goes on without reading it back."""
        path = self.manifest_path
        updated = load_manifest(path).with_fields(**fields)
        atomic_write(path, dump(updated))
        return Manifest.of(updated)
