"""`evaluate --live`: sessions played on the video's clock.

A system that keeps up scores exactly as in its offline replay (the offline runs are the
session's reference runs, by the same command line without --live); a system slower than
the clock loses frames, and with them its score, and the report says why; on
ProactEgoMem a slowed system's steps come late or are dropped for newer ones, and its
Start@τ and F1 fall. Live runs are compared only with live runs at the same speed.

Runs of one test play at once (each is mostly waiting on the clock), so the wall time is
the slowest run's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.reference_runs import run_name

from apmbench.adapters.systems.model_sim import prepare_weights
from apmbench.harness.cli import main

# The command is `--speed 4`; on tiny's 1085 frames (18 minutes of video with its
# forks and replays) that is 4.5 minutes a run. The APM-Bench runs here go at 32x; the
# ProactEgoMem ones (3 minutes of video) at 4x.
FAST = "32"
TESTS = Path(__file__).resolve().parents[1]
NODE_TEMPLATE = Path(__file__).resolve().parents[2] / "containers" / "template-node"


def _start(
    args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "apmbench.harness.cli", "evaluate", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def _finish(proc: subprocess.Popen[str], out: Path) -> dict[str, object]:
    output, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, output[-3000:]
    report: dict[str, object] = json.loads((out / "report.json").read_text())
    return report


def _sim(weights: Path, **costs: str) -> dict[str, str]:
    """model-sim's settings: a small weights file, and what each call costs."""
    prepare_weights(weights, 2)
    return {"APMBENCH_SIM_WEIGHTS_MB": "2", "APMBENCH_SIM_LOAD_S": "0.1", **costs}


