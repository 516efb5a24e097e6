"""Text a system supplied, made safe for the report that shows it.

R15 holds Describe's strings to an identifier alphabet, but a report is also
written from run records that may come from elsewhere (`score`, `compare` of
someone's run directory), and answers are free text by nature. So every
system-supplied string that reaches report.md, compare.md or report.html goes
through one of these, whatever the wire rules already refused:

- `md_cell`: one line, table pipes escaped, HTML tags defused, control bytes
  gone, cut to `MD_CHARS` (a name) with the cut said;
- `html_text`: control bytes gone (tab and newline kept), cut to `HTML_CHARS`
  (an answer) with the cut said; Jinja's autoescape does the HTML.

The full text always stays in the run records (instances.jsonl, manifest.json).
"""

from __future__ import annotations

import re

from apmbench.harness import shown

MD_CHARS = 80
"""A system name or version in report.md, compare.md and the terminal."""
HTML_CHARS = 4000
"""An answer (raw output) in report.html's drill-down; the records keep all of it."""

_TAG = re.compile(r"<(?=[A-Za-z/!?])")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
_MARKUP = re.compile(r"([\\`*\[\]()!~])")
"""Markdown punctuation a name never needs (R15's alphabet has none of it): escaped, so a
name from an edited manifest cannot open a link, an image, emphasis or a code span."""


def cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters in the run records]"


def md_cell(text: object, limit: int = MD_CHARS) -> str:
    """`text` as one Markdown table cell or heading word: it cannot end the row, open a
    column, start an HTML tag, a link, an image or a code span, or carry a control byte."""
    one_line = " ".join(shown.plain(text).split())
    return md_escape(_MARKUP.sub(r"\\\1", cut(one_line, limit)))


def md_code(text: object, limit: int = MD_CHARS) -> str:
    """`text` for inside a Markdown code span (`...`): one line, no backtick, no control
    byte, cut. For a manifest's strings (a dataset's name, a version, a setting), which a
    predictions file or a run directory from elsewhere may carry."""
    return cut(" ".join(shown.plain(text).replace("`", "'").split()), limit)


def md_document(text: str) -> str:
    """A whole Markdown report without a control byte (tab and newline kept) and without
    raw HTML (every tag or comment opener defused; the harness writes none): the last line
    of defence for report.md and compare.md, whatever a field forgot."""
    return _TAG.sub("&lt;", shown.plain(text))


def md_escape(text: str) -> str:
    """Pipes and tag openers of an already one-line cell escaped (idempotent for pipes)."""
    return _TAG.sub("&lt;", _UNESCAPED_PIPE.sub(r"\\|", text))


def html_text(text: object, limit: int = HTML_CHARS) -> str:
    """`text` for report.html (which escapes HTML itself): no control bytes, cut to `limit`."""
    return cut(shown.plain(text), limit)
