"""Labels off the evaluating machine: split a dataset, run on its public part, score the
predictions elsewhere.

- `split_dataset`: the suite writes the public part (what a run needs) and the private part
  (the labelled annotations); `split.json` in the private part records the public part's
  content hash, the one a run on it puts in its manifest.
- `write_predictions`: at the end of a run on a public part, instead of a report: the
  manifest and every trajectory record, with what the stand-in labels graded taken out.
- `score_predictions`: on the machine with the labels, refuse predictions made on another
  public part, edited predictions (the seal, harness/run/seal.py) and any that are not
  exactly the labelled plan (a record missing, added or repeated), rebuild the run
  directory, take each instance's fields (bucket, subset, ...) from the labelled plan,
  then score exactly as `evaluate` does.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypedDict, cast

from apmbench.harness.errors import DatasetError, RunDirError
from apmbench.harness.json_types import JsonObject
from apmbench.harness.orchestrate.plan_check import (
    check_exactly_the_plan,
    labelled_fields,
    listed,
    planned_asks,
)
from apmbench.harness.orchestrate.scoring import score_run
from apmbench.harness.reports.head import RunFacts
from apmbench.harness.run import records, seal
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.run.manifest import load as load_manifest
from apmbench.harness.scoring.judge import ChatBackend, JudgeConfig
from apmbench.harness.suites import base, datasets, get_suite, suite_of_dataset, withheld
from apmbench.harness.suites.base import OpaqueSuite, SuiteDataset

PREDICTIONS_NAME = "predictions.json"
PREDICTIONS_FORMAT = "apmbench-predictions"
PREDICTIONS_VERSION = 2
"""2: sealed (harness/run/seal.py); 1 had no seal and is refused."""
INSTANCE_IDS = "instance_ids.json"
"""In a private part: public instance id -> labelled instance id, where they differ."""


class SplitRecord(TypedDict):
    """split.json in a private part: which dataset it was split from, and its public part."""

    format: str
    version: int
    benchmark: str
    public_hash: str
    dataset_hash: str
    trajectories: int


class PredictedTrajectory(TypedDict):
    trajectory_id: str
    record: records.TrajectoryRecord
    """As the run recorded it, less what the stand-in labels graded."""


class Predictions(TypedDict):
    """predictions.json: what a run on a public part hands over to be scored blind."""

    format: str
    version: int
    benchmark: str
    dataset_hash: str | None
    manifest: JsonObject
    trajectories: list[PredictedTrajectory]
    seal: JsonObject


def _empty_or_new(path: Path, what: str) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise DatasetError(f"{what} {path} exists and is not empty: choose another path")


def split_dataset(
    root: Path, public: Path, private: Path, benchmark: str | None = None
) -> SplitRecord:
    """Write the two parts; returns the private part's record (split.json)."""
    suite = suite_of_dataset(root, benchmark)
    if withheld.is_public(root):
        raise DatasetError(f"{root} is already a public part (its labels are withheld)")
    if Path(public).resolve() == Path(private).resolve():
        raise DatasetError("--public and --private must be different directories")
    _empty_or_new(Path(public), "--public")
    _empty_or_new(Path(private), "--private")
    original = datasets.load(suite, root)  # refuse a broken dataset before writing anything
    try:
        datasets.split(suite, root, public, private)
        shown = datasets.load(suite, public)
        labels = datasets.load_labels(suite, private)
    except BaseException:
        shutil.rmtree(public, ignore_errors=True)
        shutil.rmtree(private, ignore_errors=True)
        raise
    ids = [t.trajectory_id for t in original.trajectories]
    if [t.trajectory_id for t in shown.trajectories] != ids or [
        t.trajectory_id for t in labels.trajectories
    ] != ids:
        raise DatasetError(f"the {suite.title} split lost trajectories of {root}")
    renamed = suite.dataset_format().blind_instance_ids(shown, labels)
    if renamed:
        records.atomic_write(Path(private) / INSTANCE_IDS, records.dump(renamed))
    record: SplitRecord = {
        "format": withheld.LABELS_FORMAT,
        "version": withheld.LABELS_VERSION,
        "benchmark": suite.name,
        "public_hash": shown.content_hash,
        "dataset_hash": original.content_hash,
        "trajectories": len(ids),
    }
    records.atomic_write(Path(private) / withheld.SPLIT_RECORD, records.dump(record))
    return record


