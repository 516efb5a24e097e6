"""On-disk cache of judge replies, keyed by the judge (endpoint, model, settings) and the prompt.

Judges drift between versions and cost money per call; with every reply
kept, re-scoring a run is free and gives the same numbers. Only replies are
stored (a reply that later fails strict parsing is kept too: it is what the
judge said). Transport failures are never stored, so a later re-score
retries them. One file per key, written to a temp name and renamed, so
concurrent writers never leave a torn entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path


def cache_key(judge: Mapping[str, object], messages: Sequence[Mapping[str, str]]) -> str:
    canonical = json.dumps(
        {"judge": judge, "messages": list(messages)},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class ReplyCache:
    """Judge replies by request, in a run directory's judge-cache/.

    A reply read back is trusted: whoever can edit the run directory can edit it (a
    fresh-eyes red team rewrote every entry to score 5: Adaptive 60.50 -> 98.33). So a
    judge that is cheap to ask again and deterministic is never read from it
    (`reads=False`: the synthetic reference judge), and docs/blind-evaluation.md tells a
    maintainer to re-score a submission with a fresh `--judge-cache`."""

    def __init__(self, root: Path, reads: bool = True) -> None:
        self.root = Path(root)
        self.reads = reads
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> str | None:
        path = self._path(key)
        if not self.reads:
            with self._lock:
                self.misses += 1
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            with self._lock:
                self.misses += 1
            return None
        except json.JSONDecodeError:
            # Only a hand-edited file can be torn (writes are atomic): treat it as absent.
            with self._lock:
                self.misses += 1
            return None
        with self._lock:
            self.hits += 1
        reply: str = entry["reply"]
        return reply

    def put(
        self,
        key: str,
        judge: Mapping[str, object],
        messages: Sequence[Mapping[str, str]],
        reply: str,
    ) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"key": key, "judge": dict(judge), "messages": list(messages), "reply": reply}
        tmp = path.with_name(f".{key}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps(entry, ensure_ascii=False, indent=1), encoding="utf-8")
        tmp.replace(path)
