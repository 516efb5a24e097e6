"""Plain-text formatting shared by every suite's reports: numbers, sizes, Markdown tables,
the dataset a run was made on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from apmbench.harness import shown
from apmbench.harness.reports.system_text import md_code, md_escape
from apmbench.harness.run.manifest import Manifest

NOT_COMPUTED = "n/c"


def num(value: float | int | None, digits: int = 2) -> str:
    return NOT_COMPUTED if value is None else f"{value:.{digits}f}"


def size(value: float | int | None) -> str:
    if value is None:
        return NOT_COMPUTED
    for unit, bytes_ in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= bytes_:
            return f"{value / bytes_:.2f} {unit}"
    return f"{value:.0f} B"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table; every cell kept to its cell (newlines, pipes, tags, control bytes
    escaped: a cell may hold a system's name, see `system_text`)."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(_cell(c) for c in cells) + " |"

    return [line(header), "|" + "---|" * len(header), *(line(row) for row in rows)]


def _cell(text: str) -> str:
    return md_escape(" ".join(shown.plain(text).split()))


def dataset_line(manifest: Manifest | Mapping[str, Any]) -> str:
    """ "Dataset `NAME` (hash `HASH`)": the dataset's name and the first 12 characters of its
    content hash, as every suite's report header gives them (never the manifest's dict)."""
    record = Manifest.of(manifest)
    name, digest = record.dataset_name, record.dataset_hash
    shown_hash = md_code(str(digest)[:12]) if digest else "?"
    return f"Dataset `{md_code(name or '?')}` (hash `{shown_hash}`)"
