"""ProactEgoMem's split: the public part keeps the clips (video or render), their task,
length and events, and each question's id, wording, choices and category; the answers and
the generator (its seed regenerates every label) stay in the private part.

The events stay public: the Oracle Memory condition shows them to the system (the paper's
"ground-truth intervals that should have been captured"), so a run under that condition
cannot be planned without them. A release that must keep the event times private as well
has to drop the Oracle Memory condition from its public runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apmbench.harness.errors import DatasetError
from apmbench.harness.suites import withheld
from apmbench.harness.suites.proactegomem.dataset import read_doc

PUBLIC_QUESTION_KEYS = ("question_id", "question", "choices", "category")


def _clip(clip: Any) -> Any:
    if not isinstance(clip, dict):
        return clip
    questions = [
        {k: q[k] for k in PUBLIC_QUESTION_KEYS if k in q} if isinstance(q, dict) else q
        for q in clip.get("questions", []) or []
    ]
    return {**clip, "questions": questions}


def split(root: Path, public: Path, private: Path) -> None:
    doc = read_doc(root)[2]
    if not isinstance(doc, dict) or doc.get("labels") == withheld.WITHHELD:
        raise DatasetError(f"{root} is already a public part, or not a dataset")
    kept = {k: v for k, v in doc.items() if k not in ("generator", "clips")}
    clips = [_clip(c) for c in doc.get("clips", []) or []]
    out_name = withheld.public_name(doc)
    withheld.write_doc(public, {**kept, **out_name, "labels": withheld.WITHHELD, "clips": clips})
    files = [c["video"] for c in clips if isinstance(c, dict) and isinstance(c.get("video"), str)]
    withheld.copy_media(root, public, files)
    withheld.write_doc(private, doc)
