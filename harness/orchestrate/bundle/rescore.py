"""The rules that score a bundle again: every number of report.json and every derived
record re-derived from the raw records, and a blind bundle's predictions scored with the
private labels.

Re-derivation runs the machinery `apmbench-grpc score` runs (harness/orchestrate/scoring.py)
on the run directory extracted into a temporary folder, with a fresh, empty judge cache
(a bundle holds none: a re-score must not trust one). The judge is the one the manifest
records when it is deterministic (the synthetic reference judge, or none); an LLM judge
is not called unless verify is given --judge, and the numbers that rest on it are
reported as not re-derived.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from apmbench.adapters.sdk.errors import ApmbenchError
from apmbench.harness.errors import DatasetError, JudgeError, RunDirError
from apmbench.harness.json_types import JSON
from apmbench.harness.orchestrate.bundle.archive import (
    MANIFEST_NAME,
    PREDICTIONS_NAME,
    REPORT_NAME,
    Bundle,
)
from apmbench.harness.orchestrate.bundle.rules import (
    RuleResult,
    failed,
    manifest_of,
    not_applicable,
    passed,
)
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.scoring.judge import JudgeConfig
from apmbench.harness.suites import base, datasets
from apmbench.harness.suites.base import OpaqueSuite, SuiteDataset

JudgeChoice = Callable[[JudgeConfig], JudgeConfig]
"""The judge to score with, given the one the run recorded (verify's --judge options)."""

LLM_JUDGES = ("openai", "transformers")
"""Judges whose verdicts verify does not ask for again unless told to (they cost, and an
LLM's replies are not bit-for-bit reproducible)."""

IGNORED = frozenset({"scoring.judge_settings.cache_dir"})
"""report.json fields that say where something was, not what was scored: the judge cache
of the original scoring (verify's is a fresh temporary one)."""

JUDGE_SETTINGS = ("scoring", "header.judge")
"""report.json subtrees that name the judge and its settings: with an LLM judge not asked
again they describe the judge verify did not use, and are not compared."""
JUDGE_SUMMARY = ("judge",)
"""report.json subtrees that count the judge's verdicts: with an LLM judge not asked again,
their numbers are among those not re-derived."""

DERIVED = ("instances.jsonl", "sessions.jsonl")
REPORT_MD = "report.md"


@dataclass(frozen=True)
class RescoreOptions:
    """What verify re-scores with."""

    dataset: Path | None = None
    """The run's dataset, when it is not where the manifest says (or regenerable)."""
    labels: Path | None = None
    """The private part of a split, for a blind bundle."""
    judge: JudgeChoice | None = None
    """None: the recorded judge where it is deterministic, else none."""


NUMBERS = "numbers"
NUMBERS_TITLE = "every number of report.json re-derived from the records"
RECORDS = "records"
RECORDS_TITLE = "instances.jsonl, sessions.jsonl and report.md as re-scoring writes them"
BLIND = "blind-score"
BLIND_TITLE = "the predictions scored against the private labels (--labels)"

_ABSENT = object()

UNREADABLE = (ApmbenchError, ValueError, KeyError, TypeError, AttributeError, OSError)
"""What scoring raises on records it cannot use: the harness's own errors, and a record
that is not JSON or lacks a field (a bundle comes from elsewhere: an edited member is a
verdict, not a traceback)."""


def unreadable(e: BaseException) -> str:
    if isinstance(e, ApmbenchError):
        return str(e)
    return f"a record the scoring cannot read ({type(e).__name__}: {e})"


def extract(bundle: Bundle, root: Path) -> Path:
    """The run directory of a bundle, as far as scoring reads it: manifest.json,
    trajectories/*.json and predictions.json (read_bundle refused unsafe names)."""
    root.mkdir(parents=True, exist_ok=True)
    for name, data in bundle.members.items():
        if name in (MANIFEST_NAME, PREDICTIONS_NAME) or (
            name.startswith("trajectories/") and name.count("/") == 1 and name.endswith(".json")
        ):
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return root


def run_dataset(
    suite: OpaqueSuite, manifest: Manifest, override: Path | None, labels: Path | None = None
) -> SuiteDataset:
    """The labelled dataset the run used: `override`, else where the manifest says, else a
    synthetic one generated again from its recorded preset and seed; its content hash must
    be the run's. A scored blind run (`score --labels`) was scored with a private part:
    that part (`labels`), whose split record must name the hash the manifest recorded."""
    from apmbench.harness.orchestrate.blind import read_labels
    from apmbench.harness.orchestrate.scoring import dataset_for_run

    scored_with = manifest.raw.get("labels")
    if isinstance(scored_with, dict):
        if labels is None:
            raise DatasetError(
                "a blind run scored with a split's labels: its numbers are re-derived with "
                "them: pass --labels PRIVATE (the private part it was scored with)"
            )
        record = read_labels(labels)
        if record.get("dataset_hash") != scored_with.get("dataset_hash"):
            raise DatasetError(
                f"{labels} holds the labels of dataset {str(record.get('dataset_hash'))[:12]}..., "
                f"but the run was scored with {str(scored_with.get('dataset_hash'))[:12]}...: "
                "pass the private part it was scored with"
            )
        labelled: SuiteDataset = datasets.load_labels(suite, labels)
        return labelled
    if override is not None:
        return dataset_for_run(suite, manifest, override)
    recorded = manifest.dataset_path
    synthetic = manifest.synthetic
    if recorded and Path(recorded).is_dir():
        try:
            return dataset_for_run(suite, manifest, None)
        except DatasetError:
            if synthetic is None or synthetic.preset is None:
                raise
    if synthetic is not None and synthetic.preset is not None:
        return dataset_for_run(
            suite, manifest, datasets.synthetic(suite, synthetic.preset, synthetic.seed)
        )
    raise DatasetError(
        f"the run's dataset ({recorded or 'no path recorded'}) is not on this machine: pass "
        "--dataset DIR pointing at a copy of it (its hash must be the run's)"
    )


def _leaves(value: object, path: str = "") -> dict[str, object]:
    """Every leaf of a JSON value by its dotted path (`overall.score`, `rows[3]`)."""
    if isinstance(value, dict) and value:
        out: dict[str, object] = {}
        for k, v in value.items():
            out.update(_leaves(v, f"{path}.{k}" if path else str(k)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, v in enumerate(value):
            out.update(_leaves(v, f"{path}[{i}]"))
        return out
    return {path: value}


def _under(path: str, roots: Sequence[str]) -> bool:
    return any(path == r or path.startswith((f"{r}.", f"{r}[")) for r in roots)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def _shown(value: object) -> str:
    return "absent" if value is _ABSENT else json.dumps(value)[:80]


@dataclass(frozen=True)
class _Compared:
    problems: list[str]
    numbers: int
    """Numbers compared and found equal."""
    not_rederived: list[str]
    """Fields whose number rests on a judge that was not asked again."""


def compare_reports(bundled: object, rederived: object, judged_again: bool) -> _Compared:
    """Field by field. With the judge asked again, every leaf must be equal; without it
    (an LLM judge), every number must be, but a number the judge gave is not re-derived."""
    have, want = _leaves(bundled), _leaves(rederived)
    problems, not_rederived = [], []
    numbers = 0
    for path in sorted(set(have) | set(want)):
        if path in IGNORED:
            continue
        a, b = have.get(path, _ABSENT), want.get(path, _ABSENT)
        if not judged_again:
            if _under(path, JUDGE_SETTINGS) or not (_is_number(a) or _is_number(b)):
                continue
            if _is_number(a) and not _same(a, b):
                # Null or absent without the judge, or a verdict count the judge changes.
                if b is None or b is _ABSENT or _under(path, JUDGE_SUMMARY):
                    not_rederived.append(path)
                    continue
            elif _under(path, JUDGE_SUMMARY) and not _is_number(a):
                continue  # a count of verdicts the judge was not asked for
        if _same(a, b):
            numbers += _is_number(a)
            continue
        problems.append(f"{REPORT_NAME}: {path} is {_shown(a)}, re-derived {_shown(b)}")
    return _Compared(problems, numbers, not_rederived)


def _rows(text: str, name: str, problems: list[str]) -> list[dict[str, object]]:
    rows = []
    for k, line in enumerate(text.splitlines(), 1):
        try:
            row = json.loads(line)
        except ValueError:
            problems.append(f"{name} line {k}: not JSON")
            continue
        rows.append(row if isinstance(row, dict) else {})
    return rows


def compare_rows(
    name: str,
    bundled: str,
    rederived: Sequence[Mapping[str, object]],
    judged: Mapping[str, frozenset[str]] | None = None,
) -> list[str]:
    """Row by row, every key; `judged`: instance id -> the keys a judge not asked again
    writes in that row, left out of its comparison."""
    problems: list[str] = []
    have = _rows(bundled, name, problems)
    if len(have) != len(rederived):
        problems.append(f"{name}: {len(have)} rows, re-derived {len(rederived)}")
        return problems
    for k, (row, want) in enumerate(zip(have, rederived, strict=True), 1):
        where = want.get("instance_id") or want.get("session_id") or f"line {k}"
        keys = (set(row) | set(want)) - (judged or {}).get(str(where), frozenset())
        problems += [
            f"{name}: {where}: {key} is {_shown(row.get(key, _ABSENT))}, re-derived "
            f"{_shown(want.get(key, _ABSENT))}"
            for key in sorted(keys)
            if not _same(row.get(key, _ABSENT), want.get(key, _ABSENT))
        ]
    return problems


def _first_line_apart(a: str, b: str) -> str:
    for k, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False), 1):
        if x != y:
            return f"line {k} is {x[:60]!r}, re-derived {y[:60]!r}"
    return f"{len(a.splitlines())} lines, re-derived {len(b.splitlines())}"


def judge_written_keys(
    suite: OpaqueSuite, data: SuiteDataset, graded: Sequence[Mapping[str, object]]
) -> dict[str, frozenset[str]]:
    """For each row the suite would ask the judge about: the keys a verdict writes in it.
    Found by applying a stand-in verdict to copies of the rows (no judge is called), so
    every other key of a judged row is still compared."""
    from apmbench.harness.scoring.judge.judging import JudgeOutcome

    judging = suite.grading().judging
    if judging is None:
        return {}
    marked = [dict(r) for r in graded]
    asked = {r.instance_id for r in judging.requests(data, marked)}
    probed = [dict(r) for r in marked]
    stand_in = JudgeOutcome("scored", score=-1, verdict={"stand_in": True}, attempts=-1)
    judging.apply(probed, dict.fromkeys(asked, stand_in))
    out: dict[str, frozenset[str]] = {}
    for before, after in zip(marked, probed, strict=True):
        iid = str(before.get("instance_id"))
        if iid in asked:
            keys = set(before) | set(after)
            out[iid] = frozenset(k for k in keys if before.get(k, _ABSENT) != after.get(k, _ABSENT))
    return out


def rederive(bundle: Bundle, options: RescoreOptions, work: Path) -> list[RuleResult]:
    """The `numbers` and `records` rules."""
    if bundle.blind:
        why = (
            "a blind run has no report: its predictions are scored where the labels are "
            "(--labels PRIVATE)"
        )
        return [
            not_applicable(NUMBERS, NUMBERS_TITLE, why),
            not_applicable(RECORDS, RECORDS_TITLE, why),
        ]
    try:
        return _rederive(bundle, options, work)
    except UNREADABLE as e:
        lead = "cannot re-derive the numbers"
        return [
            failed(NUMBERS, NUMBERS_TITLE, [unreadable(e)], lead=lead),
            failed(RECORDS, RECORDS_TITLE, [unreadable(e)], lead=lead),
        ]


def _rederive(bundle: Bundle, options: RescoreOptions, work: Path) -> list[RuleResult]:
    from apmbench.harness.orchestrate.scoring import (
        load_instances,
        recorded_judge,
        score_run,
        suite_of_run,
    )
    from apmbench.harness.run import records
    from apmbench.harness.scoring.judge import open_judge

    manifest = manifest_of(bundle)
    if manifest is None:
        raise RunDirError(f"{MANIFEST_NAME}: missing, or not a JSON object")
    bundled_report = bundle.json(REPORT_NAME)
    if not isinstance(bundled_report, dict):
        raise RunDirError(f"{REPORT_NAME}: missing, or not a JSON object")
    suite = suite_of_run(manifest)
    data = run_dataset(suite, manifest, options.dataset, options.labels)
    recorded = recorded_judge(manifest)
    skipped: str | None = None
    if options.judge is not None:
        config = options.judge(recorded)
    elif recorded.kind in LLM_JUDGES:
        # The LLM judge is not re-run; how answers are read stays the run's.
        config, skipped = JudgeConfig(strict_answers=recorded.strict_answers), recorded.kind
    else:
        config = recorded
    if options.judge is None or config.cache_dir is None:
        # A fresh cache in the extracted run directory: nothing of the submitter's is read.
        config = replace(config, cache_dir=None)
    run = records.RunDir(extract(bundle, work / "run"))
    graded, _ = load_instances(run, suite, data)
    judged = None if skipped is None else judge_written_keys(suite, data, graded)
    backend = open_judge(config, lambda: base.reference_judge(suite, data.root))
    try:
        score_run(run, suite, data, config, backend)
    finally:
        if backend is not None:
            backend.close()
    rederived = json.loads((run.root / REPORT_NAME).read_text())
    judged_again = skipped is None
    by_status = rederived.get("judge", {}).get("by_status", {}) if judged_again else {}
    if isinstance(by_status, dict) and by_status.get("error"):
        # The verifier's judge failed, not the bundle: say so rather than list its nulls.
        raise JudgeError(
            f"the judge ({config.kind}) could not be reached for {by_status['error']} probes: "
            "fix it (URL, key, server) and verify again"
        )
    compared = compare_reports(bundled_report, rederived, judged_again)
    judge = config.kind if judged_again else f"none (the run's {skipped} judge not asked)"
    if compared.problems:
        numbers = failed(NUMBERS, NUMBERS_TITLE, compared.problems)
    else:
        rest = ""
        if compared.not_rederived:
            rest = (
                f"; {len(compared.not_rederived)} rest on the run's {skipped} judge and are "
                f"not re-derivable without it (pass --judge to ask it again): "
                + ", ".join(compared.not_rederived[:8])
                + (", ..." if len(compared.not_rederived) > 8 else "")
            )
        numbers = passed(
            NUMBERS,
            NUMBERS_TITLE,
            f"{compared.numbers} numbers re-derived from the records (judge: {judge}, with an "
            f"empty cache) equal report.json's{rest}",
            compared=compared.numbers,
            not_rederived=list[JSON](compared.not_rederived),
        )
    problems: list[str] = []
    for name in DERIVED:
        if name not in bundle.members:
            problems.append(f"{name}: not in the bundle")
            continue
        text = bundle.members[name].decode("utf-8", errors="replace")
        rows = _rows((run.root / name).read_text(), name, [])
        problems += compare_rows(name, text, rows, judged if name == "instances.jsonl" else None)
    md_note = ""
    if judged_again:
        md = bundle.members.get(REPORT_MD)
        again = (run.root / REPORT_MD).read_bytes()
        if md is None:
            problems.append(f"{REPORT_MD}: not in the bundle")
        elif md != again:
            problems.append(
                f"{REPORT_MD}: not the report re-rendered from the records ("
                + _first_line_apart(md.decode("utf-8", errors="replace"), again.decode())
                + ")"
            )
    else:
        md_note = f"; report.md shows the {skipped} judge's numbers: not re-derived"
    if problems:
        return [numbers, failed(RECORDS, RECORDS_TITLE, problems)]
    return [
        numbers,
        passed(
            RECORDS,
            RECORDS_TITLE,
            f"{len(graded)} instance rows and the session rows are what the records "
            f"re-derive to{md_note}",
        ),
    ]


def blind_score(bundle: Bundle, options: RescoreOptions, work: Path) -> RuleResult:
    """Score a blind bundle's predictions with the private labels (as `score --labels`)."""
    from apmbench.harness.orchestrate.blind import score_predictions
    from apmbench.harness.scoring.judge import open_judge
    from apmbench.harness.suites import get_suite

    if not bundle.blind:
        why = "not a blind run: its numbers are re-derived by the numbers rule"
        if options.labels is not None:
            why = "--labels given, but " + why
        return not_applicable(BLIND, BLIND_TITLE, why)
    if options.labels is None:
        return not_applicable(
            BLIND, BLIND_TITLE, "no --labels: pass the private part of the split to score it"
        )
    config = options.judge(JudgeConfig()) if options.judge is not None else JudgeConfig()
    predictions = extract(bundle, work / "blind") / PREDICTIONS_NAME
    try:
        report = score_predictions(
            predictions,
            options.labels,
            work / "scored",
            config,
            lambda suite, data: open_judge(config, lambda: base.reference_judge(suite, data.root)),
        )
        suite = get_suite(str(json.loads(predictions.read_text()).get("benchmark")))
    except UNREADABLE as e:
        return failed(BLIND, BLIND_TITLE, [unreadable(e)], lead="the predictions cannot be scored")
    head = suite.report_format().headline(report)
    utility = "n/c" if head.utility is None else f"{head.utility:.2f}"
    ttft = "n/c" if head.ttft_mean_s is None else f"{head.ttft_mean_s:.4f} s"
    storage = (
        "n/c" if head.storage_per_hour_bytes is None else f"{head.storage_per_hour_bytes:,.0f}"
    )
    return passed(
        BLIND,
        BLIND_TITLE,
        f"scored with the labels (judge: {config.kind}): {head.utility_label} {utility}; "
        f"mean time to first token {ttft}; storage {storage} bytes per hour",
        utility=head.utility,
        utility_label=head.utility_label,
        ttft_mean_s=head.ttft_mean_s,
        storage_per_hour_bytes=head.storage_per_hour_bytes,
    )
