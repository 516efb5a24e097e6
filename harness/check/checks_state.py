"""ExportState and ImportState: deterministic, chunked, round-tripping; Reset forgets."""

from __future__ import annotations

import io

from apmbench.adapters.sdk import errors
from apmbench.harness.check import probes
from apmbench.harness.check.context import CheckContext, Export
from apmbench.harness.check.expect import expect_error
from apmbench.harness.check.model import check
from apmbench.harness.check.probes import SESSION_1
from apmbench.harness.check.verdicts import CheckFailed, NotApplicable, Passed
from apmbench.harness.protocol import wire_rules
from apmbench.harness.wording import counted

DEFAULT_CHUNK = wire_rules.DEFAULT_CHUNK_BYTES
DETERMINISM_HINT = (
    "build the export canonically: sorted keys, no timestamps, random ids, object addresses or "
    "set/dict iteration order that can change"
)


def first_difference(a: bytes, b: bytes) -> str:
    """Where two exports part, with a little of each, for the failure message."""
    at = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    lo = max(0, at - 32)
    return (
        f"{len(a)} vs {len(b)} bytes, first difference at byte {at} "
        f"(shown from byte {lo}): {a[lo : at + 24]!r} vs {b[lo : at + 24]!r}"
    )


def _export(ctx: CheckContext, max_chunk_bytes: int = 0) -> Export:
    # A state stream that breaks MANIFEST, STATE-STREAM or R7 arrives as a WireRuleError:
    # the suite fails it in the check that owns that rule and marks the others not
    # applicable (suite.EXPORT_RULE_OWNERS), so one defect is one failure.
    try:
        return ctx.export(max_chunk_bytes)
    except (errors.InvalidArgument, errors.DataLoss) as e:
        raise CheckFailed(
            f"ExportState is not a valid state stream: {e}",
            "send the manifest alone first, then data chunks whose total length and sha256 "
            "match it (the SDK does)",
        ) from e


def _with_session_1(ctx: CheckContext, label: str, trajectory_id: str | None = None) -> str:
    tid = trajectory_id or ctx.fresh(label)
    if trajectory_id is not None:
        ctx.client.reset(tid)
    probes.play(ctx.client, tid, SESSION_1, ctx.info)
    return tid


@check(
    "export-manifest",
    "MANIFEST",
    "the export is a manifest (64 lower-case hex sha256, exact length) and then only data",
)
def export_manifest(ctx: CheckContext) -> Passed:
    _with_session_1(ctx, "manifest")
    # The client verifies shape, sha256 form, length and digest of every export it reads.
    state = _export(ctx)
    return Passed(
        f"manifest of {state.manifest.total_bytes} bytes, sha256 {state.manifest.sha256[:12]}..., "
        f"then {counted(len(state.chunk_sizes), 'data chunk')} matching it"
    )


@check(
    "import-closes-session",
    "R6",
    "a state exported mid-session imports with no session open; bytes_imported counts its data",
    since="1.3",
)
def import_closes_session(ctx: CheckContext) -> Passed:
    ctx.require_import()
    tid = ctx.fresh("mid-session")
    probes.start(ctx.client, tid, SESSION_1)
    ctx.client.push(probes.session_items(SESSION_1, ctx.info))
    state = _export(ctx)  # in the middle of the session (R6: callable at any time)
    probes.end(ctx.client, SESSION_1)
    ctx.client.reset(tid)
    imported = ctx.client.import_state(state.manifest, io.BytesIO(state.data))
    if imported != state.manifest.total_bytes:
        raise CheckFailed(
            f"ImportState of {state.manifest.total_bytes} data bytes answered bytes_imported = "
            f"{imported}",
            "answer bytes_imported with the total bytes of the data chunks (manifest excluded)",
        )
    if ctx.info.capabilities.resumes_sessions:
        # R14 reopens the session; `resume-session` checks that path.
        return Passed(f"{imported} bytes imported; the session reopens (R14, resume-session)")
    # R6: the export holds memory, not the lifecycle: no session is open after the import.
    expect_error(
        errors.FailedPrecondition,
        "PushFrames right after ImportState of a state exported mid-session",
        lambda: ctx.client.push(probes.session_items(SESSION_1, ctx.info)[-1:]),
        "ImportState restores memory only: afterwards no session is open (R6)",
    )
    return Passed(f"{imported} bytes imported; no session open afterwards")