@pytest.mark.slow
def test_apmbench_live_keeps_the_scores_of_systems_that_keep_up_and_not_of_one_that_cannot(
    reference_runs: Path, tmp_path: Path
) -> None:
    common = ["--synthetic", "tiny", "--seed", "0", "--live", "--speed", FAST]
    weights = tmp_path / "weights"
    runs = {
        # A buffer of 120 s of video (4 s of wall time at 32x): a moment's load on a busy
        # machine delays a fast system's frames instead of dropping them.
        name: _start(
            [*common, "--system", name, "--live-buffer", "120", "--out", str(tmp_path / name)]
        )
        for name in ("null", "frame-archive")
    }
    # model-sim answers as text-log (test_model_sim), at 600 ms a frame: at 32x a frame
    # comes every 31 ms, so it takes about one in twenty.
    slow_env = _sim(weights, APMBENCH_SIM_FRAME_MS="600")
    runs["model-sim"] = _start(
        [
            *common,
            "--system",
            "model-sim",
            "--env",
            f"APMBENCH_VLM_MODEL={weights}",
            "--out",
            str(tmp_path / "model-sim"),
        ],
        slow_env,
    )
    # Red team 13's cheater takes every frame at once and perceives it later, at 60 ms a
    # frame (twice the clock's 31): its drops and lag look real-time, the work it deferred
    # shows when its sessions end. Beside it, model-sim at the same price, honest.
    runs["honest-60"] = _start(
        [*common, "--system", "model-sim", "--env", f"APMBENCH_VLM_MODEL={weights}",
         "--out", str(tmp_path / "honest-60")],
        {**slow_env, "APMBENCH_SIM_FRAME_MS": "60"},
    )  # fmt: skip
    runs["deferred"] = _start(
        [*common, "--system", "helpers.deferred_perception:DeferredPerception",
         "--out", str(tmp_path / "deferred")],
        {"APMBENCH_SIM_FRAME_MS": "60"}, cwd=TESTS,
    )  # fmt: skip
    runs["to-export"] = _start(
        [*common, "--system", "helpers.deferred_perception:DeferredToExport",
         "--out", str(tmp_path / "to-export")],
        {"APMBENCH_SIM_FRAME_MS": "60"}, cwd=TESTS,
    )  # fmt: skip
    # A server in another language, started by --command, plays live the same way.
    runs["node"] = _start(
        [*common, "--command", "node server.js {address}", "--live-buffer", "120",
         "--out", str(tmp_path / "node")],
        cwd=NODE_TEMPLATE,
    )  # fmt: skip
    live = {name: _finish(proc, tmp_path / name) for name, proc in runs.items()}
    node = live["node"]["live"]
    assert isinstance(node, dict)
    assert node["frames_offered"] == 1085 and node["frames_dropped"] == 0, node

    def offline(system: str) -> dict[str, object]:
        path = reference_runs / run_name("apmbench", system) / "report.json"
        report: dict[str, object] = json.loads(path.read_text())
        return report

    for name in ("null", "frame-archive"):
        played = live[name]["live"]
        assert isinstance(played, dict)
        assert played["frames_offered"] == 1085 and played["frames_dropped"] == 0, played
        assert played["questions_asked"] == 21 and played["late"] == 0
        for key in ("overall", "families", "tasks"):
            assert live[name][key] == offline(name)[key], (name, key)
        header = live[name]["header"]
        assert isinstance(header, dict) and header["live"] == 32.0
        head = (tmp_path / name / "report.md").read_text().splitlines()[2]
        assert "**played live at 32x, buffer 120 s**" in head, head

    slow, text_log = live["model-sim"], offline("text-log")
    played = slow["live"]
    assert isinstance(played, dict)
    assert played["frames_dropped"] > 0.5 * played["frames_offered"], played
    assert slow["overall"]["score"] < text_log["overall"]["score"], (  # type: ignore[index]
        slow["overall"],
        text_log["overall"],
    )
    # An honest system ends each session within a frame or two of its end (what it was
    # perceiving and what waited); the deferring one, at the same price, with its backlog
    # of dozens of frames.
    honest = live["honest-60"]["live"]
    deferred = live["deferred"]["live"]
    assert isinstance(honest, dict) and isinstance(deferred, dict)
    # More than ten of its 60 ms frames owed (CI beside a loaded machine: 0.99 s, where a
    # bound of 1.0 s counted on how many frames the machine let it take before drops).
    assert deferred["ended_late_s"]["mean"] > 10 * 0.060, deferred
    assert deferred["ended_late_s"]["mean"] > 4 * honest["ended_late_s"]["mean"], (
        deferred["ended_late_s"],
        honest["ended_late_s"],
    )
    # Red team 14 hid the backlog in ExportState instead: the session settles late.
    to_export = live["to-export"]["live"]
    assert isinstance(to_export, dict)
    # More than ten of its 60 ms frames still owed at the end: the margin its own price sets
    # (CI, quiet beside one other run: 0.85 s, with 396 frames dropped before it took them;
    # a bound of 1.0 s counted on how many a loaded machine let through).
    assert to_export["settled_late_s"]["mean"] > 10 * 0.060, to_export
    assert to_export["settled_late_s"]["mean"] > 4 * honest["settled_late_s"]["mean"], (
        to_export["settled_late_s"],
        honest["settled_late_s"],
    )
    # Latencies run from each question's due time (a backlog is the system's latency).
    slow_rows = [
        json.loads(line)
        for line in (tmp_path / "model-sim" / "instances.jsonl").read_text().splitlines()
    ]
    assert all(r["total_s"] >= r["lag_s"] for r in slow_rows)
    section = (tmp_path / "model-sim" / "report.md").read_text().split("## Live play at 32x")[1]
    assert f"| frames offered / dropped | 1085 / {played['frames_dropped']}" in section

    # Live and offline numbers are kept apart unless told.
    mixed = CliRunner().invoke(
        main,
        [
            "compare",
            str(tmp_path / "null"),
            str(reference_runs / run_name("apmbench", "null")),
            "--out",
            str(tmp_path / "cmp"),
        ],
    )
    said = " ".join(mixed.output.split())
    assert mixed.exit_code != 0 and "played live at 32x" in said, mixed.output
    assert "Traceback" not in mixed.output
    both_live = CliRunner().invoke(
        main,
        [
            "compare",
            str(tmp_path / "null"),
            str(tmp_path / "frame-archive"),
            "--out",
            str(tmp_path / "cmp-live"),
        ],
    )
    assert both_live.exit_code == 0, both_live.output
    # Nor at another buffer: a bigger one buys frames a default run would drop.
    buffers = CliRunner().invoke(
        main, ["compare", str(tmp_path / "null"), str(tmp_path / "model-sim"),
               "--out", str(tmp_path / "cmp-buffer")],
    )  # fmt: skip
    assert buffers.exit_code != 0 and "buffer 1 s" in " ".join(buffers.output.split())
    # `score` keeps the live figures: they come from the records.
    rescored = CliRunner().invoke(main, ["score", str(tmp_path / "model-sim")])
    assert rescored.exit_code == 0, rescored.output
    again = json.loads((tmp_path / "model-sim" / "report.json").read_text())
    assert again["live"]["frames_dropped"] == played["frames_dropped"]


