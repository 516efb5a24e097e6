"""Tamper evidence for the records a result rests on: a hash per record, a chain over them.

`seal` hashes each named record (its canonical JSON, or a file's bytes) and chains
the hashes in order into one `head`; `breaks` recomputes both and names every record
that changed, went missing or appeared, and a head that no longer matches.

What it shows and what it does not: an edit made after the run by anyone who does
not also recompute the seal is found and named (a decision flipped, a record
dropped or copied). The algorithm is public and keyless, so a submitter who edits
a record and re-seals it is not caught by the seal alone: a leaderboard then relies
on `verify` re-deriving every number from the records, on the timing checks, and
on re-running the submitted image (docs/blind-evaluation.md says how).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence

from apmbench.harness.json_types import JsonObject

ALGORITHM = "sha256-chain-v1"


def digest(obj: object) -> str:
    """sha256 of `obj`'s canonical JSON (keys sorted, no spaces, UTF-8)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _chain(hashes: Sequence[tuple[str, str]]) -> str:
    head = hashlib.sha256(ALGORITHM.encode()).hexdigest()
    for name, value in hashes:
        head = hashlib.sha256(f"{head}\n{name}\n{value}".encode()).hexdigest()
    return head


def seal(records: Sequence[tuple[str, object]]) -> JsonObject:
    """The seal of `records`, each a (unique name, JSON value) pair, in order."""
    hashes = [(name, digest(value)) for name, value in records]
    names = [n for n, _ in hashes]
    if len(set(names)) != len(names):
        raise ValueError("seal: record names must be unique")
    return {
        "algorithm": ALGORITHM,
        "records": [{"name": n, "sha256": h} for n, h in hashes],
        "head": _chain(hashes),
    }


def breaks(sealed: Mapping[str, object] | None, records: Sequence[tuple[str, object]]) -> list[str]:
    """Every way `records` differ from what `sealed` says, each naming the record; []
    when they are exactly what was sealed."""
    if not isinstance(sealed, Mapping) or sealed.get("algorithm") != ALGORITHM:
        return [f"no {ALGORITHM} seal"]
    listed = sealed.get("records")
    if not isinstance(listed, list):
        return ["the seal lists no records"]
    expected: dict[str, str] = {}
    order: list[tuple[str, str]] = []
    problems: list[str] = []
    for entry in listed:
        name, value = str(entry.get("name")), str(entry.get("sha256"))
        if name in expected:
            problems.append(f"{name}: sealed twice")
        expected[name] = value
        order.append((name, value))
    if _chain(order) != sealed.get("head"):
        problems.append("the seal's head does not match its record hashes (the seal was edited)")
    seen: dict[str, int] = {}
    for name, record in records:
        seen[name] = seen.get(name, 0) + 1
        if seen[name] == 2:
            problems.append(f"{name}: present more than once")
        if name not in expected:
            problems.append(f"{name}: not in the seal (added after the run)")
        elif seen[name] == 1 and digest(record) != expected[name]:
            problems.append(f"{name}: changed after the run")
    problems += [f"{name}: removed after the run" for name in expected if name not in seen]
    return problems
