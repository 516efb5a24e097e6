"""JSON values as they come from a file, typed: what a record's reader narrows from.

A value read with `json.loads` is one of these; code that reads a known record
(a report, a manifest, an instance row) narrows it into that record's TypedDict
or dataclass where it is read, so nothing downstream handles an untyped value.
"""

from __future__ import annotations

from typing import TypeAlias

JSON: TypeAlias = "dict[str, JSON] | list[JSON] | str | int | float | bool | None"
"""Any JSON value."""
JsonObject: TypeAlias = "dict[str, JSON]"
"""A JSON object (the top level of every record file)."""
