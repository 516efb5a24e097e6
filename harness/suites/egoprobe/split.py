"""EgoProbe's split: the public part keeps the videos, each question's id, video, query time,
wording and options, and each dialogue's two questions; the answer, the target evidence,
the related events and the subset (Base/Echo, which the related events decide) and the
generator (its seed regenerates every label) stay in the private part."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from apmbench.harness.errors import DatasetError
from apmbench.harness.suites import withheld
from apmbench.harness.suites.egoprobe.dataset import PUBLIC_QUESTION_KEYS, read_doc


def _dialogue(d: Any) -> Any:
    if not isinstance(d, dict):
        return d
    out = {k: d[k] for k in ("dialogue_id", "parent") if k in d}
    for turn in ("r1", "r2"):
        if isinstance(d.get(turn), dict) and "question" in d[turn]:
            out[turn] = {"question": d[turn]["question"]}
    return out


def split(root: Path, public: Path, private: Path) -> None:
    doc = read_doc(root)
    if doc.get("labels") == withheld.WITHHELD:
        raise DatasetError(f"{root} is already a public part (its labels are withheld)")
    kept = {k: v for k, v in doc.items() if k in ("benchmark", "format_version", "name", "videos")}
    questions = [
        {k: q[k] for k in PUBLIC_QUESTION_KEYS if k in q} for q in doc.get("questions", [])
    ]
    dialogues = [_dialogue(d) for d in doc.get("dialogues", []) or []]
    out = {**kept, "labels": withheld.WITHHELD, "questions": questions, "dialogues": dialogues}
    out_name = withheld.public_name(doc)
    withheld.write_doc(public, {**out, **out_name})
    files = [s["file"] for v in doc.get("videos", []) for s in v.get("segments", [])]
    withheld.copy_media(root, public, files)
    withheld.write_doc(private, doc)
