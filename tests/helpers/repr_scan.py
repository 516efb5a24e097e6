"""Python reprs where a person reads a report: a dict, a list or a tuple of strings, an
object's default repr, None/True/False. Embedded SVG charts, scripts and data URIs of an
HTML page are not read (matplotlib writes its own attributes there)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

REPR = re.compile(
    r"\{'[^']*'\s*:"  # {'key': ...
    r"|\['[^']*'\s*[,\]]"  # ['a', ...]
    r"|\(\s*'[^']*',"  # ('a', ...)
    r"|<[\w.]+ object at 0x"  # <x.Y object at 0x7f...>
    r"|\b(?:OrderedDict|PosixPath|Decimal|defaultdict)\("
    r"|=\{"  # key={...}
    r"|\b(?:None|True|False)\b"
    r"|&#39;\w+&#39;:"  # an escaped {'key': in HTML
)
_HTML_DATA = re.compile(r"<svg.*?</svg>|<script.*?</script>|data:image/[^\"')]*", re.DOTALL)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def reprs(path: Path) -> list[str]:
    """Each repr found in a report file (md, html: its text; json: its string values), with
    the text around it."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        texts = list(_strings(json.loads(text)))
    elif path.suffix == ".html":
        texts = [_HTML_DATA.sub("", text)]
    else:
        texts = [text]
    found = []
    for t in texts:
        for m in REPR.finditer(t):
            found.append(f"{path.name}: ...{t[max(0, m.start() - 60) : m.end() + 40]}...")
    return found
