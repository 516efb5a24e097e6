"""Scoring a run directory: re-grade the raw outputs, judge, write the report.

Used at the end of `evaluate` and by `apmbench-grpc score RUN_DIR`, so a
re-score gives exactly what the original run would have given with the same
code, dataset, judge and cache. Only the derived files are rewritten
(instances.jsonl, sessions.jsonl, report.json, report.md and the manifest's
"scoring" entry); the per-trajectory records stay as the run wrote them.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypedDict

from apmbench.harness.errors import DatasetError, RunDirError
from apmbench.harness.json_types import JSON, JsonObject
from apmbench.harness.orchestrate.plan_check import check_run_records
from apmbench.harness.reports.assemble import run_markdown, run_report
from apmbench.harness.reports.head import RunFacts
from apmbench.harness.run import live, records
from apmbench.harness.run.audits.persistence import compare_answers
from apmbench.harness.run.audits.summary import audit_summary
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.run.manifest import load as load_manifest
from apmbench.harness.scoring.answers import FAILURE, REPAIRED
from apmbench.harness.scoring.judge import ChatBackend, JudgeConfig
from apmbench.harness.scoring.judge.cache import ReplyCache
from apmbench.harness.scoring.judge.judging import judge_requests
from apmbench.harness.suites import DEFAULT, base, datasets, get_suite
from apmbench.harness.suites.base import (
    MutableRow,
    OpaqueSuite,
    ScoringRecord,
    ScoringSignature,
    SuiteDataset,
)

CACHE_DIR_NAME = "judge-cache"


class JudgeCalls(TypedDict):
    """What one judging pass cost: requests, calls to the model, replies from the cache."""

    requests: int
    model_calls: int
    cache_hits: int


def _templates_sha256(suite: OpaqueSuite) -> str | None:
    judging = suite.grading().judging
    return None if judging is None else judging.templates_sha256()


def scoring_record(
    suite: OpaqueSuite, config: JudgeConfig, backend: ChatBackend | None, variant: str | None = None
) -> ScoringRecord:
    """The judge's identity and settings, for the manifest and the report.

    `signature` holds what changes the numbers (the judge model and its reply
    settings, the retry bound, the judge's wording, the scoring schema);
    `compare` refuses runs whose signatures differ.
    """
    judge: JsonObject = backend.cache_identity if backend is not None else {"kind": "none"}
    signature: ScoringSignature = {
        "scoring_schema": suite.scoring_schema,
        "judge": judge,
        "judge_attempts": config.attempts if backend is not None else None,
        "judge_templates_sha256": _templates_sha256(suite) if backend is not None else None,
    }
    if config.strict_answers:
        signature["strict_answers"] = True
    if variant is not None:  # another condition's numbers: never compared with the suite's own
        signature["variant"] = variant
    return {
        "signature": signature,
        "judge": backend.identity if backend is not None else {"kind": "none"},
        "judge_settings": config.as_dict(),
    }


def recorded_judge(manifest: Manifest | Mapping[str, JSON]) -> JudgeConfig:
    """The judge a run was last scored with (`none` if it never had one)."""
    settings = Manifest.of(manifest).judge_settings
    return JudgeConfig.from_dict(dict(settings)) if settings else JudgeConfig()


def suite_of_run(manifest: Manifest | Mapping[str, JSON]) -> OpaqueSuite:
    """The suite a run was made with (runs older than suites are APM-Bench runs)."""
    return get_suite(Manifest.of(manifest).benchmark or DEFAULT)


def dataset_for_run(
    suite: OpaqueSuite, manifest: Manifest | Mapping[str, JSON], override: Path | None
) -> SuiteDataset:
    """The run's dataset, re-loaded and checked against the hash the run recorded."""
    record = Manifest.of(manifest)
    recorded = record.dataset_path
    path = override or (Path(recorded) if recorded else None)
    if path is None:
        raise DatasetError("the manifest records no dataset path: pass --dataset DIR")
    if not path.is_dir():
        raise DatasetError(
            f"the run's dataset {path} is missing: pass --dataset DIR pointing at a copy of it"
        )
    dataset = datasets.load(suite, path, record.variant)
    if dataset.content_hash != record.dataset_hash:
        raise DatasetError(
            f"the dataset at {path} has hash {dataset.content_hash[:12]}..., but the run was made "
            f"on {str(record.dataset_hash)[:12]}...: its labels may differ. Pass "
            "--dataset DIR pointing at the dataset the run used"
        )
    loaded: SuiteDataset = dataset
    return loaded


def load_instances(
    run: records.RunDir, suite: OpaqueSuite, dataset: SuiteDataset, strict: bool = False
) -> tuple[list[MutableRow], list[records.SessionRecord]]:
    """Every instance and session record, graded from its raw output; with `strict`
    (`--strict-answers`), an answer that needed repair is graded as no answer."""
    recs = graded_records(run, suite, dataset, strict)
    instances = [row for rec in recs for row in rec["instances"]]
    sessions = [s for rec in recs for s in rec["sessions"]]
    return instances, sessions


def graded_records(
    run: records.RunDir, suite: OpaqueSuite, dataset: SuiteDataset, strict: bool = False
) -> list[records.TrajectoryRecord]:
    """Every trajectory's record with its rows graded (and an audit's rerun compared with
    the run, graded alike): the runner records raw answers only."""
    missing = [t.trajectory_id for t in dataset.trajectories if not run.is_done(t.trajectory_id)]
    if missing:
        raise RunDirError(
            f"{run.root} is incomplete: no record for trajectories {', '.join(missing)}; "
            "finish it with `apmbench-grpc evaluate ... --resume` first"
        )
    out: list[records.TrajectoryRecord] = []
    for rec in (run.load_trajectory(t.trajectory_id) for t in dataset.trajectories):
        where = f"{run.root}: trajectory {rec['trajectory_id']}"
        rows = [_graded(row, suite, dataset, strict, where) for row in rec["instances"]]
        graded: records.TrajectoryRecord = {**rec, "instances": list(rows)}
        audit = rec.get("audit") or {}
        entry = audit.get("persistence")
        rerun = entry.get("rerun") if isinstance(entry, dict) else None
        if isinstance(entry, dict) and isinstance(rerun, list):
            again = [
                _graded(row, suite, dataset, False, where) for row in rerun if isinstance(row, dict)
            ]
            compared = compare_answers(graded, {**rec, "instances": list(again)})
            rest = {k: v for k, v in entry.items() if k != "rerun"}
            graded["audit"] = {**audit, "persistence": {**rest, **compared}}
        out.append(graded)
    manifest = load_manifest(run.manifest_path)
    can_import = bool(manifest.capabilities.get("supports_import", True))
    labels = manifest.raw.get("labels")
    blind = isinstance(labels, dict) and labels.get("withheld_during_run") is True
    check_run_records(run.root, out, suite, dataset, can_import, blind)
    return out


def _graded(
    row: Mapping[str, object], suite: OpaqueSuite, dataset: SuiteDataset, strict: bool, where: str
) -> MutableRow:
    instance_id, raw = row.get("instance_id"), row.get("raw_output")
    if not isinstance(instance_id, str) or not isinstance(raw, str):
        raise RunDirError(f"{where} holds a record without an instance id or a raw output")
    item = base.item_of(suite, dataset, instance_id)
    if item is None:
        raise RunDirError(f"{where}: instance {instance_id!r} is not in the dataset")
    graded: MutableRow = {**row, **strictly(suite, item, raw, strict)}
    if "piece_chars" in row:  # else a run that graded as it went: kept as recorded
        graded["time_to_answer_s"] = time_to_answer(suite, item, row)
    return graded


def time_to_answer(suite: OpaqueSuite, item: object, row: Mapping[str, object]) -> float | None:
    """A recorded answer's time to answer, its prefixes read as the suite grades them (as
    repaired, whatever `--strict-answers` says)."""
    raw, chars, arrivals = row.get("raw_output"), row.get("piece_chars"), row.get("arrivals_s")
    if not isinstance(raw, str) or not isinstance(chars, list) or not isinstance(arrivals, list):
        return None
    grading = suite.grading()
    return answered_at(
        raw,
        [int(c) for c in chars],
        [float(a) for a in arrivals],
        lambda text: grading.answer_key(grading.grade(item, text)),
    )


def answered_at(
    raw: str, piece_chars: Sequence[int], arrivals_s: Sequence[float], key: Callable[[str], object]
) -> float | None:
    """When the streamed prefix first determined the parsed answer (`key`: the answer a text
    parses to, None for none): the arrival of the piece from which every longer prefix
    parses to the final answer. A server cannot buy it with a cheap first piece, as it can
    time to first token."""
    final = key(raw)
    if final is None or not piece_chars:
        return None
    ends = list(itertools.accumulate(piece_chars))
    first = None
    for k in range(len(ends) - 1, -1, -1):
        if key(raw[: ends[k]]) != final:
            break
        first = k
    return None if first is None else arrivals_s[first]


STRICT_REASON = "needed repair, counted as a format failure (--strict-answers)"


def strictly(suite: OpaqueSuite, item: object, raw: str, strict: bool) -> Mapping[str, object]:
    """The suite's grade of `raw`; with `strict`, an answer read only by repair is graded as
    the suite grades an empty answer (its own failure record), saying why."""
    grading = suite.grading()
    graded = grading.grade(item, raw)
    if not strict or graded.get("format") != REPAIRED:
        return graded
    reason = f"{STRICT_REASON}; repaired: {graded.get('format_reason') or 'read by repair'}"
    return {**grading.grade(item, ""), "format": FAILURE, "format_reason": reason}


def judge_instances(
    instances: Sequence[MutableRow],
    suite: OpaqueSuite,
    dataset: SuiteDataset,
    config: JudgeConfig,
    backend: ChatBackend | None,
    cache_dir: Path,
    on_judged: Callable[[int, int], None] = lambda done, total: None,
) -> JudgeCalls:
    """Ask the judge what the suite needs judged and hand the outcomes back; call statistics."""
    judging = suite.grading().judging
    requests = [] if judging is None else judging.requests(dataset, instances)
    if backend is None or judging is None or not requests:
        return {"requests": 0, "model_calls": 0, "cache_hits": 0}
    # A deterministic judge that costs nothing is asked again rather than trusted from a
    # cache anyone with the run directory can edit.
    cache = ReplyCache(cache_dir, reads=not getattr(backend, "deterministic", False))
    calls_before = backend.calls
    done = 0

    def progress(instance_id: str, outcome: object) -> None:
        nonlocal done
        done += 1
        on_judged(done, len(requests))

    outcomes = judge_requests(
        requests,
        backend,
        cache,
        attempts=config.attempts,
        concurrency=config.concurrency,
        on_done=progress,
    )
    judging.apply(instances, outcomes)
    return {
        "requests": len(requests),
        "model_calls": backend.calls - calls_before,
        "cache_hits": cache.hits,
    }


def score_run(
    run: records.RunDir,
    suite: OpaqueSuite,
    dataset: SuiteDataset,
    config: JudgeConfig,
    backend: ChatBackend | None,
    on_judged: Callable[[int, int], None] = lambda done, total: None,
) -> RunFacts:
    """Re-grade, judge, and write instances.jsonl, sessions.jsonl, report.json and report.md."""
    cache_dir = config.cache_dir or run.root / CACHE_DIR_NAME
    recs = graded_records(run, suite, dataset, config.strict_answers)
    instances = [row for rec in recs for row in rec["instances"]]
    sessions = [s for rec in recs for s in rec["sessions"]]
    calls = judge_instances(instances, suite, dataset, config, backend, cache_dir, on_judged)
    recorded = load_manifest(run.manifest_path)
    scoring = scoring_record(suite, config, backend, recorded.variant)
    records.atomic_write(run.root / "instances.jsonl", records.jsonl(instances))
    records.atomic_write(run.root / "sessions.jsonl", records.jsonl(sessions))
    # The report holds only what determines the numbers, so equal runs give equal
    # reports; when and how cheaply it was scored goes to the manifest.
    form = suite.report_format()
    body: RunFacts = form.score(instances, sessions, scoring)
    manifest = run.update_manifest(
        scoring={
            **scoring,
            "judge_calls": calls,
            "scored_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
    )
    played = [s for rec in recs for s in rec.get("live", [])]
    report = run_report(body, manifest, audit_summary(recs), live.summarize(played, instances))
    records.atomic_write(run.root / "report.json", records.dump(report))
    text = run_markdown(form.render(report, manifest.raw), report, manifest)
    records.atomic_write(run.root / "report.md", text)
    return report
