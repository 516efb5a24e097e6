"""The synthetic reference judge: a deterministic stand-in for the A.3 LLM judge.

Only for the built-in synthetic benchmark, whose candidates were written from
the simulated events: every reference response, reason and silence reason
names the objects, places and states that decide the probe. The judge reads
the same request an LLM judge gets (the reference annotations and the raw
response), takes the facts of the probe's reference texts (the world's places,
objects, fixtures, states and screen words, and every number or day) as what a good
answer must state, and scores the share the response states:

    no fact-bearing text at all       1   (the decision is right, nothing else is usable)
    share below 1/3, 1/3, 2/3, 1      2, 3, 4, 5   (a score is earned whole)
    no reference text in the probe    3   (nothing to check against: never more)
    a reference that names no fact    2   (any reason: it can only check one was given)

Only facts earn, and every word costs: the share is the facts stated, less the world
facts the response names that none of the candidate's annotations holds (a wrong fact
cancels a right one, so a guess never pays), over the larger of the number of facts and
the response's content words less `SLACK` (the few words a sentence needs around its
facts). So neither appending words (the benchmark's
vocabulary, the references' other words, the question's own facts) nor copying the
references' templates earns anything; only the facts do. History: version 3 charged
only wrong fact words, and appended free words bought Adaptive 68.00 -> 89.17
(text-log, `small` seed 0); version 4 charged every word but counted the references'
template words as facts, so a reason reworded into the templates, or a fixed silence
template with no memory at all, scored 5 (a fresh-eyes red team: Adaptive 57 -> 98).

It answers in the rubric's JSON, so its verdicts go through the same strict
parsing, cache and Eq. 1 / Eq. 3 arithmetic as an LLM's. It never sees the
gate: only gate-passing probes are sent to any judge. The numbers measure
whether a response names the generated facts, not its quality as a person or
the paper's judge would rate it; every report says so (`LABEL`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from apmbench.harness.errors import ConfigError
from apmbench.harness.scoring.judge.backend import Messages
from apmbench.harness.scoring.judge.reference import KIND, LABEL
from apmbench.harness.suites.apmbench.synth.live import GENERATOR
from apmbench.harness.synthetic import world

VERSION = 6
"""Bumped whenever a verdict could change for the same request (4: every content word
of the response counts, not only wrong fact words, and thirds of the facts are earned
whole; 5: only facts and numbers are wanted, with a few words of slack, and a reference
that names no fact scores any reason 2; 6: a wrong fact cancels a right one)."""

# Fields of the annotations (the probe's own label first) whose text states
# what a response should say when it intervenes, or why it stays silent.
_POSITIVE_FIELDS = (
    "proactive_response",
    "reference_proactive_response",
    "response_reason",
    "reason",
    "trigger_match_reason",
    "response_window_rationale",
)
_NEGATIVE_FIELDS = ("silence_reason",)

_STOPWORD_TEXT = """
    a an the and or but of to in on at by for from with as is are was were be been being has
    have had do does did not no nor this that these those it its there here now just yet
    then than so very you your yours i me my we our they them their he she his her wearer
    user who what which when where while will would can could should may might must
    about into onto over under up down out off again still any some all each every
    decision intervene silent reason proactive response answer null true false
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = re.compile(r"[a-z0-9]+")


def _stem(word: str) -> str:
    """Enough stemming that "picked" meets "pick" and "boxes" meets "box"."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """The fact-bearing words of `text`, stemmed, in order, without repeats."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word not in _STOPWORDS and (len(word) > 2 or word.isdigit()):
            seen.setdefault(_stem(word), None)
    return list(seen)


def reference_texts(annotations: Mapping[str, Any]) -> list[str]:
    """The reference texts of the judged probe: its own label first, then the candidate's."""
    probe = annotations.get("this_probe") or {}
    positive = probe.get("polarity") == "positive"
    fields = _POSITIVE_FIELDS if positive else _NEGATIVE_FIELDS
    out = [str(probe[f]) for f in fields if isinstance(probe.get(f), str)]
    if positive:
        out += [str(annotations[f]) for f in fields if isinstance(annotations.get(f), str)]
        registration = annotations.get("registration_event") or {}
        if isinstance(registration.get("registration_text"), str) and not out:
            out.append(registration["registration_text"])
    return out


@functools.cache
def fact_words() -> frozenset[str]:
    """The stemmed words that name a fact of the synthetic world (what a stuffer lists)."""
    names = [*world.PLACES, *world.ITEMS, *world.OBJECTS, *world.SCREEN_WORDS]
    names += [*world.FIXTURES, *(s for states in world.FIXTURES.values() for s in states)]
    return frozenset(t for name in names for t in terms(name))


SLACK = 4
"""Content words a response may use around its facts without dilution ("picked up ...
at ... on"): a sentence needs a few; a list of the benchmark's words needs many."""


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def score_of(share: float, stated_any: bool) -> int:
    if not stated_any:
        return 1
    # Thirds earned whole, not rounded: rounding gave a point for a sixth of the facts,
    # which a response of every word the references use reaches on a silence probe.
    return 2 + min(3, int(3 * share + 1e-9))


