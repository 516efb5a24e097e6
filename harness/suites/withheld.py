"""What every suite's split shares: the public part's marker, its media, the private part's
record.

`apmbench-grpc split` writes a public part (a dataset in the suite's own format with
`"labels": "withheld"` and only what a run needs) and a private part (the labelled
annotations, no media, and `split.json` naming the public part's hash). A suite's loader
gives a public part's withheld fields stand-in values, so the run is planned exactly as it
would be with labels; nothing of them is scored.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path

from apmbench.harness.errors import DatasetError
from apmbench.harness.suites import DEFAULT

WITHHELD = "withheld"
SPLIT_RECORD = "split.json"
LABELS_FORMAT = "apmbench-labels"
LABELS_VERSION = 1
DECOY = ""
"""In a private part's instance_ids.json, what a public probe id maps to when it is a decoy
(asked on the public part only so that the probes' number and order give nothing away):
its records are dropped before scoring."""


def is_public(root: Path) -> bool:
    """Whether `root` is the public part of a split (its labels withheld)."""
    try:
        doc = json.loads((Path(root) / "dataset.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and doc.get("labels") == WITHHELD


def public_name(doc: Mapping[str, object]) -> dict[str, str]:
    """The public part's name: a synthetic dataset's own name carries its seed, which
    regenerates every label."""
    if "generator" not in doc:
        return {}
    # APM-Bench's own format names no benchmark: it is the default suite.
    return {"name": f"{doc.get('benchmark') or DEFAULT}-synthetic-public"}


def write_doc(root: Path, doc: Mapping[str, object]) -> None:
    Path(root).mkdir(parents=True, exist_ok=True)
    (Path(root) / "dataset.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def copy_media(src: Path, dst: Path, files: Iterable[str]) -> None:
    """The media a run plays, at the same relative paths: hard links where the file system
    allows, else copies (a video is public: the system sees it anyway)."""
    for rel in sorted(set(files)):
        source, target = Path(src) / rel, Path(dst) / rel
        if not source.resolve().is_relative_to(Path(src).resolve()):
            raise DatasetError(f"{rel!r} lies outside the dataset {src}")
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
