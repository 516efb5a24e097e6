"""manifest.json as a typed record: the one module that reads its keys.

`Manifest` parses the JSON once into typed fields; every other module reads
those fields instead of indexing the dict. The parsed JSON is kept as `raw`
and written back unchanged (`write`), so the bytes on disk do not move and a
key this record does not model survives a round trip. Every field has the
default a run from before that key had, so older manifests (resume, merge,
score of old runs) still load.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from apmbench.harness.errors import RunDirError

JsonObject = dict[str, Any]
"""A JSON object as json.loads gives it; only this module looks inside one."""


def _object(value: object) -> JsonObject:
    return dict(value) if isinstance(value, Mapping) else {}


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _run_as(raw: Mapping[str, object]) -> str | None:
    spec = raw.get("system_spec")
    if isinstance(spec, str) and spec:
        # An image is recorded with its id in parentheses; the sources table shows the id.
        return _shown_text(spec.split(" (sha256:", 1)[0])
    return _shown_text(_object(raw.get("system_name")).get("harness"))


def _shown_text(value: object) -> str | None:
    return None if value is None else _shown(value)


_SHOWN_CHARS = 120


def _shown(value: object) -> str:
    """A manifest string the reports print (a dataset's name, a version, a mode): one line,
    no control byte, no backtick, at most 120 characters. A manifest may come from a
    predictions file or a run directory made elsewhere; the harness's own values are
    unchanged by this, and the raw record (`raw`) keeps everything."""
    text = " ".join(_CONTROL.sub("", str(value)).replace("`", "'").split())
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _synthetic(value: object) -> Synthetic | None:
    # A seed that is missing or not a number is no seed (the run is not known to be synthetic).
    if not isinstance(value, Mapping) or not value:
        return None
    try:
        preset = value.get("preset")
        drawn = bool(value.get("seed_drawn"))
        return Synthetic(int(value["seed"]), drawn, None if preset is None else str(preset))
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Shard:
    """The part of the dataset a shard run owns (`evaluate --shard i/N`)."""

    name: str
    trajectories: tuple[str, ...]


@dataclass(frozen=True)
class Synthetic:
    """How a synthetic dataset was made: its seed, and whether the harness drew it."""

    seed: int
    seed_drawn: bool
    preset: str | None = None
    """The generator's preset (tiny, small, paper); None in runs from before it was recorded."""


@dataclass(frozen=True)
class Isolation:
    """How forks and replays were isolated (absent in runs from before it was recorded)."""

    rests_on_system_reset: bool
    max_lookahead_s: float


@dataclass(frozen=True)
class Manifest:
    """A run's manifest.json, typed. Build one with `Manifest.of` or `load`."""

    raw: JsonObject = field(repr=False)
    benchmark: str | None
    dataset_name: str | None
    dataset_path: str | None
    dataset_hash: str | None
    variant: str | None
    """The suite's condition the run played (`evaluate --variant`); None: the suite's own."""
    synthetic: Synthetic | None
    system_name: str
    run_as: str | None
    """What the harness ran, as given: a registered system, a `module:Class` spec, an image
    (without its id) or the whole command line, beside the name the system's Describe gave
    (`system_name`). Not the harness's short name, which names a command by its script: a
    script called text-log.py would read as the reference system."""
    system_version: str | None
    system_spec: object
    capabilities: JsonObject
    shard: Shard | None
    host: object
    started_at: str | None
    finished_at: str | None
    isolation: Isolation | None
    judge: JsonObject
    """The judge the run was scored with; empty if it never was."""
    judge_settings: JsonObject
    scoring_signature: object
    settings: JsonObject
    persistence: str
    fps: float
    runtime: JsonObject
    runtime_kind: str | None
    image_id: str | None
    image_repo_digests: tuple[str, ...]
    """The registry digests of the evaluated image (`repo@sha256:...`), where it had any."""
    mounts: tuple[str, ...]
    harness_version: str | None
    protocol_version: str | None
    system_protocol_version: str | None
    """The protocol version the system's Describe declares (what `check` judges it by)."""

    @classmethod
    def of(cls, data: Manifest | Mapping[str, object]) -> Manifest:
        """`data` as a record; a `Manifest` is returned as it is."""
        if isinstance(data, Manifest):
            return data
        raw = dict(data)
        dataset = raw.get("dataset")
        dataset_map = _object(dataset)
        system = _object(raw.get("system"))
        scoring = _object(raw.get("scoring"))
        settings = _object(raw.get("settings"))
        runtime = _object(raw.get("runtime"))
        shard = raw.get("shard")
        iso = raw.get("isolation")
        return cls(
            raw=raw,
            benchmark=_text(raw.get("benchmark")),
            # Early manifests recorded the dataset as its bare name.
            dataset_name=_shown_text(
                dataset_map.get("name") if isinstance(dataset, Mapping) else dataset
            ),
            dataset_path=_text(dataset_map.get("path")),
            dataset_hash=_text(raw.get("dataset_hash")),
            variant=_shown_text(raw.get("variant")),
            # A blind run scored with the private part of a dataset whose seed was given
            # records that under `labels` (its `dataset` is the sealed public part's).
            synthetic=_synthetic(dataset_map.get("synthetic"))
            or _synthetic(_object(raw.get("labels")).get("synthetic")),
            system_name=_shown(system.get("name", "?")),
            run_as=_run_as(raw),
            system_version=_shown_text(system.get("version")),
            system_spec=raw.get("system_spec"),
            capabilities=_object(system.get("capabilities")),
            shard=(
                Shard(str(shard["name"]), tuple(str(t) for t in shard["trajectories"]))
                if isinstance(shard, Mapping)
                else None
            ),
            host=raw.get("host"),
            started_at=_text(raw.get("started_at")),
            finished_at=_text(raw.get("finished_at")),
            isolation=(
                Isolation(
                    bool(iso.get("rests_on_system_reset")),
                    float(iso.get("max_lookahead_s", 0.0)),
                )
                if isinstance(iso, Mapping)
                else None
            ),
            judge=_object(scoring.get("judge")),
            judge_settings=_object(scoring.get("judge_settings")),
            scoring_signature=scoring.get("signature"),
            # `restart` for runs from before the field.
            settings=settings,
            persistence=_shown(settings.get("persistence", "restart")),
            fps=float(_object(settings.get("frames")).get("fps", 1.0)),
            runtime=runtime,
            # Early manifests recorded the runtime as its bare kind.
            runtime_kind=_text(
                runtime.get("kind")
                if isinstance(raw.get("runtime"), Mapping)
                else raw.get("runtime")
            ),
            image_id=_text(_object(runtime.get("image")).get("id")),
            image_repo_digests=tuple(
                str(d) for d in _object(runtime.get("image")).get("repo_digests") or []
            ),
            mounts=tuple(str(m) for m in _object(runtime.get("container")).get("mounts") or []),
            harness_version=_shown_text(raw.get("harness_version")),
            protocol_version=_shown_text(raw.get("protocol_version")),
            system_protocol_version=_shown_text(system.get("protocol_version")),
        )

    @property
    def shown_name(self) -> str:
        """The system as every report names it: its Describe name, followed by what the
        harness ran where that is something else. The Describe name is the system's own to
        choose, so on its own it would let a method read as another (a cheater calling
        itself text-log would stand in report.md as the reference system)."""
        if self.run_as is None or self.run_as == self.system_name:
            return self.system_name
        return f"{self.system_name} (run as {self.run_as})"

    @property
    def live_speed(self) -> float | None:
        """The speed the run was played live at (`evaluate --live`); None: an offline
        replay, as every run before live play."""
        speed = _object(self.settings.get("live")).get("speed")
        return float(speed) if isinstance(speed, int | float) else None

    @property
    def live_buffer_s(self) -> float | None:
        """A live run's frame buffer (`--live-buffer`), in seconds of video; None: offline."""
        buffer = _object(self.settings.get("live")).get("buffer_s")
        return float(buffer) if isinstance(buffer, int | float) else None

    @property
    def played(self) -> str:
        """How the sessions were played, in words: runs are compared and ranked only with
        runs played the same way."""
        if self.live_speed is None:
            return "replayed offline"
        buffer = "" if self.live_buffer_s is None else f", buffer {self.live_buffer_s:g} s"
        return f"played live at {self.live_speed:g}x{buffer}"

    @property
    def play(self) -> tuple[float | None, float | None]:
        """How the sessions were played, exactly (`played` rounds for reading): the live
        speed and buffer, both None for an offline replay."""
        return (self.live_speed, self.live_buffer_s)

    @property
    def spares_beside_live(self) -> bool:
        """Whether spare starts were loaded beside the live one (`restart` with spares, the
        default). A live start can hand memory to its loading spare through the page cache,
        a channel the harness cannot close, so Storage/hr is then a lower bound; only
        `--no-spare` removes the overlap. The process runtimes record `spare`, the docker
        runtime `spares.frozen_once_loaded`; an endpoint records neither (no restarts)."""
        if self.persistence != "restart":
            return False
        spares = _object(self.runtime.get("spares"))
        return self.runtime.get("spare") is True or spares.get("frozen_once_loaded") is True

    def values(self, keys: tuple[str, ...]) -> dict[str, object]:
        """The recorded values of top-level `keys` (None where absent), for comparing runs
        key by key without this module naming each key's shape."""
        return {k: self.raw.get(k) for k in keys}

    def records(self, key: str) -> bool:
        """Whether the run recorded top-level `key` at all (older runs predate some)."""
        return key in self.raw

    def without(self, keys: set[str]) -> JsonObject:
        """The JSON less `keys`, in its key order (a base for a derived manifest)."""
        return {k: v for k, v in self.raw.items() if k not in keys}

    def with_fields(self, **fields: object) -> JsonObject:
        """The JSON with `fields` set (a key already there keeps its place, as on disk)."""
        return {**self.raw, **fields}

    def part_summary(self, path: str) -> JsonObject:
        """This part's entry in a merged run's `merged_from`."""
        shard = self.raw.get("shard")
        return {
            "path": path,
            "shard": dict(shard) if isinstance(shard, Mapping) else None,
            "host": self.host,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
        }


MERGE_DROPPED = {"shard", "finished_at", "isolation", "audit"}
"""Keys of a part that do not describe the merged run (it is scored and finished anew)."""


def merged(parts: Sequence[Manifest], paths: Sequence[str]) -> JsonObject:
    """The manifest of the run merged from `parts` (at `paths`): the first part's, less what
    is per part, with where each part came from, the earliest start and the worst
    look-ahead of any part."""
    out = {
        **parts[0].without(MERGE_DROPPED),
        "merged_from": [p.part_summary(path) for p, path in zip(parts, paths, strict=True)],
        "started_at": min(p.started_at or "" for p in parts),
    }
    recorded = [p for p in parts if p.isolation is not None]
    if recorded:
        out["isolation"] = {
            **_object(recorded[0].raw.get("isolation")),
            "max_lookahead_s": max(p.isolation.max_lookahead_s for p in recorded if p.isolation),
        }
    return out


def load(path: Path) -> Manifest:
    """The manifest at `path`; a clear error if it is not a JSON object."""
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise RunDirError(f"{path} is not valid JSON ({e}): restore it or rerun") from e
    if not isinstance(data, dict):
        raise RunDirError(f"{path} does not hold a JSON object: restore it or rerun")
    return Manifest.of(data)