def verdict(task: str, annotations: Mapping[str, Any], response: str) -> dict[str, Any]:
    """The rubric's JSON object for one gate-passing probe."""
    texts = reference_texts(annotations)
    # The facts a good answer states: the reference's world facts and numbers (a day, a
    # count). Its other words are one way to phrase them: copying them earns nothing.
    wanted = [w for w in terms(" ".join(texts)) if w in fact_words() or _has_digit(w)]
    said = set(terms(response))
    stated = [t for t in wanted if t in said]
    missing = [t for t in wanted if t not in said]
    known = set(terms(json.dumps(annotations)))  # the candidate's own facts are never wrong
    wrong = sorted((said & fact_words()) - known)
    # Precision as well as recall: past the words a sentence needs around its facts
    # (SLACK), every content word dilutes the share, so appending words never pays.
    room = max(len(wanted), len(said) - SLACK)
    # A wrong fact cancels a right one: with it merely diluting, guessing a place beside
    # the right object scored no lower than not guessing, a free bet (version 5).
    share = max(0, len(stated) - len(wrong)) / room if wanted else 0.0
    if wanted:
        score = score_of(share, bool(said))
    elif texts:
        # "Nothing has been picked up yet.": a reference naming no fact, a template any
        # system can copy; any reason is the generic one it is, or a fixed string scores 5.
        score = min(2, score_of(0.0, bool(said)))
    else:
        # No reference text to check against (an annotation format this judge does not
        # know): the rubric's "basically correct but generic", never a full score.
        score = min(3, score_of(0.0, bool(said)) + 1)
    level = "pass" if share >= 2 / 3 else "partial" if share > 0 else "fail"
    positive = (annotations.get("this_probe") or {}).get("polarity") == "positive"
    checks = {
        "task_fidelity": "pass",
        "historical_or_registration_grounding": level
        if task != "ERA" and positive
        else "not_applicable",
        "current_trigger_or_silence_grounding": level,
        "factual_support": level,
        "usefulness": level if positive else "not_applicable",
    }
    issues = [] if not missing else ["does not state: " + ", ".join(missing)]
    if len(said) - SLACK > len(wanted) and wanted:
        issues.append(f"{len(said)} content words for {len(wanted)} facts")
    if wrong:
        issues.append("names facts the reference does not hold: " + ", ".join(wrong))
    if not texts:
        issues = ["the annotations hold no reference text for this probe"]
    elif not wanted:
        issues = ["the reference names no fact: any reason is a generic one"]
    if not said:
        issues = ["no explanation or response beyond the decision"]
    justification = (
        f"{LABEL}: the response states {len(stated)} of {len(wanted)} reference facts"
        + (f" ({', '.join(stated)})" if stated else "")
        + "."
    )
    return {
        "score": score,
        "criterion_checks": checks,
        "critical_issues": issues,
        "justification": justification,
    }


def parse_request(messages: Messages) -> tuple[str, dict[str, Any], str]:
    """(task, reference annotations, model response) from the rubric's request message."""
    # A retry appends a correction turn; the request itself is the first user message.
    user = next(m["content"] for m in messages if m.get("role") == "user")
    head, _, rest = user.partition("\n")
    task = head.removeprefix("Task: ").strip()
    _, _, after = rest.partition("Reference annotations:\n")
    annotations_text, sep, response = after.partition("\n\nModel response:\n")
    if not sep:
        raise ValueError("the judge request has no 'Model response:' section")
    return task, json.loads(annotations_text), response


def generator_of(root: Path) -> Mapping[str, Any] | None:
    try:
        manifest = json.loads((root / "dataset.json").read_text())
    except (OSError, ValueError):
        return None
    generator = manifest.get("generator") if isinstance(manifest, dict) else None
    return generator if isinstance(generator, dict) else None


class SyntheticReferenceJudge:
    """A ChatBackend whose replies are `verdict`; no model, no network."""

    max_concurrency = 4
    deterministic = True
    """Asked again at every scoring, never read back from a run directory's judge-cache."""

    def __init__(self, generator: Mapping[str, Any]) -> None:
        self.cache_identity: dict[str, Any] = {"kind": KIND, "version": VERSION, "label": LABEL}
        self.identity: dict[str, Any] = {**self.cache_identity, "generator": dict(generator)}
        self.calls = 0

    def complete(self, messages: Messages) -> str:
        self.calls += 1
        task, annotations, response = parse_request(messages)
        return json.dumps(verdict(task, annotations, response))

    def close(self) -> None:
        pass


def open_reference_judge(root: Path) -> SyntheticReferenceJudge:
    """The reference judge for the dataset at `root`; refuses anything but the generator's."""
    generator = generator_of(root)
    if generator is None or generator.get("name") != GENERATOR:
        raise ConfigError(
            f"--judge synthetic scores only the built-in synthetic benchmark (dataset.json "
            f"naming generator {GENERATOR!r}); {root} is another dataset. Use --judge openai "
            "or --judge transformers:PATH for it"
        )
    return SyntheticReferenceJudge(generator)
