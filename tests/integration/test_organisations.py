"""APM-Bench's trajectory-organisation controls (the paper's appendix B.6): `evaluate
--variant oracle` plays each candidate alone with only its evidence and its probes' scenes,
`--variant raw-lifelong` adds the recordings between the selected sessions. The plans are
checked frame by frame, a system is run in each, the report names the organisation, and
`compare` keeps organisations apart."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from apmbench.adapters.sdk.types import ExportedState
from apmbench.adapters.systems.frame_archive import CONTENT_TYPE, decode_archive, encode_archive
from apmbench.harness.cli import main
from apmbench.harness.errors import ConfigError, DatasetError
from apmbench.harness.run.plan import Segment
from apmbench.harness.suites import datasets, get_suite
from apmbench.harness.suites.apmbench import organisation, tasks
from apmbench.harness.suites.apmbench.dataset import load_dataset
from apmbench.harness.suites.apmbench.plan import plan_trajectory
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tiny() -> Path:
    return synthetic_dataset("tiny", 0)


def _asked(segment: Segment) -> set[str]:
    return {a.instance_id for a in segment.asks}


def test_oracle_plays_each_candidate_alone_with_only_its_evidence(tiny: Path) -> None:
    standard = load_dataset(tiny)
    oracle = organisation.load_organised(tiny, organisation.ORACLE)
    assert oracle.content_hash == standard.content_hash and oracle.organisation == "oracle"
    for trajectory in oracle.trajectories:
        segments = plan_trajectory(oracle, trajectory, can_import=True)
        assert not [s for s in segments if s.kind == "main"]  # no pass that asks nothing
        replays = [s for s in segments if s.name.startswith("oracle@")]
        by_probe = {a.instance_id: s for s in replays for a in s.asks}
        for c in oracle.candidates_of(trajectory.trajectory_id):
            if c.task == tasks.EVIDENCE_AVAILABILITY:
                # EA keeps the replay its label is defined on.
                assert all(p.probe_id not in by_probe for p in c.probes)
                continue
            for p in c.probes:
                segment = by_probe[p.probe_id]
                assert segment.snapshot_after is None and segment.keep_frame is not None
                assert _asked(segment) <= {q.probe_id for q in c.probes}
                # Exactly the frames in the evidence and scene spans, at 1 FPS.
                probes = tuple(q for q in c.probes if q.probe_id in _asked(segment))
                allowed = organisation.oracle_spans(c, trajectory, probes)
                assert allowed
                for index in range(segment.first_session, segment.last_session + 1):
                    session = trajectory.sessions[index]
                    kept = {
                        t
                        for t in range(session.start_ms, session.end_ms + 1, 1000)
                        if segment.keep_frame(t)
                    }
                    inside = {
                        t
                        for t in range(session.start_ms, session.end_ms + 1, 1000)
                        if any(a <= t <= b for _, (a, b) in allowed)
                    }
                    assert kept == inside
                kept_total = sum(
                    1
                    for index in range(segment.first_session, segment.last_session + 1)
                    for t in range(
                        trajectory.sessions[index].start_ms,
                        trajectory.sessions[index].end_ms + 1,
                        1000,
                    )
                    if segment.keep_frame(t)
                )
                whole = sum(
                    int(s.duration_s) for s in trajectory.sessions[: segment.last_session + 1]
                )
                assert 0 < kept_total < whole / 4, (c.candidate_id, kept_total, whole)
                if c.task in tasks.MCQA_TASKS and c.raw.get("evidence_moments"):
                    # An annotated question sees its evidence (with a second's lead) only.
                    (moment,) = c.raw["evidence_moments"][:1]
                    assert moment["session_id"] in {
                        trajectory.sessions[i].session_id
                        for i in range(segment.first_session, segment.last_session + 1)
                    }


def test_raw_lifelong_adds_the_recordings_between_sessions(tiny: Path) -> None:
    standard = load_dataset(tiny)
    raw = organisation.load_organised(tiny, organisation.RAW_LIFELONG)
    for before, after in zip(standard.trajectories, raw.trajectories, strict=True):
        added = [s for s in after.sessions if s.intervening]
        assert added and len(after.sessions) == len(before.sessions) + len(added)
        selected = [s for s in after.sessions if not s.intervening]
        assert [replace(s, session_id="") for s in selected] == [
            replace(s, session_id="") for s in before.sessions
        ]
        assert not after.sessions[0].intervening and not after.sessions[-1].intervening
        # A red team's cheater kept nothing of sessions named R001..: on the wire every
        # recording is named by its place alone.
        assert [s.session_id for s in after.sessions] == [
            f"L{k + 1:03d}" for k in range(len(after.sessions))
        ]
    # Every probe and turn still points at the same selected session and time.
    for c_std, c_raw in zip(standard.candidates, raw.candidates, strict=True):
        t_std = standard.trajectory(c_std.trajectory_id)
        t_raw = raw.trajectory(c_raw.trajectory_id)

        pairs = [
            (p.session_index, q.session_index)
            for p, q in zip(c_std.probes, c_raw.probes, strict=True)
        ]
        pairs += [
            (u.session_index, v.session_index)
            for u, v in zip(c_std.turns, c_raw.turns, strict=True)
        ]
        assert len(pairs) == len(c_std.probes) + len(c_std.turns)
        for a, b in pairs:
            x, y = t_std.sessions[a], t_raw.sessions[b]
            assert (x.start_ms, x.end_ms, x.video, x.render) == (
                y.start_ms, y.end_ms, y.video, y.render,
            ) and not y.intervening  # fmt: skip
        assert [p.time_ms for p in c_std.probes] == [q.time_ms for q in c_raw.probes]
    # EA replays start at the selected session two back and play what lies between.
    for trajectory in raw.trajectories:
        for segment in plan_trajectory(raw, trajectory, can_import=True):
            if segment.name.startswith("ea@"):
                selected = [
                    k
                    for k in range(segment.first_session, segment.last_session)
                    if not trajectory.sessions[k].intervening
                ]
                earlier = [
                    k for k in range(segment.last_session) if not trajectory.sessions[k].intervening
                ]
                assert not trajectory.sessions[segment.first_session].intervening
                assert selected == earlier[-2:]
                assert segment.last_session - segment.first_session > len(selected)
            if segment.kind == "main":
                assert segment.last_session == len(trajectory.sessions) - 1


def test_a_variant_the_data_cannot_support_is_refused_before_the_run(
    tiny: Path, mini: Path, tmp_path: Path
) -> None:
    with pytest.raises(DatasetError, match="intervening"):
        organisation.load_organised(mini, organisation.RAW_LIFELONG)
    with pytest.raises(ConfigError, match="variants: oracle, raw-lifelong"):
        datasets.load(get_suite("apmbench"), tiny, "lifelong")
    # An adaptive candidate without the evidence Oracle must supply: named, before any run.
    copy = tmp_path / "copy"
    shutil.copytree(tiny, copy)
    mpa = copy / "candidates" / "MPA.json"
    items = json.loads(mpa.read_text())
    items[0]["evidence_moments"] = []
    mpa.write_text(json.dumps(items))
    with pytest.raises(DatasetError, match=f"{items[0]['candidate_id']}.*evidence_moments"):
        organisation.load_organised(copy, organisation.ORACLE)
    done = CliRunner().invoke(
        main, ["evaluate", "--dataset", str(copy), "--variant", "oracle", "--system", "null",
               "--out", str(tmp_path / "run")],
    )  # fmt: skip
    assert done.exit_code == 2 and "evidence_moments" in done.output, done.output
    assert "Traceback" not in done.output
    # A public part withholds the evidence Oracle would play.
    split = CliRunner().invoke(
        main, ["split", str(tiny), "--public", str(tmp_path / "pub"), "--private",
               str(tmp_path / "priv")],
    )  # fmt: skip
    assert split.exit_code == 0, split.output
    with pytest.raises(DatasetError, match="public part"):
        organisation.load_organised(tmp_path / "pub", organisation.ORACLE)
    bad = CliRunner().invoke(
        main, ["evaluate", "--dataset", str(tiny), "--variant", "lifelong", "--system", "null",
               "--out", str(tmp_path / "run2")],
    )  # fmt: skip
    assert bad.exit_code == 2 and "oracle, raw-lifelong" in bad.output, bad.output


def test_an_empty_frame_archive_round_trips() -> None:
    """An Oracle replay opens sessions it pushes nothing into: the reference archive must
    export and import a memory without a frame (FFmpeg cannot read back an empty Matroska)."""
    data = encode_archive([], [(3, "remind me")], 2)
    assert decode_archive(ExportedState(data, CONTENT_TYPE, 1), "frame-archive") == (
        [],
        [(3, "remind me")],
        2,
    )


@pytest.mark.slow
def test_each_organisation_runs_and_the_report_names_it(tiny: Path, tmp_path: Path) -> None:
    reports: dict[str, dict[str, object]] = {}
    for variant in ("oracle", "raw-lifelong", None):
        out = tmp_path / (variant or "apmbench")
        args = ["evaluate", "--dataset", str(tiny), "--system", "frame-archive", "--out", str(out)]
        done = CliRunner().invoke(main, [*args, *(["--variant", variant] if variant else [])])
        assert done.exit_code == 0, done.output
        reports[variant or "apmbench"] = json.loads((out / "report.json").read_text())
        head = (out / "report.md").read_text().splitlines()[2]
        assert (f"variant `{variant}`" in head) == (variant is not None), head
        assert reports[variant or "apmbench"]["header"]["variant"] == variant  # type: ignore[index]
    # frame-archive keeps every frame: the questions are answered from their evidence
    # alone, and the recordings in between (the wearer in transit) change no answer.
    families = {v: r["families"] for v, r in reports.items()}
    for family in ("cross_session_understanding", "real_time_perception"):
        assert families["oracle"][family] == families["apmbench"][family]  # type: ignore[index]
    assert families["raw-lifelong"] == families["apmbench"]
    # Raw Lifelong plays more video: the storage per hour of a frame archive differs.
    assert reports["raw-lifelong"]["storage"] != reports["apmbench"]["storage"]
    # Oracle plays no whole trajectory: no Storage/hr (a red team's cheater kept nothing in
    # a main pass that asked nothing, 1.37 KiB/hr against frame-archive's 72.03 MiB/hr).
    assert reports["oracle"]["storage"]["storage_per_hour_bytes"] is None  # type: ignore[index]
    assert reports["apmbench"]["storage"]["storage_per_hour_bytes"]  # type: ignore[index]
    # Organisations are not compared with each other unless told.
    both = CliRunner().invoke(
        main, ["compare", str(tmp_path / "apmbench"), str(tmp_path / "oracle"),
               "--out", str(tmp_path / "cmp")],
    )  # fmt: skip
    assert both.exit_code != 0 and "Traceback" not in both.output, both.output
    # `score` reloads the dataset in the run's organisation.
    rescored = CliRunner().invoke(main, ["score", str(tmp_path / "raw-lifelong")])
    assert rescored.exit_code == 0, rescored.output
    again = json.loads((tmp_path / "raw-lifelong" / "report.json").read_text())
    assert again["families"] == reports["raw-lifelong"]["families"]
