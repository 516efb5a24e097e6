"""What arrives on the wire says (almost) nothing of when a question comes.

A system that can tell from the wire that a question follows a push does its query work in
that push, and its time to first token looks near zero. Push sizes were closed first
(tests/integration/test_push_sizes.py); red team 3 then predicted a question from the user
turns: an interval marker (the MPA, PRM and TPG probes' own turn) was followed by its question
3-6 s later, so a depth-3 tree said "a question follows this push" at a held-out balanced
accuracy of 0.750. Now every replay of a session carries the session's markers and ends a
push at every time any replay of it asks (harness/suites/apmbench/decoys.py).

The test runs a real evaluation of APM-Bench `small` against a real gRPC server (the `null`
system behind a recording servicer, tests/helpers/wire_recorder.py), turns every push into
what a server had seen by its end (tests/helpers/question_leak.py), trains trees of depth
3-5 on seeds 0-2 and tests them on seeds 7-9, without and with the wall-clock gap
before each push (a null system answers at once, so that gap is the harness's own work). The
same code, with the decoys switched off (the rule main had), finds the leak on one pair.
One pair a side was too noisy for a bound (seeds 0 -> 7 once read 0.614 while the nine pairs
of 0-2 x 7-9 read 0.547-0.586), so seeds are pooled. With a replay going on past one ask time
after its question, generator 6 read 0.577-0.604 (depths 3-5, both ways); the tree read the
time into the session and "after a query", since fewer replays reached a session's later
minutes. Going on past two (decoys.GO_ON_PAST) reads 0.563-0.583.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.broken_servers import serve_raw
from helpers.question_leak import explain, held_out_balanced_accuracy, rows
from helpers.wire_recorder import Call, RecordingServicer

from apmbench.adapters.sdk import RunningServer
from apmbench.adapters.systems import load_system
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import Persistence
from apmbench.harness.run.push_cuts import PushCuts
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

pytestmark = [pytest.mark.integration, pytest.mark.slow]

DEPTHS = (3, 4, 5)
TRAIN_SEEDS, TEST_SEEDS = (0, 1, 2), (7, 8, 9)
BOUND = 0.60
"""What the held-out balanced accuracy must not pass (measured 0.563-0.583, see above)."""


@pytest.fixture
def servers() -> Iterator[list[RunningServer]]:
    running: list[RunningServer] = []
    yield running
    for server in running:
        server.stop(grace=None)


def recorded(
    seed: int, cuts: PushCuts, out: Path, sock_dir: Path, servers: list[RunningServer]
) -> list[Call]:
    """Every call a server received while APM-Bench `small` (this seed) was evaluated on it.

    `reset` mode, so one server sees the whole run; what one process would have seen in
    `restart` mode starts at each Reset, which is where the rows start afresh."""
    servicer = RecordingServicer(load_system("null"))
    address = f"unix:{sock_dir}/seed{seed}"
    servers.append(serve_raw(servicer, address))
    evaluate(
        EvaluateOptions(
            dataset=synthetic_dataset("small", seed),
            out=out / f"seed{seed}",
            runtime=runtime_spec(endpoint=address),
            persistence=Persistence.RESET,
            push=cuts,
        )
    )
    return servicer.calls


def markers_by_replay(calls: list[Call]) -> list[tuple[int, int, list[int]]]:
    """Per session a process played: its start, the last item time it got, and the times of
    the interval markers it got."""
    out: list[tuple[int, int, list[int]]] = []
    for call in calls:
        if call.rpc == "StartSession":
            out.append((call.time_ms or 0, call.time_ms or 0, []))
        elif call.rpc == "Push" and call.items and out:
            start, _, markers = out[-1]
            markers += [i.time_ms for i in call.items if i.kind == "interval_marker"]
            out[-1] = (start, call.items[-1].time_ms, markers)
    return out


def leak(
    cuts: PushCuts,
    tmp_path: Path,
    sock_dir: Path,
    servers: list[RunningServer],
    seeds: tuple[tuple[int, ...], tuple[int, ...]] = (TRAIN_SEEDS, TEST_SEEDS),
) -> tuple[dict[str, float], str, list[Call]]:
    runs = {s: recorded(s, cuts, tmp_path, sock_dir, servers) for s in (*seeds[0], *seeds[1])}
    calls = runs[seeds[0][0]]

    def pooled(side: tuple[int, ...], wall_clock: bool) -> tuple[list[list[float]], list[int]]:
        features: list[list[float]] = []
        labels: list[int] = []
        for seed in side:
            x, y = rows(runs[seed], wall_clock)
            features += x
            labels += y
        return features, labels

    accuracies: dict[str, float] = {}
    for wall_clock in (False, True):
        train, test = pooled(seeds[0], wall_clock), pooled(seeds[1], wall_clock)
        for name, (_, labels) in (("train", train), ("test", test)):
            # Enough of both kinds that a balanced accuracy means something.
            assert sum(labels) > 150 and len(labels) - sum(labels) > 150, (name, len(labels))
        for d in DEPTHS:
            key = f"depth {d}{', wall clock' if wall_clock else ''}"
            accuracies[key] = held_out_balanced_accuracy(train, test, d)
    print(
        f"decoys={cuts.decoys}: pushes {len(train[1])}/{len(test[1])}, followed by a question "
        f"{sum(train[1])}/{sum(test[1])}; held-out balanced accuracy: "
        + "; ".join(f"{k} {a:.3f}" for k, a in accuracies.items())
    )
    return accuracies, explain(train, DEPTHS[0]), calls


def test_no_push_announces_a_question(
    tmp_path: Path, sock_dir: Path, servers: list[RunningServer]
) -> None:
    accuracies, tree, calls = leak(PushCuts(seed=7), tmp_path, sock_dir, servers)
    assert max(accuracies.values()) <= BOUND, f"{accuracies}\n{tree}"
    # On the wire: every replay of a session got every marker of it up to where it stopped,
    # so a marker cannot tell one replay (the one whose question it opens) from another.
    replays = markers_by_replay(calls)
    markers: dict[int, set[int]] = {}
    for start, _, got in replays:
        markers.setdefault(start, set()).update(got)
    assert sum(len(m) for m in markers.values()) > 50
    for start, last, got in replays:
        assert got == sorted(m for m in markers[start] if m <= last), start


def test_without_decoys_a_marker_announced_its_question(
    tmp_path: Path, sock_dir: Path, servers: list[RunningServer]
) -> None:
    old = replace(PushCuts(seed=7), decoys=False)
    accuracies, tree, _ = leak(old, tmp_path, sock_dir, servers, ((0,), (7,)))
    assert min(accuracies.values()) >= 0.70, f"{accuracies}\n{tree}"
    assert "interval_marker" in tree, tree  # the marker is what gives it away