def _graded_keys(suite: OpaqueSuite, dataset: SuiteDataset, row: Mapping[str, object]) -> set[str]:
    item = base.item_of(suite, dataset, str(row["instance_id"]))
    if item is None:
        return set()
    graded: Mapping[str, object] = suite.grading().grade(item, str(row.get("raw_output") or ""))
    return set(graded.keys())


def write_predictions(run: records.RunDir, suite: OpaqueSuite, dataset: SuiteDataset) -> Path:
    """predictions.json: the manifest and the raw records, nothing the stand-ins graded."""
    trajectories: list[PredictedTrajectory] = []
    for t in dataset.trajectories:
        rec = run.load_trajectory(t.trajectory_id)
        rec["instances"] = [
            {k: v for k, v in row.items() if k not in _graded_keys(suite, dataset, row)}
            for row in rec["instances"]
        ]
        trajectories.append({"trajectory_id": t.trajectory_id, "record": rec})
    manifest = load_manifest(run.manifest_path)
    out: Predictions = {
        "format": PREDICTIONS_FORMAT,
        "version": PREDICTIONS_VERSION,
        "benchmark": suite.name,
        "dataset_hash": manifest.dataset_hash,
        "manifest": manifest.raw,
        "trajectories": trajectories,
        "seal": {},
    }
    out["seal"] = seal.seal(sealed_records(out))
    path = run.root / PREDICTIONS_NAME
    records.atomic_write(path, records.dump(out))
    return path


def sealed_records(predictions: Mapping[str, Any]) -> list[tuple[str, object]]:
    """What the seal of a predictions file covers, named as its refusals name them: its
    head (format, version, benchmark, dataset hash), the manifest, each trajectory's
    record beside its instances, and each instance record (`TRAJECTORY/SEGMENT/INSTANCE`)."""
    head = {k: predictions.get(k) for k in ("format", "version", "benchmark", "dataset_hash")}
    out: list[tuple[str, object]] = [
        ("predictions", head),
        ("manifest", predictions.get("manifest")),
    ]
    for t in predictions.get("trajectories") or []:
        tid = str(t.get("trajectory_id"))
        rec = dict(t.get("record") or {})
        rows = rec.pop("instances", None) or []
        out.append((tid, rec))
        out += [(f"{tid}/{row.get('segment')}/{row.get('instance_id')}", row) for row in rows]
    return out


def check_sealed(predictions: Predictions) -> None:
    """Refuse predictions edited after the run, naming each record that changed."""
    problems = seal.breaks(predictions.get("seal"), sealed_records(predictions))
    if problems:
        raise RunDirError(
            "the predictions are not what the run wrote: " + listed(problems) + " (score the "
            "predictions.json the run on the public part wrote, unedited)"
        )


