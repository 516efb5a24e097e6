"""The fault campaign: a seeded sequence of injected faults against `evaluate`, each checked.

Every step runs the real command line (`python -m apmbench.harness.cli evaluate
--resume`) on the tiny synthetic preset with `helpers.faulty:Faulty` as a
sandboxed process, injecting one fault: the system crashes, hangs in an RPC,
exports a huge state, floods its log, prints markup and escapes, swaps its
socket for a link; or the harness itself gets SIGTERM or SIGKILL at a random
moment; or forged leftovers are planted for its cleanup to find. A step that
fails is followed by the next fault on the same run directory (with
`--resume`), until one finishes; a finished run's scores must equal those of
an uninterrupted, fault-free run. After every step nothing of the system may
remain (processes, socket directories), except after SIGKILL, whose leftovers
the next start must remove. Disk and log high-water marks are measured from
outside against the caps given, by `helpers.highwater.Watch` (fanotify: a breach
cannot slip between two looks, as it could between the polls of the old watcher).

Used by tests/integration/test_fault_campaign.py and by `make bench`.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from helpers.highwater import watcher
from helpers.timing import TIMING

TESTS = Path(__file__).resolve().parents[1]
MAX_STATE = 256 << 10
MAX_WORK = 1 << 20
MAX_LOG = 128 << 10
DEADLINE_S = 2.0
"""The least deadline on every RPC; the campaign raises it to DEADLINE_MARGIN times the
slowest single RPC its fault-free baseline measured, so that a loaded machine (CI beside
other jobs, a CPU hog) does not turn an honest call into a "hang"."""
DEADLINE_MARGIN = 8.0
DEADLINE_CAP_S = 30.0
"""A hang fault waits out the deadline: the cap bounds what one such step costs."""
BASELINE_DEADLINE_S = 120.0
"""The fault-free baseline's deadline: it is the measurement, so it must not be cut short."""
PER_CALL = ("ttft_s", "total_s", "end_session_s", "load_state_s", "export_s")
"""Record fields that each time one RPC (ingest_s sums a session's pushes)."""
FLAG_OF_RPC = {
    "reset": "--control-timeout",
    "start_session": "--control-timeout",
    "push": "--push-timeout",
    "query": "--query-timeout",
    "end_session": "--end-session-timeout",
    "export": "--state-timeout",
    "import": "--state-timeout",
}
ESCAPES = ("\x1b", "\x07", "\x9b")
PROCESS = ("--system", "helpers.faulty:Faulty")
"""How the campaign's system runs: a sandboxed process; the container tier passes an image."""


@dataclass(frozen=True)
class Fault:
    kind: str
    rpc: str = ""
    at: int = 1
    arg: int = 0
    """Bytes (huge-state, flood) or milliseconds before the signal (sigterm, sigkill)."""

    def env(self) -> str:
        if self.kind in ("sigterm", "sigkill", "none"):
            return "none"
        if self.kind == "forged-leftovers":
            return "crash:query:1"
        return f"{self.kind}:{self.rpc}:{self.at}:{self.arg}"

    def describe(self) -> str:
        return ":".join(str(x) for x in (self.kind, self.rpc, self.at, self.arg) if x)


