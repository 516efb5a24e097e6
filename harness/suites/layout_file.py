"""The one JSON file of a hand-filled dataset layout (EgoProbe's records, ProactEgoMem's
clips): read it, and refuse it with the file named unless it says which format and version
it is, so a file of the other suite, or of a later version, is never half read."""

from __future__ import annotations

import json
from pathlib import Path

from apmbench.harness.errors import DatasetError


def read_layout_file(path: Path, fmt: str, version: int) -> dict[str, object]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DatasetError(f"cannot read {path}: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise DatasetError(f'{path}: needs "format": "{fmt}"')
    if doc.get("version") != version:
        raise DatasetError(f"{path}: version must be {version}")
    return doc
