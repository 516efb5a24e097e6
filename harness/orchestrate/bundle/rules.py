"""The rules `apmbench-grpc verify` checks a bundle against, each one a function that
returns a `RuleResult`: pass, fail or not applicable, why, and each problem found naming
the file (and record, or field) it is in.

This module holds the rules that read the bundle alone (its index, its members, the
predictions' seal, the timings); the ones that re-score it are in rescore.py.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from apmbench.harness.json_types import JSON, JsonObject
from apmbench.harness.orchestrate.bundle import timing
from apmbench.harness.orchestrate.bundle.archive import (
    INDEX_NAME,
    MANIFEST_NAME,
    PREDICTIONS_NAME,
    REPORT_NAME,
    SUITES_PAGE,
    Bundle,
    bundle_id,
    summary,
)
from apmbench.harness.run import seal
from apmbench.harness.run.manifest import Manifest

SHOWN_PROBLEMS = 50
"""Problems listed per rule (the count says how many more there were)."""


class Outcome(enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "n/a"


@dataclass(frozen=True)
class RuleResult:
    """One rule's verdict on a bundle."""

    rule: str
    """Its short name (index, members, seal, numbers, records, blind-score, timing)."""
    title: str
    """What it checks, in a few words."""
    outcome: Outcome
    reason: str
    """Why, in a sentence (the numbers it saw included)."""
    problems: tuple[str, ...] = ()
    """Each problem found, naming the file and the record or field (failures only)."""
    facts: JsonObject = field(default_factory=dict)
    """Numbers a reader may want (the headline of a blind score, counts)."""
    run: str = ""
    """The run it is about, in a bundle of several (its suite's folder); "" otherwise."""

    def of_run(self, run: str) -> RuleResult:
        """This verdict about the run at `run` (a prefix "<suite>/" or "")."""
        return replace(self, run=run.rstrip("/"))

    def as_dict(self) -> JsonObject:
        return {
            "rule": self.rule,
            "run": self.run,
            "title": self.title,
            "outcome": self.outcome.value,
            "reason": self.reason,
            "problems": list(self.problems),
            "facts": self.facts,
        }


def passed(rule: str, title: str, reason: str, **facts: JSON) -> RuleResult:
    return RuleResult(rule, title, Outcome.PASS, reason, (), dict(facts))


def not_applicable(rule: str, title: str, reason: str) -> RuleResult:
    return RuleResult(rule, title, Outcome.NOT_APPLICABLE, reason)


def failed(rule: str, title: str, problems: Sequence[str], lead: str = "") -> RuleResult:
    shown = tuple(problems[:SHOWN_PROBLEMS])
    more = len(problems) - len(shown)
    reason = lead or f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
    reason += f": {shown[0]}" if shown else ""
    if more:
        shown += (f"... and {more} more",)
    return RuleResult(rule, title, Outcome.FAIL, reason, shown)


def manifest_of(bundle: Bundle) -> Manifest | None:
    data = bundle.json(MANIFEST_NAME)
    return Manifest.of(data) if isinstance(data, dict) else None


# -- the index --------------------------------------------------------------------------

INDEX = "index"
INDEX_TITLE = f"{INDEX_NAME}: its id, its entries, its summary of each run"


def _entries(index: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    listed = index.get("members")
    if not isinstance(listed, list):
        return [], [f"{INDEX_NAME}: no member list"]
    entries: list[dict[str, Any]] = []
    problems: list[str] = []
    seen: set[str] = set()
    for k, entry in enumerate(listed):
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("path"), str)
            and isinstance(entry.get("sha256"), str)
            and isinstance(entry.get("size"), int)
        ):
            problems.append(f"{INDEX_NAME}: member entry {k} is not a path, sha256 and size")
            continue
        if entry["path"] in seen:
            problems.append(f"{INDEX_NAME}: {entry['path']} is listed twice")
        seen.add(entry["path"])
        entries.append(entry)
    return entries, problems


def _runs_named(bundle: Bundle) -> str:
    runs = bundle.runs
    if runs == [""]:
        return "the run"
    return f"{len(runs)} runs ({', '.join(r.rstrip('/') for r in runs)})"


