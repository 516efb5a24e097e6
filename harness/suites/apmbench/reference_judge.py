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
    a reference that names no fact    2   (any reason: it can only check one was given;
                                           on a silence probe, none beyond the user's own)

Only facts earn, and every word costs. The facts a response is credited for are
`wanted_facts`: the reference texts' world facts and numbers, less, on a silence probe,
those the query itself carried (the user's registration, the ERA question and options):
copying the user's words is no memory. The share is the facts stated, less the wrong
facts the response names (a world fact none of the candidate's annotations holds, or a
number or day that no reference text holds: a wrong fact cancels a right one, so a guess
never pays), over the larger of the number of facts and the words charged: every fact
word the response names, wanted or not, plus its other content words past `SLACK` (the
glue a sentence needs around its facts). So neither appending words (the benchmark's
vocabulary, the references' other words, the question's own facts, a bag of likely
facts) nor copying the references' templates or the user's reminder earns anything;
only the facts do. History: version 3 charged only wrong fact words, and appended free
words bought Adaptive 68.00 -> 89.17 (text-log, `small` seed 0); version 4 charged
every word but counted the references' template words as facts, so a reason reworded
into the templates, or a fixed silence template with no memory at all, scored 5 (a
fresh-eyes red team: Adaptive 57 -> 98). Version 7 widened the slack from 4 words to 12
(text-log on `tiny` seed 0, generator 5: 64.00 -> 66.00), and the slack covered fact
words too, so a bag of facts the annotations are likely to hold (the options, the
registration's words, the latest event's place and object: FactBagger in the test
gallery), with the registration copied into silence reasons, bought 80.00 against
text-log's 66.00 (`small` seed 7: 76.33 against 60.83). Version 8 charges those
facts: FactBagger 60.00 and 58.00, text-log 66.00 and 60.83 (version 6: 64.00, 59.33).

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

VERSION = 8
"""Bumped whenever a verdict could change for the same request (4: every content word
of the response counts, not only wrong fact words, and thirds of the facts are earned
whole; 5: only facts and numbers are wanted, with a few words of slack, and a reference
that names no fact scores any reason 2; 6: a wrong fact cancels a right one; 7: a slack
of 12 words, not 4; 8: the slack covers glue words only, every fact word the reference
does not want is charged, a number or day no reference text holds is wrong, and a
silence probe's facts that the user's own registration states earn nothing)."""

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


SLACK = 12
"""Glue words a response may use around its facts without dilution ("you just picked up
the ... at the ... on"): a sentence needs a few; a list of the benchmark's words needs
many. Only glue: a fact word the reference does not want is charged whole."""

_DAY_NAMES = frozenset(
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
)


def _has_digit(word: str) -> bool:
    return any(c.isdigit() for c in word)


def is_number_or_day(word: str) -> bool:
    """A count, a clock time's part, a DAY id or a day's name: a checkable fact."""
    return _has_digit(word) or word in _DAY_NAMES


def is_fact(word: str) -> bool:
    """A stemmed word that states a fact: the world's names, a number, a day."""
    return word in fact_words() or is_number_or_day(word)


def user_texts(annotations: Mapping[str, Any]) -> list[str]:
    """What the query itself carried from the user: the registration, the ERA question
    and its options. Repeating it shows no memory of what happened."""
    out: list[str] = []
    registration = annotations.get("registration_event")
    if isinstance(registration, Mapping) and isinstance(registration.get("registration_text"), str):
        out.append(registration["registration_text"])
    if isinstance(annotations.get("question"), str):
        out.append(annotations["question"])
    for choice in annotations.get("choices") or []:
        if isinstance(choice, Mapping) and isinstance(choice.get("text"), str):
            out.append(choice["text"])
    return out


def wanted_facts(annotations: Mapping[str, Any]) -> list[str]:
    """The facts a good answer states, the only ones that earn: the reference texts' world
    facts and numbers (a day, a count); their other words are one way to phrase them."""
    wanted = [w for w in terms(" ".join(reference_texts(annotations))) if is_fact(w)]
    if (annotations.get("this_probe") or {}).get("polarity") != "positive":
        # "The PLATE has not been picked up." restates the reminder the user registered;
        # copying the reminder into a silence reason earned its facts (version 7).
        given = set(terms(" ".join(user_texts(annotations))))
        wanted = [w for w in wanted if w not in given]
    return wanted


def wrong_facts(annotations: Mapping[str, Any], said: set[str]) -> list[str]:
    """The facts `said` names that the candidate cannot support: a world fact none of its
    annotations holds (they are never wrong), a number or day no reference text holds (the
    annotations' clock times would excuse almost any number)."""
    known = set(terms(json.dumps(annotations)))
    referenced = set(terms(" ".join(reference_texts(annotations))))
    wrong = {w for w in said if w in fact_words() and w not in known}
    wrong |= {w for w in said if is_number_or_day(w) and w not in referenced}
    return sorted(wrong)


def score_of(share: float, stated_any: bool) -> int:
    if not stated_any:
        return 1
    # Thirds earned whole, not rounded: rounding gave a point for a sixth of the facts,
    # which a response of every word the references use reaches on a silence probe.
    return 2 + min(3, int(3 * share + 1e-9))


def verdict(task: str, annotations: Mapping[str, Any], response: str) -> dict[str, Any]:
    """The rubric's JSON object for one gate-passing probe."""
    texts = reference_texts(annotations)
    wanted = wanted_facts(annotations)
    said = set(terms(response))
    stated = [t for t in wanted if t in said]
    missing = [t for t in wanted if t not in said]
    wrong = wrong_facts(annotations, said)
    # Facts earn only where the reference wants them; any other fact is content, not glue.
    # With the slack covering them too, a bag of the options, the registration and what
    # the system sees let a few right facts ride on many free ones (version 7).
    unwanted = {w for w in said if is_fact(w)} - set(wanted)
    glue = len(said) - len(stated) - len(unwanted)
    charged = len(stated) + len(unwanted) + max(0, glue - SLACK)
    # Precision as well as recall: every fact word and every glue word past the few a
    # sentence needs (SLACK) dilutes the share, so appending words never pays.
    room = max(len(wanted), charged)
    # A wrong fact cancels a right one: with it merely diluting, guessing a place beside
    # the right object scored no lower than not guessing, a free bet (version 5).
    share = max(0, len(stated) - len(wrong)) / room if wanted else 0.0
    if wanted:
        score = score_of(share, bool(said))
    elif texts:
        # "Nothing has been picked up yet.": a reference naming no fact, a template any
        # system can copy (or, on a silence probe, naming only the user's own words); any
        # reason is the generic one it is, or a fixed string scores 5.
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
    if charged > len(wanted) and wanted:
        issues.append(f"{charged} charged words for {len(wanted)} facts")
    if wrong:
        issues.append("names facts the reference does not hold: " + ", ".join(wrong))
    if not texts:
        issues = ["the annotations hold no reference text for this probe"]
    elif not wanted:
        issues = ["the reference names no fact beyond the user's own: any reason is a generic one"]
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
        # The generator's name and version only: its record also holds the dataset's seed,
        # and the identity is written into every scored run's report (a drawn seed that
        # reached a published report would rebuild every label).
        made_by = {k: generator[k] for k in ("name", "version", "preset") if k in generator}
        self.identity: dict[str, Any] = {**self.cache_identity, "generator": made_by}
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
