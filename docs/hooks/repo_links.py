"""MkDocs hook: links from a page to repository files outside docs/.

The pages are read in two places: on GitHub (or any checkout), where a link
such as `../proto/apmbench/v1/memory_system.proto` opens the file, and on the
built site, which holds only docs/. MkDocs cannot resolve such a link and
would warn (an error under --strict). This hook checks each one instead: the
target must exist and lie inside the repository (a link that leaves it, or
names a file that does not exist, fails the build), and on the site the link
becomes its text, since there is no page to open.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def _rewrite(line: str, page_dir: Path, docs_dir: Path, repo: Path, where: str) -> str:
    def one(match: re.Match[str]) -> str:
        text, target = match.group(2), match.group(3)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return match.group(0)
        path = (page_dir / target.split("#", 1)[0]).resolve()
        if path == docs_dir or docs_dir in path.parents:
            return match.group(0)  # a page or file of the site: MkDocs checks it
        if path != repo and repo not in path.parents:
            raise PluginError(f"{where}: link {target!r} leaves the repository")
        if not path.exists():
            raise PluginError(f"{where}: link {target!r}: no such file in the repository")
        return text

    return LINK.sub(one, line)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    docs_dir = Path(config["docs_dir"]).resolve()
    repo = docs_dir.parent
    page_dir = (docs_dir / page.file.src_uri).parent
    out, fenced = [], False
    for line in markdown.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
        out.append(line if fenced else _rewrite(line, page_dir, docs_dir, repo, page.file.src_uri))
    return "\n".join(out)