@check("export-deterministic", "R6", "the same memory exports to the same bytes, at any chunk size")
def export_deterministic(ctx: CheckContext) -> Passed:
    _with_session_1(ctx, "determinism")
    first = _export(ctx)
    again = _export(ctx)
    small = _export(ctx, 4096)
    for other, how in ((again, "a second export"), (small, "an export in 4 KiB chunks")):
        if other.data != first.data:
            raise CheckFailed(
                f"{how} of the same memory differs from the first: "
                + first_difference(first.data, other.data),
                DETERMINISM_HINT,
            )
    return Passed(f"3 exports of {first.manifest.total_bytes} bytes are identical")


@check("export-chunking", "R7", "manifest first, then chunks no larger than asked (default 1 MiB)")
def export_chunking(ctx: CheckContext) -> Passed:
    _with_session_1(ctx, "chunks")
    # The client refuses a chunk over the size asked (wire_rules.chunk_problem), so two
    # exports that arrive at all kept R7.
    default = _export(ctx)
    total = default.manifest.total_bytes
    asked = max(1, min(1024, total // 3))
    small = _export(ctx, asked)
    return Passed(
        f"{total} bytes in {counted(len(default.chunk_sizes), 'chunk')} by default and "
        f"{len(small.chunk_sizes)} of at most {asked} bytes when asked"
    )


@check("state-round-trip", "R6", "export, Reset, import (in small chunks), export again: equal")
def state_round_trip(ctx: CheckContext) -> Passed:
    ctx.require_import()
    tid = _with_session_1(ctx, "round-trip")
    original = _export(ctx)
    if _export(ctx).data != original.data:
        raise NotApplicable(
            "exports of the same memory differ (see export-deterministic)", DETERMINISM_HINT
        )
    ctx.client.reset(tid)
    piece = max(1, min(1024, original.manifest.total_bytes // 3))
    ctx.client.import_state(original.manifest, io.BytesIO(original.data), piece)
    restored = _export(ctx)
    if restored.data != original.data:
        raise CheckFailed(
            "after Reset and ImportState of an export, exporting again gives other bytes: "
            + first_difference(original.data, restored.data),
            "import_state must restore exactly the memory that export_state wrote",
        )
    return Passed(
        f"{original.manifest.total_bytes} bytes round-trip (imported in {piece}-byte chunks)"
    )


@check("reset-forgets", "RESET", "after Reset the state is the empty state again")
def reset_forgets(ctx: CheckContext) -> Passed:
    tid = ctx.fresh("reset")
    empty = _export(ctx)
    if _export(ctx).data != empty.data:
        raise NotApplicable(
            "exports of the same memory differ (see export-deterministic)", DETERMINISM_HINT
        )
    _with_session_1(ctx, "reset", trajectory_id=tid)
    full = _export(ctx)
    ctx.client.reset(tid)
    after = _export(ctx)
    if after.data != empty.data:
        raise CheckFailed(
            "after Reset the export differs from the export after the first Reset "
            f"(a session in between left {full.manifest.total_bytes} bytes): "
            + first_difference(empty.data, after.data),
            "reset() must drop every memory of the trajectory",
        )
    sizes = (full.manifest.total_bytes, after.manifest.total_bytes)
    return Passed("{} bytes after a session, {} after Reset".format(*sizes))


CHECKS = (
    export_manifest,
    export_deterministic,
    export_chunking,
    state_round_trip,
    import_closes_session,
    reset_forgets,
)
