"""`apmbench-grpc bundle` then `apmbench-grpc verify` on real runs of the three suites and a
blind run, and on bundles edited the ways a submitter could: a byte flipped in a member
(the old index kept), an index whose member hash was recomputed but not its id, a report
number changed with its hash and the id recomputed (a consistent forgery), and a blind
run re-sealed with latencies no clock measured."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from apmbench.harness.cli import main
from apmbench.harness.orchestrate.blind import sealed_records
from apmbench.harness.orchestrate.bundle import read_bundle, verify_bundle
from apmbench.harness.orchestrate.bundle.archive import (
    INDEX_NAME,
    LOG_BOUND_BYTES,
    SUFFIX,
    bundle_id,
)
from apmbench.harness.run import seal
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

pytestmark = [pytest.mark.integration]

RUNS: dict[str, list[str]] = {
    # The suite's own synthetic benchmark with a quick reference system; APM-Bench's is
    # judged by its synthetic reference judge (--judge auto), which verify asks again.
    "apmbench": ["--synthetic", "tiny", "--seed", "0", "--system", "text-log"],
    "egoprobe": [
        "--benchmark",
        "egoprobe",
        "--synthetic",
        "tiny",
        "--seed",
        "0",
        "--system",
        "text-log",
    ],
    "proactegomem": (
        [
            "--benchmark",
            "proactegomem",
            "--synthetic",
            "tiny",
            "--seed",
            "0",
            "--system",
            "proact-rules",
        ]
    ),
}


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, [*args])


def said(result: Result) -> str:
    """What a command printed, one line per problem (FAIL lines are never wrapped)."""
    return result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A finished run of each suite, a blind run (split, then evaluate on the public part)
    of APM-Bench, and `null` on all three suites at once (`--benchmark all`); tests bundle
    them, never change them."""
    work = tmp_path_factory.mktemp("bundle-runs")
    out: dict[str, Path] = {}
    with pytest.MonkeyPatch.context() as env:
        # A cache of the module's own: one test hides a dataset in it.
        env.setenv("APMBENCH_CACHE", str(work / "cache"))
        for suite, args in RUNS.items():
            result = cli("evaluate", *args, "--out", str(work / suite))
            assert result.exit_code == 0, result.output
            out[suite] = work / suite
        public, private = work / "public", work / "private"
        result = cli(
            "split", str(synthetic_dataset("tiny", 0)), "--public", str(public),
            "--private", str(private),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        result = cli("evaluate", "--dataset", str(public), "--system", "text-log",
                     "--out", str(work / "blind"))  # fmt: skip
        assert result.exit_code == 0, result.output
        result = cli("evaluate", "--benchmark", "all", "--synthetic", "tiny", "--seed", "0",
                     "--system", "null", "--out", str(work / "all"))  # fmt: skip
        assert result.exit_code == 0, result.output
        out["all"] = work / "all"
    out["blind"], out["private"] = work / "blind", private
    return out


def bundle(run: Path, out: Path) -> Path:
    result = cli("bundle", str(run), "--out", str(out))
    assert result.exit_code == 0, result.output
    path = out / f"{result.stdout.strip()}{SUFFIX}" if out.is_dir() else out
    assert path.is_file()
    return path


def verify(path: Path, *args: str) -> tuple[Result, dict[str, Any]]:
    """verify's exit, output, and its --json report by rule."""
    report = path.with_suffix(".verify.json")
    result = cli("verify", str(path), "--json", str(report), *args)
    assert result.exit_code in (0, 1), result.output
    data = json.loads(report.read_text())
    return result, {
        f"{r['rule']} ({r['run']})" if r["run"] else r["rule"]: r for r in data["rules"]
    }


def outcomes(rules: dict[str, Any]) -> dict[str, str]:
    return {name: r["outcome"] for name, r in rules.items()}


def rewrite(
    path: Path, out: Path, change: Callable[[dict[str, Any], dict[str, bytes]], None]
) -> Path:
    """The bundle at `path` rewritten as a submitter would: `change` edits the parsed index
    and the members' bytes in place; the tar is written again around them."""
    read = read_bundle(path)
    index = json.loads(json.dumps(read.index))
    members = dict(read.members)
    change(index, members)
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for name, data in [(INDEX_NAME, json.dumps(index, indent=2).encode()), *members.items()]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def rehash(index: dict[str, Any], members: dict[str, bytes], name: str) -> None:
    entry = next(m for m in index["members"] if m["path"] == name)
    entry["sha256"] = hashlib.sha256(members[name]).hexdigest()
    entry["size"] = len(members[name])


@pytest.mark.slow
@pytest.mark.parametrize("suite", sorted(RUNS))
def test_bundle_then_verify_passes_on_each_suite(
    runs: dict[str, Path], suite: str, tmp_path: Path
) -> None:
    path = bundle(runs[suite], tmp_path)
    result, rules = verify(path)
    assert result.exit_code == 0, said(result)
    assert outcomes(rules) == {
        "index": "pass", "members": "pass", "seal": "n/a", "numbers": "pass",
        "records": "pass", "blind-score": "n/a", "timing": "pass", "suites-page": "n/a",
    }  # fmt: skip
    assert rules["numbers"]["facts"]["compared"] > 50
    assert rules["numbers"]["facts"]["not_rederived"] == []
    assert "every rule passed" in said(result)
    read = read_bundle(path)
    assert read.index["suites"] == [suite]
    assert read.index["runs"][0]["synthetic"] == {"preset": "tiny", "seed": 0}
    assert (
        read.index["runs"][0]["dataset_hash"]
        == json.loads((runs[suite] / "manifest.json").read_text())["dataset_hash"]
    )
    # The judge cache stays out, and the index says so.
    assert not any(name.startswith("judge-cache/") for name in read.members)
    if (runs[suite] / "judge-cache").is_dir():
        assert [e["path"] for e in read.index["left_out"]] == ["judge-cache/"]


@pytest.mark.slow
def test_the_same_run_gives_the_same_bytes_named_by_its_index(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    first = bundle(runs["apmbench"], tmp_path / "first.tar")
    (tmp_path / "again").mkdir()
    again = bundle(runs["apmbench"], tmp_path / "again")
    assert first.read_bytes() == again.read_bytes()
    read = read_bundle(again)
    assert again.name == f"{read.id}{SUFFIX}"
    assert read.id == bundle_id(read.index)
    with tarfile.open(again) as tar:
        infos = tar.getmembers()
    assert infos[0].name == INDEX_NAME
    assert [i.name for i in infos[1:]] == sorted(i.name for i in infos[1:])
    assert {(i.mtime, i.uid, i.gid, i.uname, i.gname, i.mode) for i in infos} == {
        (0, 0, 0, "", "", 0o644)
    }


@pytest.mark.slow
def test_a_synthetic_dataset_missing_here_is_generated_again(
    runs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verifying machine has no copy of the run's dataset: it is rebuilt from the
    preset and seed in the manifest, and its hash checked."""
    path = bundle(runs["egoprobe"], tmp_path)
    monkeypatch.setenv("APMBENCH_CACHE", str(tmp_path / "empty-cache"))
    data = json.loads((runs["egoprobe"] / "manifest.json").read_text())["dataset"]["path"]
    assert Path(data).is_relative_to(runs["egoprobe"].parent / "cache")  # the module's own
    hidden = Path(data).with_name(Path(data).name + ".hidden")
    os.rename(data, hidden)
    try:
        verification = verify_bundle(path)
    finally:
        os.rename(hidden, data)
    assert verification.ok, [r.reason for r in verification.results]
    assert (tmp_path / "empty-cache" / "synthetic").is_dir()


@pytest.mark.slow
def test_another_dataset_fails_the_rederivation_naming_its_hash(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    path = bundle(runs["apmbench"], tmp_path)
    result, rules = verify(path, "--dataset", str(runs["private"].parent / "public"))
    assert result.exit_code == 1
    assert rules["numbers"]["outcome"] == rules["records"]["outcome"] == "fail"
    assert "cannot re-derive the numbers" in rules["numbers"]["reason"]
    assert "but the run was made on" in said(result)


@pytest.mark.slow
@pytest.mark.parametrize(
    "member", ["instances.jsonl", "trajectories/T001.json", "report.json", "manifest.json"]
)
def test_one_flipped_byte_fails_naming_the_file(
    runs: dict[str, Path], member: str, tmp_path: Path
) -> None:
    path = bundle(runs["apmbench"], tmp_path / "honest.tar")

    def change(index: dict[str, Any], members: dict[str, bytes]) -> None:
        members[member] = flip(members[member], len(members[member]) // 2)

    edited = rewrite(path, tmp_path / "edited.tar", change)
    result, rules = verify(edited)
    assert result.exit_code == 1
    assert rules["members"]["outcome"] == "fail"
    assert f"FAIL members: {member}: changed after bundling" in said(result)
    if member != "manifest.json":  # the index summarizes the manifest: it may fail too
        assert rules["index"]["outcome"] == "pass"


@pytest.mark.slow
def test_an_index_with_a_member_hash_recomputed_but_not_its_id_fails(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    path = bundle(runs["apmbench"], tmp_path / "honest.tar")

    def change(index: dict[str, Any], members: dict[str, bytes]) -> None:
        members["instances.jsonl"] = flip(members["instances.jsonl"], 100)
        rehash(index, members, "instances.jsonl")

    result, rules = verify(rewrite(path, tmp_path / "edited.tar", change))
    assert result.exit_code == 1
    assert rules["members"]["outcome"] == "pass"
    assert rules["index"]["outcome"] == "fail"
    assert "FAIL index: BUNDLE.json: the id" in said(result)
    assert "the index was edited after bundling" in said(result)


@pytest.mark.slow
def test_a_consistent_forgery_of_a_number_fails_its_rederivation(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """report.json's Overall raised, its hash in the index and the index's id recomputed:
    every hash holds, and re-scoring the records names the number."""
    path = bundle(runs["apmbench"], tmp_path / "honest.tar")
    honest = json.loads(read_bundle(path).members["report.json"])

    def change(index: dict[str, Any], members: dict[str, bytes]) -> None:
        report = json.loads(members["report.json"])
        report["overall"]["score"] = honest["overall"]["score"] + 7.5
        members["report.json"] = (json.dumps(report, indent=2, sort_keys=True) + "\n").encode()
        rehash(index, members, "report.json")
        index["id"] = bundle_id(index)

    result, rules = verify(rewrite(path, tmp_path / "forged.tar", change))
    assert result.exit_code == 1
    assert outcomes(rules)["index"] == outcomes(rules)["members"] == "pass"
    assert rules["numbers"]["outcome"] == "fail"
    forged = honest["overall"]["score"] + 7.5
    assert (
        f"FAIL numbers: report.json: overall.score is {json.dumps(forged)}, re-derived "
        f"{json.dumps(honest['overall']['score'])}"
    ) in said(result)
    assert rules["records"]["outcome"] == "pass"  # only the report was touched


@pytest.mark.slow
def test_a_blind_bundle_verifies_and_scores_with_the_labels(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    path = bundle(runs["blind"], tmp_path)
    assert read_bundle(path).index["runs"][0]["public_part"] is True
    result, rules = verify(path)
    assert result.exit_code == 0, said(result)
    assert outcomes(rules) == {
        "index": "pass", "members": "pass", "seal": "pass", "numbers": "n/a",
        "records": "n/a", "blind-score": "n/a", "timing": "pass", "suites-page": "n/a",
    }  # fmt: skip
    result, rules = verify(path, "--labels", str(runs["private"]), "--judge", "synthetic")
    assert result.exit_code == 0, said(result)
    assert rules["blind-score"]["outcome"] == "pass"
    scored = tmp_path / "scored"
    done = cli(
        "score", str(runs["blind"] / "predictions.json"), "--labels", str(runs["private"]),
        "--out", str(scored), "--judge", "synthetic",
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    overall = json.loads((scored / "report.json").read_text())["overall"]["score"]
    assert overall is not None
    assert rules["blind-score"]["facts"]["utility"] == overall
    assert f"Overall {overall:.2f}" in rules["blind-score"]["reason"]
    # The scored run, bundled for publication, re-derives its numbers from the labels.
    published = bundle(scored, tmp_path / "published.apmbundle.tar")
    result, rules = verify(published)
    assert result.exit_code == 1 and "--labels PRIVATE" in rules["numbers"]["reason"]
    result, rules = verify(published, "--labels", str(runs["private"]))
    assert result.exit_code == 0, said(result)
    assert rules["numbers"]["outcome"] == "pass" and rules["records"]["outcome"] == "pass"


@pytest.mark.slow
def test_a_resealed_blind_run_with_unmeasurable_latencies_fails_the_timing_rule(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """The red team's edit done carefully: every latency set to 1e-5 s in the predictions
    and the trajectories, the seal recomputed, the index and its id too. The hashes and the
    seal hold; the times cannot have been measured."""
    path = bundle(runs["blind"], tmp_path / "honest.tar")

    def fast(row: dict[str, Any]) -> None:
        for key in ("ttft_s", "time_to_answer_s", "total_s"):
            if row.get(key) is not None:
                row[key] = 1e-5

    def change(index: dict[str, Any], members: dict[str, bytes]) -> None:
        predictions = json.loads(members["predictions.json"])
        for t in predictions["trajectories"]:
            for row in t["record"]["instances"]:
                fast(row)
            name = f"trajectories/{t['trajectory_id']}.json"
            record = json.loads(members[name])
            for row in record["instances"]:
                fast(row)
            members[name] = json.dumps(record).encode()
            rehash(index, members, name)
        predictions["seal"] = seal.seal(sealed_records(predictions))
        members["predictions.json"] = json.dumps(predictions).encode()
        rehash(index, members, "predictions.json")
        index["id"] = bundle_id(index)

    result, rules = verify(rewrite(path, tmp_path / "forged.tar", change))
    assert result.exit_code == 1
    assert outcomes(rules) == {
        "index": "pass", "members": "pass", "seal": "pass", "numbers": "n/a",
        "records": "n/a", "blind-score": "n/a", "timing": "fail", "suites-page": "n/a",
    }  # fmt: skip
    # The first record named depends on the generator's draw; any of T001's will do.
    assert re.search(r"FAIL timing: predictions\.json T001/\S+: ttft_s 1e-05 s", said(result))

    # Edited without re-sealing, the seal names the record instead.
    def unsealed(index: dict[str, Any], members: dict[str, bytes]) -> None:
        predictions = json.loads(members["predictions.json"])
        predictions["trajectories"][0]["record"]["instances"][0]["raw_output"] = "{}"
        members["predictions.json"] = json.dumps(predictions).encode()
        rehash(index, members, "predictions.json")
        index["id"] = bundle_id(index)

    result, rules = verify(rewrite(path, tmp_path / "unsealed.tar", unsealed))
    assert result.exit_code == 1
    assert rules["seal"]["outcome"] == "fail"
    assert "changed after the run" in said(result)
    assert "trajectories/T001.json: T001/" in said(result)  # it no longer agrees


def test_logs_are_cut_to_the_bound_and_the_index_says_so(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({"benchmark": "apmbench"}))
    (run / "report.json").write_text("{}")
    big = b"".join(b"line %07d of a chatty system\n" % k for k in range(120_000))
    (run / "logs" / "system.log").write_bytes(big)
    (run / "judge-cache" / "ab").mkdir(parents=True)
    (run / "judge-cache" / "ab" / "ab12.json").write_text("{}")
    (run / "trajectories").mkdir()
    (run / "trajectories" / ".T001.json.tmp").write_text("{")
    path = bundle(run, tmp_path / "b.tar")
    read = read_bundle(path)
    entry = next(m for m in read.index["members"] if m["path"] == "logs/system.log")
    log = read.members["logs/system.log"]
    assert len(big) > 3 * LOG_BOUND_BYTES
    assert entry["cut"]["size"] == len(big)
    assert entry["cut"]["sha256"] == hashlib.sha256(big).hexdigest()
    assert LOG_BOUND_BYTES <= len(log) < LOG_BOUND_BYTES + 200
    half = LOG_BOUND_BYTES // 2
    assert log.startswith(big[:half]) and log.endswith(big[-half:])
    assert b"bytes of this log cut here" in log
    assert {e["path"] for e in read.index["left_out"]} == {
        "judge-cache/", "trajectories/.T001.json.tmp"
    }  # fmt: skip
    assert sorted(read.members) == ["logs/system.log", "manifest.json", "report.json"]
    verification = verify_bundle(read)
    by_rule = {r.rule: r for r in verification.results}
    assert by_rule["members"].outcome.value == "pass"
    assert "1 log cut" in by_rule["members"].reason


def test_bad_input_exits_2_with_a_message(tmp_path: Path) -> None:
    not_tar = tmp_path / "x.tar"
    not_tar.write_text("hello")
    result = cli("verify", str(not_tar))
    assert result.exit_code == 2 and "not a readable bundle" in result.output
    plain = tmp_path / "plain.tar"
    with tarfile.open(plain, "w") as tar:
        tar.addfile(tarfile.TarInfo("report.json"), io.BytesIO(b""))
    result = cli("verify", str(plain))
    assert result.exit_code == 2 and "holds no BUNDLE.json" in result.output
    result = cli("verify", str(tmp_path / "missing.tar"))
    assert result.exit_code == 2 and "no such file" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("bundle", str(empty), "--out", str(tmp_path / "b.tar"))
    assert result.exit_code == 2 and "not an apmbench run directory" in result.output
    (empty / "manifest.json").write_text("{}")
    result = cli("bundle", str(empty), "--out", str(tmp_path / "b.tar"))
    assert result.exit_code == 2 and "neither a report.json nor a predictions.json" in result.output
    result = cli("bundle", str(empty), "--out", str(empty))
    assert result.exit_code == 2 and "inside" in result.output
    assert not (tmp_path / "b.tar").exists()
    result = cli("bundle", str(empty), "--out", "/proc/b.tar")
    assert result.exit_code == 2 and "kernel filesystem" in result.output


def test_entries_that_are_not_plain_files_fail_the_members_rule(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"benchmark": "apmbench"}))
    (run / "report.json").write_text("{}")
    path = bundle(run, tmp_path / "b.tar")
    with tarfile.open(path, "a") as tar:
        link = tarfile.TarInfo("trajectories/T001.json")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
        escape = tarfile.TarInfo("../outside.json")
        tar.addfile(escape, io.BytesIO(b""))
    read = read_bundle(path)
    assert sorted(read.members) == ["manifest.json", "report.json"]
    members = {r.rule: r for r in verify_bundle(read).results}["members"]
    assert members.outcome.value == "fail"
    assert "trajectories/T001.json: not a plain file" in members.problems
    assert any(p.startswith("../outside.json: an unsafe path") for p in members.problems)


def test_a_run_judged_by_an_llm_is_rederived_without_it_unless_asked(
    mini: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The judged numbers rest on an HTTP judge: verify does not call it, reports those
    numbers as not re-derived and checks the rest; with --judge it asks it again."""
    from helpers.chat_server import API_KEY, chat_server

    monkeypatch.setenv("APMBENCH_TEST_JUDGE_KEY", API_KEY)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    with chat_server() as server:
        judge = ("--judge", "openai", "--judge-model", "judge-test", "--judge-base-url",
                 server.url, "--judge-api-key-env", "APMBENCH_TEST_JUDGE_KEY")  # fmt: skip
        run = tmp_path / "run"
        result = cli("evaluate", "--dataset", str(mini), "--system", "null",
                     "--persistence", "reset", "--out", str(run), *judge)  # fmt: skip
        assert result.exit_code == 0, result.output
        calls = server.calls
        assert calls > 0
        path = bundle(run, tmp_path / "b.tar")
        result, rules = verify(path)
        assert result.exit_code == 0, said(result)
        assert server.calls == calls
        numbers = rules["numbers"]
        assert numbers["outcome"] == "pass"
        assert "overall.score" in numbers["facts"]["not_rederived"]
        assert "tasks.ERA.score" in numbers["facts"]["not_rederived"]
        assert "tasks.ER.score" not in numbers["facts"]["not_rederived"]
        assert "not re-derivable without it (pass --judge" in numbers["reason"]
        result, rules = verify(path, *judge[:2])
        assert result.exit_code == 0, said(result)
        assert server.calls == 2 * calls  # a fresh cache: every verdict asked again
        assert rules["numbers"]["facts"]["not_rederived"] == []
        assert "judge: openai" in rules["numbers"]["reason"]


def test_the_index_names_the_image_and_the_dataset_from_the_manifest(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    digest = "apmbench/my-method@sha256:" + "ab" * 32
    manifest = {
        "benchmark": "egoprobe",
        "dataset": {"name": "mine", "path": "/data/mine", "synthetic": None},
        "dataset_hash": "f00d" * 16,
        "harness_version": "0.1.0",
        "runtime": {
            "kind": "docker",
            "image": {"id": "sha256:" + "cd" * 32, "repo_digests": [digest]},
        },
        "system": {"name": "my-method", "version": "3"},
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "report.json").write_text("{}")
    index = read_bundle(bundle(run, tmp_path / "b.tar")).index
    assert index["suites"] == ["egoprobe"]
    assert index["runs"] == [{
        "dir": "", "suite": "egoprobe", "harness_version": "0.1.0", "system": "my-method", "system_version": "3", "dataset": "mine",
        "dataset_hash": "f00d" * 16, "public_part": False, "synthetic": None,
        "runtime": "docker", "image": {"id": "sha256:" + "cd" * 32, "repo_digests": [digest]},
        "judge": None, "started_at": None, "finished_at": None,
    }]  # fmt: skip


@pytest.mark.slow
def test_a_run_on_all_suites_is_one_bundle_checked_run_by_run(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    path = bundle(runs["all"], tmp_path / "all.tar")
    read = read_bundle(path)
    assert read.index["suites"] == ["apmbench", "egoprobe", "proactegomem"]
    assert [r["dir"] for r in read.index["runs"]] == ["apmbench/", "egoprobe/", "proactegomem/"]
    assert {"suites.json", "report.md", "egoprobe/trajectories/V001.json"} <= set(read.members)
    result, rules = verify(path)
    assert result.exit_code == 0, said(result)
    for suite in ("apmbench", "egoprobe", "proactegomem"):
        assert rules[f"numbers ({suite})"]["outcome"] == "pass"
        assert rules[f"records ({suite})"]["outcome"] == "pass"
        assert rules[f"timing ({suite})"]["outcome"] == "pass"
    assert rules["suites-page"]["outcome"] == "pass"

    # One suite's report forged consistently: that run's numbers fail, naming the run.
    def forged_report(index: dict[str, Any], members: dict[str, bytes]) -> None:
        name = "egoprobe/report.json"
        report = json.loads(members[name])
        report["latency"]["time_to_first_token_s"]["mean"] /= 10
        members[name] = json.dumps(report).encode()
        rehash(index, members, name)
        index["id"] = bundle_id(index)

    result, rules = verify(rewrite(path, tmp_path / "forged.tar", forged_report))
    assert result.exit_code == 1
    assert rules["numbers (egoprobe)"]["outcome"] == "fail"
    assert rules["numbers (apmbench)"]["outcome"] == "pass"
    assert "FAIL numbers (egoprobe): report.json: latency.time_to_first_token_s.mean" in said(
        result
    )
    # The page still shows the honest headline, which the forged report no longer gives.
    assert rules["suites-page"]["outcome"] == "fail"

    # The page's headline forged consistently: it is no longer its report's.
    def forged_page(index: dict[str, Any], members: dict[str, bytes]) -> None:
        page = json.loads(members["suites.json"])
        page["suites"][0]["headline"]["utility"] = 99.0
        members["suites.json"] = json.dumps(page).encode()
        rehash(index, members, "suites.json")
        index["id"] = bundle_id(index)

    result, rules = verify(rewrite(path, tmp_path / "page.tar", forged_page))
    assert result.exit_code == 1
    assert "FAIL suites-page: suites.json: apmbench: headline.utility is 99.0" in said(result)
    assert all(r["outcome"] != "fail" for k, r in rules.items() if k != "suites-page")


@pytest.mark.slow
def test_records_dropped_and_repeated_are_refused_by_score_and_verify(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """Red team 13's fourth forgery: a wrong answer's record removed and a right one
    repeated, then scored again, raised text-log's Overall (80.78 -> 87.11 on small seed
    0). Every run is now checked against its plan: `score` refuses it naming both records,
    and so does `verify` re-deriving a bundle of it."""
    run = tmp_path / "forged"
    shutil.copytree(runs["apmbench"], run)
    rows = [json.loads(line) for line in (run / "instances.jsonl").read_text().splitlines()]
    # text-log answers every probe of tiny right: any record stands for the wrong one.
    right = next(r for r in rows if r.get("correct") is True)
    wrong = next(r for r in rows if r["instance_id"] != right["instance_id"])
    for path in sorted((run / "trajectories").glob("*.json")):
        record = json.loads(path.read_text())
        kept = []
        for row in record["instances"]:
            if row["instance_id"] == wrong["instance_id"] and row["segment"] == wrong["segment"]:
                continue
            kept.append(row)
            if row["instance_id"] == right["instance_id"] and row["segment"] == right["segment"]:
                kept.append(dict(row))
        record["instances"] = kept
        path.write_text(json.dumps(record))
    scored = cli("score", str(run))
    assert scored.exit_code == 2, scored.output
    message = " ".join(scored.output.split())
    assert "are not exactly the labelled plan" in message
    assert f"{right['instance_id']}: recorded 2 times" in message
    assert f"{wrong['instance_id']}: missing" in message
    result, rules = verify(bundle(run, tmp_path / "forged.tar"))
    assert result.exit_code == 1
    assert rules["numbers"]["outcome"] == "fail", rules["numbers"]
    assert "recorded 2 times" in said(result)
