"""The ProactEgoMem plan: a step query every second at each level, memory QA in fresh
sessions with the condition's frames, and nothing on the wire but time and what the
system's own answers built."""

from __future__ import annotations

import json
import re

import pytest

from apmbench.harness.suites.proactegomem.dataset import Dataset, load_dataset
from apmbench.harness.suites.proactegomem.plan import plan_clip
from apmbench.harness.suites.proactegomem.synth import (
    OBJECTS,
    PALETTE,
    PANELS,
    PRESETS,
    SURFACES,
    build,
)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    root = tmp_path_factory.mktemp("small")
    build(PRESETS["small"], 0, root)
    return load_dataset(root)


def test_segments_steps_and_fresh_qa_sessions(small: Dataset) -> None:
    traj = small.trajectories[0]
    segments = plan_clip(small, traj)
    assert [(s.kind, s.name) for s in segments] == [
        ("main", "intervention"), ("after", "notification"),
        ("after", "qa-no"), ("after", "qa-proact"), ("after", "qa-oracle"),
    ]  # fmt: skip
    steps = segments[0].asks
    assert [a.time_ms for a in steps] == [1000 * k for k in range(60)]
    frames = [1000 * k for k in range(60)]
    kept = {s.name: [t for t in frames if s.keep_frame and s.keep_frame(t)] for s in segments}
    assert len(kept["qa-no"]) == 40 and kept["qa-no"][0] == 0 and kept["qa-no"][-1] == 59_000
    assert kept["qa-proact"] == [] and kept["qa-oracle"] == []
    assert all(s.snapshot_after is None for s in segments)


def test_the_wire_carries_only_time_for_a_silent_system(small: Dataset) -> None:
    """Rendered for a system that never acts, every step's query of every clip is the same
    text once its numbers are masked: no label reaches the wire but through the pixels."""
    seen = set()
    for traj in small.trajectories:
        for segment in plan_clip(small, traj)[:2]:
            assert segment.state is not None
            state = segment.state()
            for ask in segment.asks:
                query = state.render(ask, ask.query)
                assert query.choices == () and query.question == ""
                masked = re.sub(r"\d+(\.\d+)?", "#", query.prompt)
                # The window's length grows to 10 frames: a function of time too.
                seen.add((segment.name, re.sub(r"(Frame #: t=#s\n?)+", "<window>", masked)))
                record = {"raw_output": json.dumps({"message": None, "tool_calls": []})}
                state.update(ask, record)
    assert len(seen) == 6  # one text per level and task (the task's prompt is public)
    names = "|".join([*PALETTE, *OBJECTS, *SURFACES, *PANELS])
    for _, prompt in seen:
        context = prompt.split("## Assistant Context & Window of Video")[-1]
        assert '"current_time_sec": #' in context
        assert not re.search(names, context)


def test_qa_prompts_list_memory_only_where_the_condition_gives_it(small: Dataset) -> None:
    traj = small.trajectories[0]
    segments = {s.name: s for s in plan_clip(small, traj)}
    clip = small.clip(traj.trajectory_id)
    for name, memory in (("qa-no", False), ("qa-proact", False), ("qa-oracle", True)):
        segment = segments[name]
        assert segment.state is not None
        ask = segment.asks[0]
        prompt = segment.state().render(ask, ask.query).prompt
        section = prompt.split("## Memory")[1].split("## Evidence Frames")[0]
        # Proact lists what the (here: never run) intervention pass kept: nothing.
        listed = [e.object for e in clip.events if f"- {e.object} (" in section]
        assert bool(listed) == memory, name
        assert (name == "qa-no") == ("40 frames sampled uniformly" in prompt)


def test_the_oracle_memory_lists_the_annotated_state(small: Dataset) -> None:
    """ST's Oracle Memory reads each event's `state` from the data (it used to say "state: on"
    whatever the data said); an event without one is listed as not annotated."""
    import dataclasses

    from apmbench.harness.suites.proactegomem import prompts
    from apmbench.harness.suites.proactegomem.plan import ClipRun

    clip = next(c for c in small.clips if c.task == "ST")
    events = list(clip.events)
    events[0] = dataclasses.replace(events[0], state="open")
    events[1] = dataclasses.replace(events[1], state="")
    run = ClipRun(dataclasses.replace(clip, events=tuple(events)), [])
    memory = run.memory(prompts.ORACLE_MEMORY)
    assert memory[0].startswith(f"- {events[0].object} (state: open): from")
    assert memory[1].startswith(f"- {events[1].object} (state: not annotated): from")
    assert all("(state: on)" in m for m in memory[2:])  # the synthetic data says "on"