def plan(seed: int, count: int, kinds: frozenset[str] | None = None) -> list[Fault]:
    """`count` faults drawn with `seed`; every kind appears (the gallery first, shuffled).
    `kinds` keeps only those kinds."""
    rng = random.Random(seed)
    gallery = [
        *(Fault("crash", rpc, rng.randint(1, 2)) for rpc in FLAG_OF_RPC),
        *(Fault("hang", rpc, 1) for rpc in ("push", "query", "end_session", "export")),
        Fault("hang", "start_session", 1),
        Fault("markup", "query", 1),
        Fault("markup", "end_session", 1),
        Fault("huge-state", "", 1, MAX_STATE * 4),
        Fault("huge-state", "", 2, MAX_STATE * 40),
        Fault("flood", "", 0, MAX_LOG * 8),
        Fault("symlink-socket"),
        Fault("forged-leftovers"),
        Fault("sigterm", "", 0, 1000),
        Fault("sigkill", "", 0, 1000),
    ]
    rng.shuffle(gallery)
    if kinds is not None:
        gallery = [f for f in gallery if f.kind in kinds]
    # One fault of each kind first, so that a short campaign still has every kind.
    first_of: dict[str, int] = {}
    for i, f in enumerate(gallery):
        first_of.setdefault(f.kind, i)
    firsts = set(first_of.values())
    gallery = [gallery[i] for i in sorted(range(len(gallery)), key=lambda i: i not in firsts)]
    drawn = ["crash", "hang", "markup", "huge-state", "flood", "sigterm", "sigkill"]
    drawn = [k for k in drawn if kinds is None or k in kinds]
    while len(gallery) < count:
        kind = rng.choice(drawn)
        rpc = rng.choice(sorted(FLAG_OF_RPC))
        if kind == "crash":
            gallery.append(Fault(kind, rpc, rng.randint(1, 3)))
        elif kind == "hang":
            gallery.append(Fault(kind, rpc, rng.randint(1, 2)))
        elif kind == "markup":
            gallery.append(Fault(kind, rng.choice(["query", "end_session", "push"]), 1))
        elif kind == "huge-state":
            gallery.append(Fault(kind, "", rng.randint(1, 3), rng.randint(MAX_STATE, MAX_WORK)))
        elif kind == "flood":
            gallery.append(Fault(kind, "", 0, rng.randint(MAX_LOG, MAX_LOG * 16)))
        else:
            gallery.append(Fault(kind, "", 0, rng.randint(0, 3000)))
    return gallery[:count]


@dataclass
class StepResult:
    fault: str
    exit_code: int
    finished: bool
    ok: bool
    problems: list[str]
    seconds: float
    work_peak_bytes: int
    log_section_peak_bytes: int
    leftovers: list[str] = field(default_factory=list)
    pid: int = 0
    caps_exact: bool = True
    """Whether the peaks were measured by fanotify (False: the poller's, which can miss)."""


def command(
    out: Path,
    token: str,
    fault: Fault,
    runtime: tuple[str, ...] = PROCESS,
    deadline_s: float = DEADLINE_S,
) -> list[str]:
    d = f"{deadline_s:.3f}"
    return [
        sys.executable, "-m", "apmbench.harness.cli", "evaluate",
        "--synthetic", "tiny", "--seed", "0", *runtime,
        "--persistence", "reset", "--out", str(out), "--resume",
        "--env", f"APMBENCH_FAULT={fault.env()}", "--env", f"APMBENCH_CAMPAIGN={token}",
        "--max-state-size", str(MAX_STATE), "--max-work-size", str(MAX_WORK),
        "--max-log-size", str(MAX_LOG),
        "--control-timeout", d, "--push-timeout", d,
        "--query-timeout", d, "--state-timeout", d,
        "--end-session-timeout", d,
    ]  # fmt: skip


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), env.get("PYTHONPATH")]))
    return env


def leftovers(token: str, harness_pid: int, settle_s: float = 5.0) -> list[str]:
    """What of a harness's systems remains: processes with the campaign's token in their
    environment, and its socket directories; a process still dying gets `settle_s`."""
    deadline = time.monotonic() + settle_s
    while True:
        found = _leftovers(token, harness_pid)
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.1)


def _leftovers(token: str, harness_pid: int) -> list[str]:
    found = []
    for proc in psutil.process_iter(["pid", "name"]):
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if proc.environ().get("APMBENCH_CAMPAIGN") == token:
                found.append(f"process {proc.pid} ({proc.info['name']})")
        except (psutil.Error, OSError):
            continue
    found += [f"directory {p}" for p in Path("/tmp").glob(f"apm-{harness_pid}-*")]
    return found