def _runs_as_listed(bundle: Bundle) -> list[str]:
    """The index's `suites` and `runs` are what each bundled manifest.json says."""
    listed = bundle.index.get("runs")
    stated = (
        {str(r.get("dir")): r for r in listed if isinstance(r, dict)}
        if isinstance(listed, list)
        else {}
    )
    found = bundle.runs
    if not found:
        return [f"{MANIFEST_NAME}: not in the bundle (every bundle of a run holds one)"]
    problems = []
    if sorted(stated) != found:
        problems.append(
            f"{INDEX_NAME}: runs at {sorted(stated)!r}, but the bundle holds manifests at {found!r}"
        )
    suites: list[str] = []
    for prefix in found:
        name = f"{prefix}{MANIFEST_NAME}"
        manifest = manifest_of(bundle.run(prefix))
        if manifest is None:
            problems.append(f"{name}: not a JSON object")
            continue
        expected = {"dir": prefix, **summary(manifest, bundle.run(prefix).blind)}
        suites.append(str(expected["suite"]))
        entry = stated.get(prefix, {})
        problems += [
            f"{INDEX_NAME}: runs[{prefix!r}].{key} is {entry.get(key)!r}, but {name} says "
            f"{expected[key]!r}"
            for key in sorted(expected)
            if entry.get(key) != expected[key]
        ]
    stated_suites = bundle.index.get("suites")
    if not isinstance(stated_suites, list) or sorted(str(x) for x in stated_suites) != sorted(
        suites
    ):
        problems.append(
            f"{INDEX_NAME}: suites {bundle.index.get('suites')!r}, but the manifests say {suites!r}"
        )
    return problems


def check_index(bundle: Bundle) -> RuleResult:
    """The id is the sha256 of the canonical index; the entries are well formed; what the
    index says of the run is what manifest.json says."""
    index = bundle.index
    problems: list[str] = []
    computed = bundle_id(index)
    if index.get("id") != computed:
        problems.append(
            f"{INDEX_NAME}: the id {str(index.get('id'))[:16]}... is not the sha256 of the "
            f"canonical index ({computed[:16]}...): the index was edited after bundling"
        )
    entries, entry_problems = _entries(index)
    problems += entry_problems
    problems += _runs_as_listed(bundle)
    if problems:
        return failed(INDEX, INDEX_TITLE, problems)
    return passed(
        INDEX,
        INDEX_TITLE,
        f"the id is the sha256 of the canonical index; {len(entries)} members listed; its "
        f"summary of {_runs_named(bundle)} (suite, system, dataset hash, image) is "
        f"{MANIFEST_NAME}'s",
        id=computed,
    )


# -- the members ------------------------------------------------------------------------

MEMBERS = "members"
MEMBERS_TITLE = "every member's sha256 and size as the index lists them; none missing or extra"


def check_members(bundle: Bundle) -> RuleResult:
    entries, _ = _entries(bundle.index)
    listed = {e["path"]: e for e in entries}
    problems = list(bundle.anomalies)
    total = cut = 0
    for name, entry in listed.items():
        data = bundle.members.get(name)
        if data is None:
            problems.append(f"{name}: listed in the index, missing from the bundle")
            continue
        total += len(data)
        cut += "cut" in entry
        digest = hashlib.sha256(data).hexdigest()
        if len(data) != entry["size"] or digest != entry["sha256"]:
            problems.append(
                f"{name}: changed after bundling (sha256 {digest[:12]}..., {len(data)} bytes; "
                f"the index says {str(entry['sha256'])[:12]}..., {entry['size']} bytes)"
            )
    problems += [
        f"{name}: in the bundle, not in the index (added after bundling)"
        for name in sorted(bundle.members)
        if name not in listed
    ]
    if not bundle.runs:
        problems.append(f"{MANIFEST_NAME}: not in the bundle (every bundle of a run holds it)")
    for prefix in bundle.runs:
        needed = prefix + (PREDICTIONS_NAME if bundle.run(prefix).blind else REPORT_NAME)
        if needed not in listed and needed not in bundle.members:
            problems.append(f"{needed}: not in the bundle (every run's bundle holds it)")
    if problems:
        return failed(MEMBERS, MEMBERS_TITLE, problems)
    logs = f"; {cut} log{'s' if cut != 1 else ''} cut to the index's bound" if cut else ""
    return passed(
        MEMBERS,
        MEMBERS_TITLE,
        f"{len(listed)} members, {total:,} bytes: each one's sha256 and size are the index's{logs}",
        members=len(listed),
        bytes=total,
    )


