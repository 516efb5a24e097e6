"""A system whose answers are HTML and script, for the viewer's escaping."""

from __future__ import annotations

from typing import Any

from apmbench.adapters.sdk import Query, QueryKind
from helpers.systems import JsonMemory

INJECTION = "</pre><script>window.pwned = 1; document.title = 'pwned';</script><b>bold</b>"


class HtmlInjector(JsonMemory):
    """Answers correctly shaped JSON whose text fields are markup a careless viewer would run."""

    name = "html-injector"

    def answer(self, query: Query) -> dict[str, Any]:
        if query.kind is QueryKind.DECISION:
            return {"decision": "SILENT", "reason": INJECTION}
        return {"answer": "A", "reason": INJECTION}