# How far past its question a process had been shown depends on where a run was stopped
# (a resumed run starts a fresh process): a fact of the run's history, not a score.
HISTORY = frozenset({"lookahead_s"})


# How often the judge was asked, and how often its cache answered, depends on which runs
# came before (the cache is shared): bookkeeping, not the verdict.
JUDGE_BOOKKEEPING = frozenset({"attempts", "cached_attempts"})


def _untimed(path: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    out = []
    for row in rows:
        kept = {k: v for k, v in row.items() if k not in TIMING | HISTORY}
        if isinstance(kept.get("judge"), dict):
            kept["judge"] = {k: v for k, v in kept["judge"].items() if k not in JUDGE_BOOKKEEPING}
        out.append(kept)
    return out


def slowest_call_s(out: Path) -> float:
    """The slowest single RPC a finished run recorded (its per-call timing fields)."""
    rows = [json.loads(line) for line in (out / "instances.jsonl").read_text().splitlines()]
    found = [
        float(v)
        for row in rows
        for k in PER_CALL
        if isinstance(v := row.get(k), int | float) and not isinstance(v, bool)
    ]
    return max(found, default=0.0)


def scaled_deadline_s(slowest_s: float) -> float:
    """The RPC deadline for the faulted steps, from the baseline's slowest call."""
    return min(DEADLINE_CAP_S, max(DEADLINE_S, DEADLINE_MARGIN * slowest_s))


def scores(out: Path) -> dict[str, Any]:
    report = json.loads((out / "report.json").read_text())
    return {
        "report": {k: v for k, v in report.items() if k not in ("latency", "isolation")},
        "instances": _untimed(out / "instances.jsonl"),
    }


def describe_difference(want: dict[str, Any], got: dict[str, Any]) -> str:
    """Which report keys and which instance fields differ (for a failure message)."""
    keys = sorted(
        k
        for k in {*want["report"], *got["report"]}
        if want["report"].get(k) != got["report"].get(k)
    )
    rows = {r["instance_id"]: r for r in got["instances"]}
    fields: set[str] = set()
    for row in want["instances"]:
        other = rows.get(row["instance_id"], {})
        fields |= {k for k in {*row, *other} if row.get(k) != other.get(k)}
    return f"report keys {keys}, instance fields {sorted(fields)}"


def _wait_for_start(proc: subprocess.Popen[bytes], log: Path, before: int) -> None:
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if log.exists() and log.stat().st_size > before:
            return
        time.sleep(0.01)


def _plant_forged() -> tuple[Path, list[Path]]:
    """A directory of value, and links to it named like a dead harness's socket directories."""
    victim = Path(tempfile.mkdtemp(prefix="campaign-victim-"))
    (victim / "precious").write_text("must survive")
    dead = 4_000_000 + random.randrange(100_000)  # above pid_max: no such process
    links = []
    for name in (f"apm-{dead}-forged", f"apm-{dead}-x"):
        link = Path("/tmp") / name
        link.unlink(missing_ok=True)
        link.symlink_to(victim)
        links.append(link)
    return victim, links


def one_step(
    out: Path,
    token: str,
    fault: Fault,
    timeout_s: float = 180.0,
    runtime: tuple[str, ...] = PROCESS,
    engine_leftovers: Callable[[Path, int], list[str]] = lambda out, pid: [],
    deadline_s: float = DEADLINE_S,
) -> StepResult:
    started = time.monotonic()
    problems: list[str] = []
    victim: Path | None = None
    links: list[Path] = []
    if fault.kind == "forged-leftovers":
        victim, links = _plant_forged()
    log = out / "logs" / "system.log"
    before = log.stat().st_size if log.exists() else 0
    with watcher(out) as watch:
        proc = subprocess.Popen(
            command(out, token, fault, runtime, deadline_s),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
        )
        if fault.kind in ("sigterm", "sigkill"):
            # Counted from the system's start (a new section in its log), so that the
            # signal lands inside the run rather than in the interpreter's start-up.
            _wait_for_start(proc, log, before)
            try:
                proc.wait(fault.arg / 1000)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGTERM if fault.kind == "sigterm" else signal.SIGKILL)
        try:
            stdout_b, stderr_b = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout_b, stderr_b = proc.communicate()
            problems.append(f"did not end within {timeout_s:.0f} s")
    stderr = stderr_b.decode(errors="replace")
    code = proc.returncode
    finished = code == 0
    expect: dict[str, tuple[set[int], list[str]]] = {
        "crash": ({3}, ["--resume"]),
        "hang": ({3}, [FLAG_OF_RPC.get(fault.rpc, ""), "--resume"]),
        "markup": ({3}, ["[/bogus]", "--resume"]),
        # Refused by the cap per snapshot, or by what the work directory's cap leaves.
        "huge-state": ({3}, ["-size (or give 'none')"]),
        "symlink-socket": ({3}, ["socket"]),
        "forged-leftovers": ({3}, ["--resume"]),
        "sigterm": ({143}, ["stopped by SIGTERM"]),
        "sigkill": ({-9}, []),
        "flood": ({0}, []),
        "none": ({0}, []),
    }
    codes, words = expect[fault.kind]
    # A fault that comes after the run's last call of its kind never fires: the run finishes.
    # SIGTERM while the interpreter still starts (before the harness's handler exists)
    # ends it at once; nothing was started then, which the leftover check below confirms.
    early = fault.kind == "sigterm" and code == -signal.SIGTERM and not stderr.strip()
    if not finished and code not in codes and not early:
        problems.append(f"exit code {code}, expected one of {sorted(codes)} or 0")
    if not finished and not early:
        problems += [f"stderr lacks {w!r}" for w in words if w not in stderr]
    # Inside a run a SIGTERM stop says how to resume; before one, that nothing was running.
    said = "--resume" in stderr or "outside a run" in stderr
    if fault.kind == "sigterm" and code == 128 + signal.SIGTERM and not said:
        problems.append("a SIGTERM stop said neither how to resume nor that nothing ran")
    if any(e in stderr or e in stdout_b.decode(errors="replace") for e in ESCAPES):
        problems.append("a control sequence reached the terminal")
    if "Traceback" in stderr:
        problems.append("the harness printed a traceback")
    problems += watch.problems  # fanotify may have lost an event: the peaks are unproven
    if watch.work_peak > MAX_WORK:
        problems.append(f"work directory reached {watch.work_peak} bytes > {MAX_WORK}")
    # A section: its header, at most MAX_LOG bytes of output, a truncation notice.
    if watch.section_peak > MAX_LOG + 512:
        problems.append(f"a log section reached {watch.section_peak} bytes > {MAX_LOG}")
    time.sleep(0.2)  # let the kernel reap what the harness killed
    left = (
        leftovers(token, proc.pid) + engine_leftovers(out, proc.pid)
        if fault.kind != "sigkill"
        else []
    )
    if victim is not None:
        if not (victim / "precious").exists():
            problems.append(f"cleanup deleted {victim} through a forged leftover")
        for link in links:
            link.unlink(missing_ok=True)
        (victim / "precious").unlink(missing_ok=True)
        victim.rmdir()
    return StepResult(
        fault.describe(),
        code,
        finished,
        not problems and not left,
        problems,
        round(time.monotonic() - started, 2),
        watch.work_peak,
        watch.section_peak,
        left,
        proc.pid,
        watch.exact,
    )


