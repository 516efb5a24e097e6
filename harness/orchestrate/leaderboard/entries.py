"""What the leaderboard is built from: one `Entry` per input, whatever kind of input it was.

An input is a run directory or a result bundle (`apmbench-grpc bundle`):
`entries_of` is the one function that turns an input path into Entries (a
bundle of `evaluate --benchmark all` holds one run per suite), and nothing
after it changes (the page shows `bundle_id` and `verified`). A bundle is
verified (`verify_bundle`, every rule of `apmbench-grpc verify`) as it is
read: a failed rule shows its numbers as "verification failed".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from apmbench.adapters.sdk.errors import ApmbenchError
from apmbench.harness.errors import RunDirError
from apmbench.harness.json_types import JsonObject

PREDICTIONS = "predictions.json"
"""What a blind run (on a dataset's public part) writes instead of report.json."""


@dataclass(frozen=True)
class Entry:
    """One run as the leaderboard shows it: its numbers and where they came from."""

    source: str
    """The input as given: a run directory's path (or, later, a bundle's file)."""
    bundle_id: str | None
    """The bundle's id; None for a run directory."""
    verified: bool | None
    """True: a bundle whose members matched its index; False: one that did not; None: not a
    bundle, so nothing was verified."""
    report: JsonObject
    manifest: JsonObject


def _json_object(path: Path, what_to_do: str) -> JsonObject:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise RunDirError(f"{path} cannot be read ({e.strerror or e}): {what_to_do}") from e
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RunDirError(f"{path} is not valid JSON ({e}): {what_to_do}") from e
    if not isinstance(data, dict):
        raise RunDirError(f"{path} does not hold a JSON object: {what_to_do}")
    return data


def run_directory_entry(root: Path) -> Entry:
    """A run directory's report.json and manifest.json, not verified (not a bundle)."""
    manifest_path, report_path = root / "manifest.json", root / "report.json"
    if not manifest_path.is_file():
        raise RunDirError(
            f"{root} is not an apmbench run directory (no manifest.json): give the --out "
            "directory of `apmbench-grpc evaluate` (or `score`)"
        )
    if not report_path.is_file():
        if (root / PREDICTIONS).is_file():
            raise RunDirError(
                f"{root} is a blind run ({PREDICTIONS}, no report.json): score it where the "
                f"labels are (apmbench-grpc score {root / PREDICTIONS} --labels PRIVATE "
                "--out SCORED) and give the scored run directory"
            )
        raise RunDirError(
            f"{root} has no report.json: finish the run (apmbench-grpc evaluate --resume "
            f"--out {root}) or score it (apmbench-grpc score {root})"
        )
    redo = f"restore it, or score the run again (apmbench-grpc score {root})"
    return Entry(
        source=str(root),
        bundle_id=None,
        verified=None,
        report=_json_object(report_path, redo),
        manifest=_json_object(manifest_path, "restore it or run the evaluation again"),
    )


def _labels_for(manifest: object, labels: Sequence[Path]) -> Path | None:
    """The private part a scored blind run was scored with, among `labels`."""
    from apmbench.harness.orchestrate.blind import read_labels

    scored_with = manifest.get("labels") if isinstance(manifest, dict) else None
    if not isinstance(scored_with, dict):
        return None
    for private in labels:
        try:
            if read_labels(private).get("dataset_hash") == scored_with.get("dataset_hash"):
                return private
        except ApmbenchError:
            continue
    return None


def bundle_entries(path: Path, labels: Sequence[Path] = ()) -> list[Entry]:
    """Each run a bundle holds, verified once for the whole bundle (a scored blind run with
    the private part, among `labels`, it was scored with)."""
    from apmbench.harness.orchestrate.bundle import RescoreOptions, read_bundle, verify_bundle

    bundle = read_bundle(path)
    if bundle.blind:
        raise RunDirError(
            f"{path} is a bundle of a blind run ({PREDICTIONS}, no report.json): score it where "
            "the labels are (apmbench-grpc verify BUNDLE --labels PRIVATE, or score), bundle the "
            "scored run and give that bundle"
        )
    private = next(
        (
            found
            for prefix in bundle.runs or [""]
            if (found := _labels_for(bundle.run(prefix).json("manifest.json"), labels))
        ),
        None,
    )
    verified = verify_bundle(bundle, RescoreOptions(labels=private)).ok
    entries = []
    for prefix in bundle.runs or [""]:
        run = bundle.run(prefix)
        report, manifest = run.json("report.json"), run.json("manifest.json")
        if not isinstance(report, dict) or not isinstance(manifest, dict):
            raise RunDirError(
                f"{path}: the run {prefix or '(top)'} has no readable report.json and "
                "manifest.json: bundle a scored run directory again"
            )
        entries.append(
            Entry(
                source=f"{path}#{prefix}" if prefix else str(path),
                bundle_id=bundle.id,
                verified=verified,
                report=report,
                manifest=manifest,
            )
        )
    return entries


def entries_of(path: Path, labels: Sequence[Path] = ()) -> list[Entry]:
    """THE place an input path becomes Entries: one branch per kind of input."""
    if path.is_dir():
        return [run_directory_entry(path)]
    if not path.exists():
        raise RunDirError(
            f"{path} does not exist: give a run directory (the --out of apmbench-grpc evaluate) "
            "or a bundle (apmbench-grpc bundle)"
        )
    return bundle_entries(path, labels)


def load_entries(paths: Sequence[Path], labels: Sequence[Path] = ()) -> list[Entry]:
    """Every input as an Entry; every bad one named at once, so one pass fixes them all."""
    entries: list[Entry] = []
    problems: list[str] = []
    for path in paths:
        try:
            entries.extend(entries_of(path, labels))
        except RunDirError as e:
            problems.append(str(e))
        except OSError as e:  # a folder on the way that this user may not list
            problems.append(
                f"{path} cannot be read ({e.strerror or e}): give a run directory you can read"
            )
    if problems:
        raise RunDirError(listed(problems))
    return entries


def listed(problems: Sequence[str]) -> str:
    """One problem as it is; several one per line."""
    if len(problems) == 1:
        return problems[0]
    return f"{len(problems)} inputs cannot be shown:\n" + "\n".join(f"- {p}" for p in problems)