# -- the predictions' seal --------------------------------------------------------------

SEAL = "seal"
SEAL_TITLE = "predictions.json's hash chain; manifest.json and trajectories/ agree with it"


def predictions_of(bundle: Bundle) -> dict[str, Any] | None:
    """predictions.json when it is a sealed predictions file, else None (its records are
    read as `sealed_records` reads them: any JSON, each key checked where it is used)."""
    from apmbench.harness.orchestrate.blind import PREDICTIONS_FORMAT, PREDICTIONS_VERSION

    data = bundle.json(PREDICTIONS_NAME)
    if not isinstance(data, dict) or data.get("format") != PREDICTIONS_FORMAT:
        return None
    return dict(data) if data.get("version") == PREDICTIONS_VERSION else None


def _agree(name: str, sealed: Mapping[str, object], recorded: Mapping[str, object]) -> list[str]:
    """Where `recorded` differs from `sealed` on a key the seal covers."""
    return [
        f"{name}: {key} differs from the sealed prediction"
        for key in sorted(sealed)
        if key in sealed and recorded.get(key) != sealed[key]
    ]


def _trajectories_agree(bundle: Bundle, predictions: Mapping[str, Any]) -> list[str]:
    """A blind run's trajectories/*.json hold what the predictions hold (and the stand-in
    grading the predictions leave out): each predicted record is theirs, key for key."""
    problems: list[str] = []
    predicted: set[str] = set()
    for t in predictions.get("trajectories") or []:
        tid = str(t.get("trajectory_id"))
        name = f"trajectories/{tid}.json"
        predicted.add(name)
        recorded = bundle.json(name)
        if name not in bundle.members:
            continue  # a predictions file alone is a whole blind submission
        if not isinstance(recorded, dict):
            problems.append(f"{name}: not a JSON object")
            continue
        sealed = dict(t.get("record") or {})
        sealed_rows = sealed.pop("instances", None) or []
        rows = recorded.get("instances")
        rows = rows if isinstance(rows, list) else []
        problems += _agree(name, sealed, recorded)
        if len(rows) != len(sealed_rows):
            problems.append(f"{name}: {len(rows)} records, the predictions {len(sealed_rows)}")
            continue
        for row, want in zip(rows, sealed_rows, strict=True):
            where = f"{name}: {tid}/{want.get('segment')}/{want.get('instance_id')}"
            problems += _agree(where, want, row if isinstance(row, dict) else {})
    problems += [
        f"{name}: a trajectory the predictions do not hold"
        for name in sorted(bundle.members)
        if name.startswith("trajectories/") and name not in predicted
    ]
    return problems


def check_seal(bundle: Bundle) -> RuleResult:
    from apmbench.harness.orchestrate.blind import sealed_records

    if not bundle.blind:
        return not_applicable(
            SEAL,
            SEAL_TITLE,
            "not a blind run (no predictions.json): an ordinary run's records carry no seal; "
            "its numbers are re-derived from them instead",
        )
    predictions = predictions_of(bundle)
    if predictions is None:
        return failed(
            SEAL,
            SEAL_TITLE,
            [f"{PREDICTIONS_NAME}: not a sealed predictions file (format or version)"],
        )
    sealed = sealed_records(predictions)
    problems = [f"{PREDICTIONS_NAME}: {p}" for p in seal.breaks(predictions.get("seal"), sealed)]
    manifest = bundle.json(MANIFEST_NAME)
    sealed_manifest = predictions.get("manifest")
    if isinstance(manifest, dict) and isinstance(sealed_manifest, dict):
        # The run adds `finished_at` to manifest.json after it seals the predictions.
        problems += _agree(MANIFEST_NAME, sealed_manifest, manifest)
    problems += _trajectories_agree(bundle, predictions)
    if problems:
        return failed(SEAL, SEAL_TITLE, problems)
    return passed(
        SEAL,
        SEAL_TITLE,
        f"{len(sealed)} records sealed ({seal.ALGORITHM}), none changed, added or removed; "
        f"{MANIFEST_NAME} and trajectories/ agree with them (the seal has no key: a "
        "re-sealed edit passes it)",
        records=len(sealed),
    )


