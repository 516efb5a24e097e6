"""Plain-text formatting shared by every suite's reports: numbers, sizes, Markdown tables,
the dataset a run was made on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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


def value_text(value: object) -> str:
    """A JSON value as a person reads it, never as Python's repr: yes/no, "-" for nothing,
    `key=value` pairs for an object (nested ones in parentheses), items joined by commas.
    Reports print values from manifests and judge records through this (a test scans
    every report format of every suite for a repr)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={nested_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(nested_text(v) for v in value)
    return str(value)


def nested_text(value: object) -> str:
    """`value_text`, in parentheses when it is an object or a list of its own."""
    text = value_text(value)
    return f"({text})" if isinstance(value, Mapping | list | tuple) and value else text


def flattened(value: Mapping[str, object], prefix: str = "") -> list[tuple[str, str]]:
    """(dotted key, value_text) for every leaf of a nested object, keys sorted: settings
    as table rows."""
    rows: list[tuple[str, str]] = []
    for key in sorted(value):
        item = value[key]
        name = f"{prefix}{key}"
        if isinstance(item, Mapping) and item:
            rows += flattened(item, name + ".")
        else:
            rows.append((name, value_text(item)))
    return rows


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table; every cell kept to its cell (newlines, pipes, tags, control bytes
    escaped: a cell may hold a system's name, see `system_text`)."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(_cell(c) for c in cells) + " |"

    return [line(header), "|" + "---|" * len(header), *(line(row) for row in rows)]


def _cell(text: str) -> str:
    return md_escape(" ".join(shown.plain(text).split()))


def dataset_line(manifest: Manifest | Mapping[str, object]) -> str:
    """ "Dataset `NAME` (hash `HASH`)": the dataset's name and the first 12 characters of its
    content hash, as every suite's report header gives them (never the manifest's dict)."""
    record = Manifest.of(manifest)
    name, digest = record.dataset_name, record.dataset_hash
    shown_hash = md_code(str(digest)[:12]) if digest else "?"
    return f"Dataset `{md_code(name or '?')}` (hash `{shown_hash}`)"
