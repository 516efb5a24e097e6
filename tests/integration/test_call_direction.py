"""No call runs against the layer order: a tracer over a whole evaluation (`evaluate
--synthetic tiny --system text-log`, in this process) sees no function of a lower layer
call a function defined in a higher one (docs/ARCHITECTURE.md's order,
tests/helpers/layers.py). The import guard (tests/unit/test_layering.py) cannot see such a
call: a callback handed down (a grading lambda, a suite's answer key, a runtime's liveness
check) is imported by nobody below, yet runs there. The runner now records raw answers and
the scorer grades them; a runtime waits for its own process beside the health checks."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from helpers.layers import LEVEL

from apmbench.adapters.sdk.types import Frame, FrameEncoding
from apmbench.harness.orchestrate.evaluate import EvaluateOptions, evaluate
from apmbench.harness.run.executor import _kept
from apmbench.harness.runtimes import runtime_spec
from apmbench.harness.suites.apmbench import organisation
from apmbench.harness.suites.apmbench.synth.cache import synthetic_dataset

pytestmark = pytest.mark.integration
HARNESS = str(Path(__file__).resolve().parents[2] / "harness") + "/"


def _layer(filename: str) -> str | None:
    if not filename.startswith(HARNESS):
        return None
    name = filename[len(HARNESS) :].split("/")[0].removesuffix(".py")
    return name if name in LEVEL else None


def _where(frame: FrameType) -> str:
    return f"{frame.f_code.co_filename[len(HARNESS) :]}:{frame.f_code.co_name}"


@contextmanager
def upward_calls() -> Iterator[Counter[tuple[str, str]]]:
    """Every call, in every thread, from harness code into harness code of a higher layer."""
    found: Counter[tuple[str, str]] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_back is None:
            return
        callee = _layer(frame.f_code.co_filename)
        caller = _layer(frame.f_back.f_code.co_filename)
        if callee is not None and caller is not None and LEVEL[callee] > LEVEL[caller]:
            found[(_where(frame.f_back), _where(frame))] += 1

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        yield found
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def test_the_tracer_sees_a_callback_handed_down() -> None:
    """The positive control: the runner calling a suite's frame filter is an upward call."""
    frames = (Frame(t, FrameEncoding.JPEG, 2, 2, b"") for t in (0, 1000, 2000))
    keep: Callable[[int], bool] = organisation.keeps([(0, 1000)])
    with upward_calls() as found:
        kept = list(_kept(frames, keep))  # type: ignore[arg-type]
    assert [f.time_ms for f in kept] == [0, 1000]
    assert ("run/executor.py:_kept", "suites/apmbench/organisation.py:keep") in found, found


@pytest.mark.slow
def test_an_evaluation_makes_no_call_against_the_layer_order(tmp_path: Path) -> None:
    opts = EvaluateOptions(
        dataset=synthetic_dataset("tiny", 0),
        out=tmp_path / "run",
        runtime=runtime_spec(system="text-log"),
    )
    with upward_calls() as found:
        done = evaluate(opts)
    families = done.report["families"]  # type: ignore[typeddict-item]
    assert families["cross_session_understanding"]["score"] is not None, families
    assert not found, "\n".join(f"{n} x {a} -> {b}" for (a, b), n in found.most_common())