# -- timings ----------------------------------------------------------------------------

TIMING = "timing"
TIMING_TITLE = "every answer's recorded times could have been measured"


def trajectory_records(bundle: Bundle) -> list[JsonObject]:
    """The records the numbers rest on: the predictions' for a blind run, else
    trajectories/*.json."""
    if bundle.blind:
        predictions = predictions_of(bundle) or {}
        out: list[JsonObject] = []
        for t in predictions.get("trajectories") or []:
            rec = t.get("record") if isinstance(t, dict) else None
            if isinstance(rec, dict):
                out.append(rec)
        return out
    recs = [
        bundle.json(name)
        for name in sorted(bundle.members)
        if name.startswith("trajectories/") and name.endswith(".json")
    ]
    return [r for r in recs if isinstance(r, dict)]


def check_timing(bundle: Bundle) -> RuleResult:
    recs = trajectory_records(bundle)
    source = PREDICTIONS_NAME if bundle.blind else "trajectories/"
    if not recs:
        return failed(TIMING, TIMING_TITLE, [f"{source}: no trajectory record to check"])
    recorded = manifest_of(bundle)
    found = timing.check_timings(recs, None if recorded is None else recorded.live_speed)
    if found.flags:
        problems = [f"{source} {f.where}: {f.problem}" for f in found.flags]
        return failed(
            TIMING,
            TIMING_TITLE,
            problems,
            lead=f"{len(found.flags)} of {found.answers} answers' and {found.sessions} "
            "sessions' times are implausible",
        )
    fastest = "" if found.fastest_s is None else f"; fastest first token {found.fastest_s:.6f} s"
    return passed(
        TIMING,
        TIMING_TITLE,
        f"{found.answers} answers and {found.sessions} sessions in {source}: every time "
        f"positive and in order (first token <= answer <= end of stream), none under "
        f"{timing.MIN_LATENCY_S:g} s, no stream over {timing.MAX_CHUNKS_PER_S:,} chunks/s"
        f"{fastest}",
        answers=found.answers,
        fastest_s=found.fastest_s,
    )


# -- the page of a multi-suite run -----------------------------------------------------

PAGE = "suites-page"
PAGE_TITLE = "suites.json's headline per suite is that run's report.json's"


def check_suites_page(bundle: Bundle) -> RuleResult:
    """`evaluate --benchmark all` writes each suite's headline beside its runs: they must be
    what each (re-derived) report.json gives."""
    from dataclasses import asdict

    from apmbench.harness.suites import get_suite

    if bundle.runs == [""]:
        return not_applicable(PAGE, PAGE_TITLE, "one run: no page across suites")
    page = bundle.json(SUITES_PAGE)
    listed = page.get("suites") if isinstance(page, dict) else None
    if not isinstance(listed, list):
        return failed(PAGE, PAGE_TITLE, [f"{SUITES_PAGE}: missing, or not the suites page"])
    problems: list[str] = []
    named = sorted(f"{e.get('name')}/" for e in listed if isinstance(e, dict))
    if named != bundle.runs:
        problems.append(f"{SUITES_PAGE}: names runs {named!r}, the bundle holds {bundle.runs!r}")
    for entry in listed:
        if not isinstance(entry, dict):
            continue
        name = str(entry.get("name"))
        report = bundle.json(f"{name}/{REPORT_NAME}")
        if not isinstance(report, dict):
            continue  # the members and numbers rules name it
        given = entry.get("headline")
        given = given if isinstance(given, dict) else {}
        derived = asdict(get_suite(name).report_format().headline(report))
        problems += [
            f"{SUITES_PAGE}: {name}: headline.{key} is {given.get(key)!r}, its report.json "
            f"gives {value!r}"
            for key, value in sorted(derived.items())
            if given.get(key) != value
        ]
    if problems:
        return failed(PAGE, PAGE_TITLE, problems)
    return passed(
        PAGE,
        PAGE_TITLE,
        f"{len(listed)} suites: each headline (utility, mean time to first token, storage per "
        "hour) is the one its report.json gives",
    )


def dumps(results: Sequence[RuleResult], head: Mapping[str, JSON]) -> str:
    """The verification as JSON (verify --json)."""
    body = {**head, "rules": [r.as_dict() for r in results]}
    return json.dumps(body, indent=2, sort_keys=True) + "\n"