def run_campaign(
    root: Path,
    seed: int = 18,
    count: int = 50,
    say: Callable[[str], None] = lambda s: None,
    runtime: tuple[str, ...] = PROCESS,
    kinds: frozenset[str] | None = None,
    engine_leftovers: Callable[[Path, int], list[str]] = lambda out, pid: [],
) -> dict[str, Any]:
    """Run `count` faults; the summary the test asserts on and `make bench` prints.
    `runtime` and `engine_leftovers` run it with containers (tests/containers)."""

    deadline_s = BASELINE_DEADLINE_S

    def step(out: Path, token: str, fault: Fault) -> StepResult:
        return one_step(
            out,
            token,
            fault,
            runtime=runtime,
            engine_leftovers=engine_leftovers,
            deadline_s=deadline_s,
        )

    token = uuid.uuid4().hex
    baseline_out = root / "baseline"
    base = step(baseline_out, token, Fault("none"))
    if not base.finished:
        raise RuntimeError(f"the fault-free baseline run failed: {base}")
    expected = scores(baseline_out)
    deadline_s = scaled_deadline_s(slowest_call_s(baseline_out))
    say(f"RPC deadline {deadline_s:.2f} s (baseline's slowest call x {DEADLINE_MARGIN:g})")
    steps: list[StepResult] = []
    runs = 0
    finished_runs = 0
    lost = 0
    mismatched = 0
    killed_pid: int | None = None
    late_leftovers = 0
    out = root / "run-0"

    differences: list[str] = []

    def close_run(out: Path) -> None:
        nonlocal finished_runs, lost, mismatched
        finished_runs += 1
        got = scores(out)
        want_ids = {r["instance_id"] for r in expected["instances"]}
        have_ids = {r["instance_id"] for r in got["instances"]}
        lost += len(want_ids - have_ids)
        if got != expected:
            mismatched += 1
            differences.append(f"{out.name}: {describe_difference(expected, got)}")

    for index, fault in enumerate(plan(seed, count, kinds)):
        result = step(out, token, fault)
        started_system = result.exit_code in (0, 3)
        if killed_pid is not None and started_system:
            # What a SIGKILLed harness left must be gone once a later harness started a system.
            left = leftovers(token, killed_pid) + engine_leftovers(out, killed_pid)
            if left:
                late_leftovers += 1
                result.problems.append(f"SIGKILL leftovers not removed: {left}")
                result.ok = False
            killed_pid = None
        if fault.kind == "sigkill" and result.exit_code == -signal.SIGKILL:
            killed_pid = result.pid
        steps.append(result)
        say(
            f"[{index + 1}/{count}] {result.fault}: exit {result.exit_code}"
            + (" (run finished)" if result.finished else "")
            + ("" if result.ok else f" PROBLEMS {result.problems} {result.leftovers}")
        )
        if result.finished:
            close_run(out)
            runs += 1
            out = root / f"run-{runs}"
    # The run in progress ends with a fault-free resume.
    if (out / "manifest.json").exists() or out.exists():
        final = step(out, token, Fault("none"))
        steps.append(final)
        if final.finished:
            close_run(out)
        else:
            final.problems.append("the final fault-free resume failed")
    leftover_steps = sum(1 for s in steps if s.leftovers) + late_leftovers
    return {
        "seed": seed,
        "faults": count,
        "rpc_deadline_s": round(deadline_s, 3),
        "steps": len(steps),
        "runs_finished": finished_runs,
        "instances_lost": lost,
        "runs_with_other_scores": mismatched,
        "scores_equal_after_resume": mismatched == 0,
        "score_differences": differences[:10],
        "steps_with_leftovers": leftover_steps,
        "steps_with_problems": sum(1 for s in steps if not s.ok),
        "work_peak_bytes": max(s.work_peak_bytes for s in steps),
        "work_cap_bytes": MAX_WORK,
        "log_section_peak_bytes": max(s.log_section_peak_bytes for s in steps),
        "log_cap_bytes": MAX_LOG,
        # False where fanotify is not allowed (no CAP_SYS_ADMIN): the peaks are then the
        # 10 ms poller's, which a short breach can slip past; the tests skip on it.
        "caps_measured_exactly": all(s.caps_exact for s in steps),
        "caps_held": all(
            s.work_peak_bytes <= MAX_WORK and s.log_section_peak_bytes <= MAX_LOG + 512
            for s in steps
        ),
        "seconds": round(sum(s.seconds for s in steps) + base.seconds, 1),
        "problems": [asdict(s) for s in steps if not s.ok],
    }