def _intervention(report: dict[str, object]) -> dict[str, float]:
    level = report["levels"]["intervention"]  # type: ignore[index]
    return {"f1": level["f1"], "start": level["start_at"]["0.2"]}  # type: ignore[index]


@pytest.mark.slow
def test_proactegomem_live_steps_of_a_slow_system_come_late_and_score_less(
    tmp_path: Path,
) -> None:
    common = ["--benchmark", "proactegomem", "--synthetic", "tiny", "--seed", "0"]
    weights = tmp_path / "weights"
    runs = {
        "offline": _start([*common, "--system", "proact-rules", "--out", str(tmp_path / "off")]),
        "live": _start(
            [
                *common,
                "--system",
                "proact-rules",
                "--live",
                "--speed",
                "4",
                "--out",
                str(tmp_path / "live"),
            ]
        ),
        # proact-rules' decisions at 400 ms a step: at 4x a step is due every 250 ms.
        "slowed": _start(
            [
                *common,
                "--system",
                "model-sim",
                "--env",
                f"APMBENCH_VLM_MODEL={weights}",
                "--live",
                "--speed",
                "4",
                "--out",
                str(tmp_path / "slowed"),
            ],
            _sim(weights, APMBENCH_SIM_MEMORY="proact-rules", APMBENCH_SIM_QUERY_MS="400"),
        ),
    }
    outs = {"offline": "off", "live": "live", "slowed": "slowed"}
    reports = {k: _finish(p, tmp_path / outs[k]) for k, p in runs.items()}
    offline, fast, slowed = (_intervention(reports[k]) for k in ("offline", "live", "slowed"))
    # proact-rules answers in milliseconds: live, it makes the same calls as offline, each
    # a few hundredths of a second of video later (its latency times the speed), which a
    # loaded machine can push past Start@0.2's bound. A machine loaded enough to make one
    # of its steps late or dropped (CI, beside other work) can cost it a call: then it
    # only has to beat the slowed system, below.
    kept_up = reports["live"]["live"]
    assert isinstance(kept_up, dict)
    if kept_up["late"] == 0 and kept_up["questions_dropped"] == 0:
        assert fast["f1"] == offline["f1"], (fast, offline)
    else:
        assert fast["f1"] <= offline["f1"], (fast, offline)
    played = reports["slowed"]["live"]
    assert isinstance(played, dict)
    assert played["late"] > 0 and played["questions_dropped"] > 0, played
    # A loaded machine can make a few of the fast system's steps late too, never as many.
    assert kept_up["late"] < played["late"], (kept_up, played)
    assert slowed["f1"] < fast["f1"] and slowed["start"] < fast["start"], (slowed, fast)
    # Every step has a record: the dropped ones say so and made no call.
    rows = [
        json.loads(line)
        for line in (tmp_path / "slowed" / "instances.jsonl").read_text().splitlines()
    ]
    dropped = [r for r in rows if r.get("live_dropped")]
    assert len(dropped) == played["questions_dropped"] and all(
        r["raw_output"] == "" for r in dropped
    )


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--speed", "2"], "--speed and --live-buffer: only with --live"),
        (["--live", "--speed", "0"], "--speed must be above 0"),
        (["--live", "--audit"], "--live and --audit"),
    ],
)
def test_live_options_are_checked(extra: list[str], said: str, tmp_path: Path) -> None:
    done = CliRunner().invoke(
        main,
        [
            "evaluate",
            "--synthetic",
            "tiny",
            "--seed",
            "0",
            "--system",
            "null",
            "--out",
            str(tmp_path / "run"),
            *extra,
        ],
    )
    assert done.exit_code == 2, done.output
    assert said in " ".join(done.output.split()) and "Traceback" not in done.output
