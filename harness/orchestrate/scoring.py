"""Scoring a run directory: re-grade the raw outputs, judge, write the report.

Used at the end of `evaluate` and by `apmbench-grpc score RUN_DIR`, so a
re-score gives exactly what the original run would have given with the same
code, dataset, judge and cache. Only the derived files are rewritten
(instances.jsonl, sessions.jsonl, report.json, report.md and the manifest's
"scoring" entry); the per-trajectory records stay as the run wrote them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypedDict

from apmbench.harness.errors import DatasetError, RunDirError
from apmbench.harness.json_types import JSON, JsonObject
from apmbench.harness.reports.confinement import mounted_into_system
from apmbench.harness.reports.head import RunFacts, head_lines, header, with_head
from apmbench.harness.reports.system_text import md_document
from apmbench.harness.run import records
from apmbench.harness.run.audits.summary import audit_summary
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.run.manifest import load as load_manifest
from apmbench.harness.runtimes.sandbox import confinement
from apmbench.harness.scoring.answers import FAILURE, REPAIRED
from apmbench.harness.scoring.judge import ChatBackend, JudgeConfig
from apmbench.harness.scoring.judge.cache import ReplyCache
from apmbench.harness.scoring.judge.judging import judge_requests
from apmbench.harness.suites import DEFAULT, get_suite
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
        "judge_templates_sha256": (suite.judge_templates_sha256() if backend is not None else None),
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
    dataset = suite.load(path, record.variant)
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
    """Every instance and session record, re-graded from its raw output; with `strict`
    (`--strict-answers`), an answer that needed repair is graded as no answer."""
    missing = [t.trajectory_id for t in dataset.trajectories if not run.is_done(t.trajectory_id)]
    if missing:
        raise RunDirError(
            f"{run.root} is incomplete: no record for trajectories {', '.join(missing)}; "
            "finish it with `apmbench-grpc evaluate ... --resume` first"
        )
    recs = [run.load_trajectory(t.trajectory_id) for t in dataset.trajectories]
    instances: list[MutableRow] = []
    for rec in recs:
        for row in rec["instances"]:
            instance_id, raw = row.get("instance_id"), row.get("raw_output")
            if not isinstance(instance_id, str) or not isinstance(raw, str):
                raise RunDirError(
                    f"{run.root}: trajectory {rec['trajectory_id']} holds a record without an "
                    "instance id or a raw output"
                )
            item = suite.item_of(dataset, instance_id)
            if item is None:
                raise RunDirError(f"{run.root}: instance {instance_id!r} is not in the dataset")
            instances.append({**row, **strictly(suite, item, raw, strict)})
    sessions = [s for rec in recs for s in rec["sessions"]]
    return instances, sessions


STRICT_REASON = "needed repair, counted as a format failure (--strict-answers)"


def strictly(suite: OpaqueSuite, item: object, raw: str, strict: bool) -> Mapping[str, object]:
    """The suite's grade of `raw`; with `strict`, an answer read only by repair is graded as
    the suite grades an empty answer (its own failure record), saying why."""
    graded = suite.grade(item, raw)
    if not strict or graded.get("format") != REPAIRED:
        return graded
    reason = f"{STRICT_REASON}; repaired: {graded.get('format_reason') or 'read by repair'}"
    return {**suite.grade(item, ""), "format": FAILURE, "format_reason": reason}


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
    requests = suite.judge_requests(dataset, instances)
    if backend is None or not requests:
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
    suite.apply_verdicts(instances, outcomes)
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
    instances, sessions = load_instances(run, suite, dataset, config.strict_answers)
    calls = judge_instances(instances, suite, dataset, config, backend, cache_dir, on_judged)
    scoring = scoring_record(suite, config, backend, load_manifest(run.manifest_path).variant)
    records.atomic_write(run.root / "instances.jsonl", records.jsonl(instances))
    records.atomic_write(run.root / "sessions.jsonl", records.jsonl(sessions))
    # The report holds only what determines the numbers, so equal runs give equal
    # reports; when and how cheaply it was scored goes to the manifest.
    # The suite's own report type; this pipeline adds what every report holds (RunFacts).
    report: RunFacts = suite.score(instances, sessions, scoring)
    audits = audit_summary([run.load_trajectory(t.trajectory_id) for t in dataset.trajectories])
    if audits is not None:  # `evaluate --audit`: what the audits saw, flag by flag
        report["audit"] = audits
    run.update_manifest(
        scoring={
            **scoring,
            "judge_calls": calls,
            "scored_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
    )
    manifest = load_manifest(run.manifest_path)
    mounted = mounted_into_system(manifest)
    if mounted:  # the user's --mount: host paths the system could read, beside the numbers
        report["mounted_into_system"] = mounted
    if (sandbox := confinement(manifest.runtime)) is not None:
        report["sandbox"] = sandbox
    # The pipeline, not the suite, states the run's identity and confinement (reports/head.py).
    report["header"] = header(report, manifest)
    records.atomic_write(run.root / "report.json", records.dump(report))
    markdown = with_head(suite.render(report, manifest.raw), head_lines(report, manifest))
    records.atomic_write(run.root / "report.md", md_document(markdown))
    return report
