"""The .proto's comments, parsed: its rules, status codes and every field's comment.

docs/PROTOCOL.md's reference sections are rendered from these (`render_sections`), so
the page and the normative text cannot drift; `proto/generate.py` writes them and
`--check` fails when the page differs. Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PROTO = Path(__file__).resolve().parent / "apmbench" / "v1" / "memory_system.proto"

_RULE = re.compile(r"^(R\d+|S\d+) (.+?)\. (.*)$")
_CODE = re.compile(r"^  (\w+)\s+(.*)$")
_FIELD = re.compile(r"^\s*(?:(repeated|optional) )?([\w.<>, ]+?) (\w+) = (\d+);$")
_RPC = re.compile(r"^\s*rpc (\w+)\((stream )?(\w+)\) returns \((stream )?(\w+)\);$")


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    text: str


@dataclass(frozen=True)
class Field:
    message: str
    names: tuple[str, ...]
    """The fields (or enum values, or RPCs) one comment describes."""
    declaration: str
    comment: str


def _squash(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def header_lines(text: str) -> list[str]:
    """The comment lines before `syntax`, without their `//` (and one space)."""
    out = []
    for line in text.split("syntax =", 1)[0].splitlines():
        body = line[2:]
        out.append(body[1:] if body.startswith(" ") else body)
    return out


def _indented_after(lines: list[str], title: str) -> list[str]:
    """The first run of indented lines after the paragraph starting with `title`."""
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    block: list[str] = []
    for line in lines[start + 1 :]:
        if line.startswith("  "):
            block.append(line)
        elif block:
            break
    return block


def rules(text: str) -> list[Rule]:
    """R1.. (what servers must do) and S1.. (what the harness promises), in order."""
    found: list[tuple[str, str, list[str]]] = []
    for line in header_lines(text):
        m = _RULE.match(line)
        if m:
            found.append((m.group(1), m.group(2), [m.group(3)]))
        elif found and found[-1][0] and line.startswith("   "):
            found[-1][2].append(line)
        elif line.strip():
            found.append(("", "", []))  # a paragraph that is no rule ends the last one
    return [Rule(i, t, _squash(body)) for i, t, body in found if i]


def _codes(lines: list[str]) -> list[tuple[str, str]]:
    out: list[tuple[str, list[str]]] = []
    for line in lines:
        m = _CODE.match(line)
        if m:
            out.append((m.group(1), [m.group(2)]))
        elif out and line.startswith("   "):
            out[-1][1].append(line)
    return [(code, _squash(body)) for code, body in out]


def status_codes(text: str) -> list[tuple[str, str]]:
    """(code, when) as STATUS CODES lists them."""
    return _codes(_indented_after(header_lines(text), "STATUS CODES"))


def call_codes(text: str) -> list[tuple[str, str]]:
    """(call, codes besides those every call may answer) as WHICH CALL... lists them."""
    return _codes(_indented_after(header_lines(text), "WHICH CALL MAY ANSWER"))


def paragraph(text: str, starting: str) -> str:
    """The header paragraph whose first line starts with `starting`, up to a blank or
    indented line."""
    lines = header_lines(text)
    start = next(i for i, line in enumerate(lines) if line.startswith(starting))
    body = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.strip() or line.startswith("  "):
            break
        body.append(line)
    return _squash(body)


def fields(text: str) -> list[Field]:
    """Every commented declaration in the messages, enums and the service, in file order."""
    out: list[Field] = []
    block = ""
    comment: list[str] = []
    pending: list[tuple[str, str]] = []

    def flush() -> None:
        nonlocal comment, pending
        if pending:
            names = tuple(n for n, _ in pending)
            decl = "; ".join(d for _, d in pending)
            out.append(Field(block, names, decl, _squash(comment)))
        comment, pending = [], []

    body = text.split("syntax =", 1)[1]
    for raw in body.splitlines():
        line = raw.strip()
        head = re.match(r"^(message|enum|service) (\w+) \{", line)
        if head:
            flush()
            block = head.group(2)
            continue
        if line.startswith("//"):
            if pending:
                flush()
            comment.append(line[2:].strip())
            continue
        if line.startswith("oneof"):
            # The comment above a oneof describes its members.
            if pending:
                flush()
            continue
        if not line or line == "}":
            flush()
            continue
        rpc = _RPC.match(raw)
        if rpc:
            pending.append((rpc.group(1), line.rstrip(";")))
            continue
        value = re.match(r"^([A-Z][A-Z0-9_]+) = (\d+);$", line)
        if value:
            pending.append((value.group(1), line.rstrip(";")))
            continue
        m = _FIELD.match(raw)
        if m and block:
            pending.append((m.group(3), line.rstrip(";")))
            continue
        flush()
    flush()
    return out


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def render_sections(text: str) -> dict[str, str]:
    """The generated sections of docs/PROTOCOL.md, by marker name."""
    r = rules(text)
    rules_md = ["| id | rule |", "|---|---|"]
    rules_md += [f"| {x.id} {x.title} | {_cell(x.text)} |" for x in r if x.id.startswith("R")]
    promises = ["| id | promise |", "|---|---|"]
    promises += [f"| {x.id} {x.title} | {_cell(x.text)} |" for x in r if x.id.startswith("S")]
    codes = ["| code | when |", "|---|---|"]
    codes += [f"| `{c}` | {_cell(w)} |" for c, w in status_codes(text)]
    calls = ["| call | codes besides those every call may answer |", "|---|---|"]
    calls += [f"| {c} | {_cell(w)} |" for c, w in call_codes(text)]
    status = "\n".join(
        [
            *codes,
            "",
            paragraph(text, "WHICH CALL MAY ANSWER"),
            "",
            *calls,
            "",
            paragraph(text, "No other code is valid"),
            "",
            paragraph(text, "The server also serves"),
        ]
    )
    ref: list[str] = []
    current = None
    for f in fields(text):
        if f.message != current:
            current = f.message
            ref += ["", f"**{current}**", "", "| name | declaration | meaning |", "|---|---|---|"]
        names = ", ".join(f"`{n}`" for n in f.names)
        ref.append(f"| {names} | `{_cell(f.declaration)}` | {_cell(f.comment)} |")
    return {
        "rules": "\n".join(rules_md),
        "promises": "\n".join(promises),
        "status": status,
        "fields": "\n".join(ref).strip(),
    }


def splice(page: str, sections: dict[str, str]) -> str:
    """`page` with each `<!-- generated: NAME -->`...`<!-- end generated: NAME -->` refilled."""
    for name, body in sections.items():
        begin = f"<!-- generated: {name} (make proto; edit the .proto, not this) -->"
        end = f"<!-- end generated: {name} -->"
        if begin not in page or end not in page:
            raise ValueError(f"docs/PROTOCOL.md lacks the markers of the {name!r} section")
        before, rest = page.split(begin, 1)
        _, after = rest.split(end, 1)
        page = f"{before}{begin}\n\n{body}\n\n{end}{after}"
    return page
