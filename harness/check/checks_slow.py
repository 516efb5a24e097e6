"""The slow checks: answers survive a restart plus import; a state past 64 MiB moves in chunks."""

from __future__ import annotations

import io
import math

from apmbench.adapters.sdk.clock import MS_PER_DAY
from apmbench.adapters.sdk.types import FrameEncoding, SessionEnd, SessionStart
from apmbench.harness.check import probes
from apmbench.harness.check.checks_state import DEFAULT_CHUNK, first_difference
from apmbench.harness.check.context import CheckContext
from apmbench.harness.check.model import check
from apmbench.harness.check.probes import SESSION_1, SESSION_2
from apmbench.harness.check.verdicts import CheckFailed, NotApplicable, Passed
from apmbench.harness.protocol import wire_rules

SDK_LARGE_TEST = "tests/integration/test_rpcs.py (a 70 MiB state through the SDK)"


def _answers_in_session_2(ctx: CheckContext, tid: str, rounds: int = 1) -> list[list[str]]:
    """The probe answers in session 2, asked `rounds` times over (queries are read-only)."""
    probes.start(ctx.client, tid, SESSION_2)
    ctx.client.push(probes.session_items(SESSION_2, ctx.info))
    queries = probes.probe_queries()
    texts = [[r.text for r in probes.ask(ctx.client, queries)] for _ in range(rounds)]
    probes.end(ctx.client, SESSION_2)
    return texts


@check(
    "persistence-restart",
    "R6",
    "after a restart and ImportState, the probe answers equal those without the restart",
    slow=True,
)
def persistence_restart(ctx: CheckContext) -> Passed:
    ctx.require_import()
    if not ctx.runtime.can_restart:
        raise NotApplicable(
            f"the {ctx.runtime.kind} runtime cannot restart the server",
            "run check with --system or --image to test persistence across a restart",
        )
    tid = ctx.fresh("persistence")
    probes.play(ctx.client, tid, SESSION_1, ctx.info)
    saved = ctx.export()
    without, control = _answers_in_session_2(ctx, tid, rounds=2)
    if control != without:
        raise NotApplicable(
            "the same queries asked twice on the same memory got other answers, so answers "
            "cannot show what a restart lost",
            "answer deterministically (greedy decoding, fixed seeds) to have persistence checked",
        )
    client = ctx.restart()
    client.reset(tid)
    client.import_state(saved.manifest, io.BytesIO(saved.data))
    [after] = _answers_in_session_2(ctx, tid)
    if after != without:
        changed = [
            f"{q.kind.value}: {a!r} without the restart, {b!r} after it"
            for q, a, b in zip(probes.probe_queries(), without, after, strict=True)
            if a != b
        ]
        raise CheckFailed(
            "after a restart and ImportState of the exported state, answers changed: "
            + "; ".join(changed),
            "export_state must hold everything later answers depend on; nothing may live only "
            "in the process (globals, caches, files outside the export)",
        )
    return Passed(f"{len(after)} answers equal after a restart; {saved.manifest.total_bytes} bytes")


def _grow(ctx: CheckContext, tid: str, frames: int, session: int) -> int:
    """Push `frames` noise frames in a session of their own; returns the state's size after."""
    info = ctx.info
    accepted = info.capabilities.frame_encodings
    # Raw frames are the largest, so a memory that keeps frames grows fastest.
    encoding = FrameEncoding.RGB24 if FrameEncoding.RGB24 in accepted else accepted[0]
    side = info.capabilities.preferred_max_side or probes.DEFAULT_SIDE
    start = session * MS_PER_DAY
    ctx.client.start_session(SessionStart(tid, f"L{session}", f"DAY{session + 1}", start))
    for first in range(0, frames, 32):
        batch = [
            probes.encode(probes.noise(side, side * 3 // 4, k), start + k * 1000, encoding)
            for k in range(first, min(frames, first + 32))
        ]
        ctx.client.push(batch)
    ctx.client.end_session(SessionEnd(f"L{session}", start + frames * 1000))
    return ctx.export().manifest.total_bytes


@check(
    "state-large-transfer",
    "R7",
    "a memory past 64 MiB exports in chunks of at most 1 MiB (2 MiB if asked more), imports back",
    slow=True,
)
def state_large_transfer(ctx: CheckContext) -> Passed:
    target = ctx.settings.large_state_bytes
    budget = ctx.settings.large_state_frames
    tid = ctx.fresh("large")
    empty = ctx.export().manifest.total_bytes
    probe_frames = 16
    size = _grow(ctx, tid, probe_frames, 0)
    per_frame = (size - empty) / probe_frames
    needed = math.inf if per_frame <= 0 else (target - size) / per_frame
    if size <= target and needed > budget - probe_frames:
        raise NotApplicable(
            f"the memory grows {per_frame:,.0f} bytes a frame ({size:,} bytes after "
            f"{probe_frames} frames): passing {target >> 20} MiB would take more than {budget} "
            f"frames, so no state this large can be made of the system's own memory; the "
            f">64 MiB transfer path is tested in {SDK_LARGE_TEST}",
        )
    if size <= target:
        size = _grow(ctx, tid, math.ceil(needed * 1.1) + 1, 1)
    if size <= target:
        raise NotApplicable(f"the memory stopped growing at {size:,} bytes")
    big = ctx.export()
    if max(big.chunk_sizes) > DEFAULT_CHUNK:
        raise CheckFailed(
            f"a {size:,}-byte state came in chunks of up to {max(big.chunk_sizes):,} bytes",
            "split the state into chunks of at most max_chunk_bytes (0 means 1 MiB)",
        )
    # Asked for more than the cap, a server still sends at most 2 MiB (the client refuses more).
    capped = ctx.export(4 * wire_rules.MAX_CHUNK_BYTES)
    moved = (
        f"{size:,} bytes exported in {len(big.chunk_sizes)} chunks in {big.seconds:.1f} s; "
        f"asked for 8 MiB chunks, got at most {max(capped.chunk_sizes):,} bytes"
    )
    if not ctx.info.capabilities.supports_import:
        return Passed(moved + " (no import: the system declares none)")
    ctx.client.reset(tid)
    # Chunks of exactly the cap are valid input (R7).
    ctx.client.import_state(big.manifest, io.BytesIO(big.data), wire_rules.MAX_CHUNK_BYTES)
    back = ctx.export()
    if back.manifest.sha256 != big.manifest.sha256:
        raise CheckFailed(
            f"a {size:,}-byte state imported and exported again differs: "
            + first_difference(big.data, back.data),
            "import_state must restore exactly the memory that export_state wrote",
        )
    return Passed(moved + "; imported and exported back identical")


CHECKS = (persistence_restart, state_large_transfer)