def read_predictions(path: Path) -> Predictions:
    path = Path(path)
    if path.is_dir():
        path = path / PREDICTIONS_NAME
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise RunDirError(
            f"cannot read predictions {path}: {e} (give the predictions.json a run on a "
            "public part wrote, or its run directory)"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != PREDICTIONS_FORMAT:
        raise RunDirError(f"{path} is not a predictions file (format {PREDICTIONS_FORMAT!r})")
    if doc.get("version") != PREDICTIONS_VERSION:
        raise RunDirError(
            f"{path}: predictions version {doc.get('version')!r} is not supported (version "
            f"{PREDICTIONS_VERSION} is sealed against edits): run the system on the public part "
            "again with this harness"
        )
    return cast(Predictions, doc)  # its format and version, as `write_predictions` wrote it


def known_seed(private: Path) -> dict[str, object]:
    """`{"synthetic": {...}}` when the private part is a synthetic dataset whose seed `synth`
    marked as given (`--seed`), not drawn: anyone who knows it
    can rebuild every label with the public generator, and the scored report says so. A
    drawn seed is never written out: the scored run is published."""
    try:
        generator = json.loads((Path(private) / "dataset.json").read_text()).get("generator")
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(generator, dict) or not isinstance(generator.get("seed"), int):
        return {}
    if generator.get("seed_drawn") is not False:
        # Drawn, or a dataset from before `synth` marked it (the cache's): nothing said.
        return {}
    return {
        "synthetic": {
            "seed": generator["seed"],
            "seed_drawn": False,
            "preset": generator.get("preset"),
        }
    }


def read_labels(private: Path) -> SplitRecord:
    path = Path(private) / withheld.SPLIT_RECORD
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise DatasetError(
            f"{private} is not a private part of `apmbench-grpc split` (cannot read {path}: {e})"
        ) from None
    if not isinstance(record, dict) or record.get("format") != withheld.LABELS_FORMAT:
        raise DatasetError(f"{path}: not a split record (format {withheld.LABELS_FORMAT!r})")
    return cast(SplitRecord, record)  # its format, as `split_dataset` wrote it


def check_match(predictions: Predictions, labels: SplitRecord) -> None:
    """Predictions are scored only with the labels of the public part they were made on."""
    if predictions.get("benchmark") != labels.get("benchmark"):
        raise DatasetError(
            f"the predictions are of {predictions.get('benchmark')!r} but the labels are of "
            f"{labels.get('benchmark')!r}"
        )
    made_on, public = str(predictions.get("dataset_hash")), str(labels.get("public_hash"))
    if made_on != public:
        raise DatasetError(
            f"the predictions were made on a dataset with hash {made_on[:12]}..., but these "
            f"labels belong to the public part {public[:12]}...: score them with the private "
            "part split off the dataset the run used"
        )


def _renamed(obj: object, ids: Mapping[str, str]) -> object:
    """`obj` with every string that is a renamed public instance id (an instance's id, the
    name of the fork it ran in) replaced by its labelled id."""
    if isinstance(obj, str):
        return ids.get(obj, obj)
    if isinstance(obj, dict):
        return {k: _renamed(v, ids) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_renamed(v, ids) for v in obj]
    return obj


def _without(record: Mapping[str, Any], decoys: set[str]) -> dict[str, Any]:
    """A trajectory record without the rows of the split's decoy probes (never scored)."""
    rows = [r for r in record.get("instances", []) if str(r.get("instance_id")) not in decoys]
    return {**record, "instances": rows}


def score_predictions(
    predictions_path: Path,
    private: Path,
    out: Path,
    config: JudgeConfig,
    open_backend: Callable[[OpaqueSuite, SuiteDataset], ChatBackend | None],
) -> RunFacts:
    """Rebuild a run directory at `out` from the predictions and score it with the labels."""
    predictions = read_predictions(predictions_path)
    check_sealed(predictions)
    labels = read_labels(private)
    check_match(predictions, labels)
    suite = get_suite(str(labels["benchmark"]))
    dataset = datasets.load_labels(suite, private)
    run = records.RunDir(out)
    if run.holds_run() or (out.exists() and any(out.iterdir())):
        raise RunDirError(f"{out} exists and is not empty: choose another --out")
    predicted = Manifest.of(predictions["manifest"])
    caps = predicted.capabilities
    fields = labelled_fields(suite, dataset, bool(caps.get("supports_import", True)))
    ids_path = Path(private) / INSTANCE_IDS
    renamed: dict[str, str] = json.loads(ids_path.read_text()) if ids_path.is_file() else {}
    decoys = {public for public, labelled in renamed.items() if labelled == withheld.DECOY}
    renamed = {public: labelled for public, labelled in renamed.items() if public not in decoys}
    # Renaming replaces strings only: each record keeps its shape.
    by_id = {
        str(t["trajectory_id"]): cast(
            records.TrajectoryRecord, _renamed(_without(t["record"], decoys), renamed)
        )
        for t in predictions["trajectories"]
    }
    missing = [t.trajectory_id for t in dataset.trajectories if t.trajectory_id not in by_id]
    if missing:
        raise RunDirError(f"the predictions hold no record of trajectories {', '.join(missing)}")
    blind = planned_asks(
        suite,
        suite.dataset_format().planned_blind(dataset),
        bool(caps.get("supports_import", True)),
    )
    check_exactly_the_plan(
        by_id, blind, dataset, {labelled: public for public, labelled in renamed.items()}
    )
    manifest = predicted.with_fields(
        labels={
            "withheld_during_run": True,
            "dataset_hash": labels["dataset_hash"],
            "scored_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            **known_seed(Path(private)),
        }
    )
    run.prepare(manifest, resume=False)
    for tid, rec in by_id.items():
        rows = []
        for row in rec["instances"]:
            key = (str(row.get("segment")), str(row["instance_id"]))
            if key not in fields:
                raise RunDirError(f"instance {row['instance_id']!r} is not in the labelled plan")
            rows.append({**row, **fields[key]})
        run.save_trajectory(tid, cast(records.TrajectoryRecord, {**rec, "instances": rows}))
    run.finish()
    backend = open_backend(suite, dataset)
    try:
        return score_run(run, suite, dataset, config, backend)
    finally:
        if backend is not None:
            backend.close()
