"""Push sizes carry no question. Pushes used to hold up to 64 frames and end at every
question, so a short push announced one: a system moved its query work into the push
before each question and took its time to first token from 0.233 s to 0.007 s. Now a
push also ends at random after each item (harness/run/push_cuts.py); the test measures
the leak as a timing classifier would, the best size threshold predicting "a question
follows this push", and holds its balanced accuracy near chance. With the old rule the
same measurement finds the leak."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.protocol.client import SystemClient
from apmbench.harness.run.executor import Persistence
from apmbench.harness.run.push_cuts import PushCuts
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset


def best_balanced_accuracy(sizes: list[int], followed: list[bool]) -> float:
    """The best balanced accuracy of "a question follows" from one size threshold, either way."""
    positives = [s for s, q in zip(sizes, followed, strict=True) if q]
    negatives = [s for s, q in zip(sizes, followed, strict=True) if not q]
    best = 0.5
    for threshold in sorted(set(sizes)):
        tpr = sum(s <= threshold for s in positives) / len(positives)
        tnr = sum(s > threshold for s in negatives) / len(negatives)
        best = max(best, (tpr + tnr) / 2, 1 - (tpr + tnr) / 2)
    return best


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int]]]:
    """Every push (with its item count) and query the harness makes, in order."""
    seen: list[tuple[str, int]] = []
    push, query = SystemClient.push, SystemClient.query

    def counted_push(self: SystemClient, items, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(("push", len(items)))
        return push(self, items, *args, **kwargs)

    def counted_query(self: SystemClient, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(("query", 0))
        return query(self, *args, **kwargs)

    monkeypatch.setattr(SystemClient, "push", counted_push)
    monkeypatch.setattr(SystemClient, "query", counted_query)
    yield seen


def leak(tmp_path: Path, calls: list[tuple[str, int]], cuts: PushCuts) -> float:
    evaluate(
        EvaluateOptions(
            dataset=synthetic_dataset("small", 0),
            out=tmp_path / "run",
            runtime=runtime_spec(system="null", sandbox=False),
            persistence=Persistence.TRUST,
            push=cuts,
        )
    )
    sizes, followed = [], []
    for (kind, size), (after, _) in zip(calls, [*calls[1:], ("end", 0)], strict=True):
        if kind == "push":
            sizes.append(size)
            followed.append(after == "query")
    assert sum(followed) > 50 and len(followed) - sum(followed) > 50
    accuracy = best_balanced_accuracy(sizes, followed)
    print(f"pushes {len(sizes)}, before a question {sum(followed)}, best BA {accuracy:.3f}")
    return accuracy


@pytest.mark.slow
def test_push_sizes_say_nothing_of_a_coming_question(
    tmp_path: Path, calls: list[tuple[str, int]]
) -> None:
    assert leak(tmp_path, calls, PushCuts(seed=7)) < 0.6


@pytest.mark.slow
def test_the_old_fixed_cuts_announced_every_question(
    tmp_path: Path, calls: list[tuple[str, int]]
) -> None:
    # The old rule had no decoy cuts either: those end pushes where other replays ask.
    old = replace(PushCuts(seed=7), at_random=False, decoys=False)
    assert leak(tmp_path, calls, old) > 0.9
