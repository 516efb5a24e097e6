"""What the system could see beyond the protocol, stated in every report of every suite.

Numbers are comparable only between systems confined the same way; whatever
the user relaxed (a mounted host path, an unconfined process) is printed next
to them, read from the manifest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apmbench.harness.reports.system_text import md_code
from apmbench.harness.run.manifest import Manifest

ManifestLike = Manifest | Mapping[str, Any]
"""A typed manifest, or the JSON one (a suite's render gets the JSON)."""


def mounted_into_system(manifest: ManifestLike) -> list[str]:
    """Host paths the user mounted into the system's container (--mount), as HOST:PATH:MODE."""
    return list(Manifest.of(manifest).mounts)


def persistence(manifest: ManifestLike) -> str:
    """The run's persistence mode as its manifest records it (`restart` for runs from before
    the field)."""
    return Manifest.of(manifest).persistence


def storage_verified(manifest: ManifestLike) -> bool:
    """Only `restart` makes the export the whole memory: under `reset` and `trust` a process
    can keep memory in RAM across sessions that no storage figure counts."""
    return persistence(manifest) == "restart"


def audit_lines(report: Mapping[str, Any]) -> list[str]:
    """Every audit flag, counted at the top of the report (the details stay in report.json)."""
    audit = report.get("audit")
    if not audit or audit.get("clean"):
        return []
    counts = {
        "state changed by a query": len(audit["state_mutation"]["changed"]),
        "export varies": len(audit["state_mutation"]["export_varies"]),
        "export failed": len(audit["state_mutation"]["export_failed"]),
        "repeated query answered differently": len(audit["caching"]["flagged"]),
        "first token not the answer's": len(audit["first_token"]["flagged"]),
        "restart and reset differ": len(audit["persistence"]["differing"]),
    }
    listed = ", ".join(f"{what} {n}" for what, n in counts.items() if n)
    return [
        f"**Audit: {audit['flags']} flags** ({listed}); each with its instance under `audit` "
        "in report.json. Numbers that a flag touches are not comparable.",
        "",
    ]


SPARE_NOTE = (
    "**Storage/hr is a lower bound**: spare starts were loaded beside the live one (to make "
    "restarts fast), and a live start can pass state to its spare through the page cache, "
    "which no export counts. `--no-spare` excludes it."
)
"""Measured: a relay that handed its memory to the next start this way scored text-log's
Overall with 80 B/hr stored. The harness cannot close that channel while the two overlap."""


def spare_lines(manifest: ManifestLike) -> list[str]:
    """The spare note of a `restart` run whose spares ran beside the live start
    (`Manifest.spares_beside_live`); nothing otherwise."""
    return [SPARE_NOTE, ""] if Manifest.of(manifest).spares_beside_live else []


def confinement_lines(report: Mapping[str, Any], manifest: ManifestLike) -> list[str]:
    """Lines for the head of report.md: audit flags, an unverified storage figure, a storage
    figure that spares make a lower bound, a known seed, an unconfined process, the user's
    mounts."""
    record = Manifest.of(manifest)
    lines = audit_lines(report)
    if not storage_verified(record):
        mode = persistence(record)
        lines += [
            f"**Storage/hr unverified** (persistence `{mode}`): the process lived across "
            "sessions, so memory it kept in RAM is in no export and no storage figure. Only "
            "`restart` measures the whole memory.",
            "",
        ]
    lines += spare_lines(record)
    iso = record.isolation
    if iso is not None and iso.rests_on_system_reset:
        mode = persistence(record)
        lines += [
            f"Persistence `{mode}`: the isolation of forks and replays rests on the system's "
            "own Reset (no fresh process per segment); the largest look-ahead a process had "
            f"was {iso.max_lookahead_s:.1f} s past its question.",
            "",
        ]
    synthetic = record.synthetic
    if synthetic is not None and not synthetic.seed_drawn:
        lines += [
            f"Synthetic dataset from a known seed (`--seed {synthetic.seed}`): the "
            "generator is public, so a system that knows the seed can rebuild every label. "
            "Publish numbers from a run whose seed was drawn at random (no `--seed`).",
            "",
        ]
    sandbox = report.get("sandbox")
    if sandbox is not None and sandbox.get("network") == "host":
        lines += [
            "Sandboxed with the host's network (`--sandbox-net`): the system could reach "
            "services on the network.",
            "",
        ]
    if sandbox is not None and sandbox.get("confined") and sandbox.get("start") == "template":
        lines += [
            "Template starts (`--start template`): each system start was forked from one "
            "pre-imported process per run in which no system code ran, and got its own user, "
            "mount, PID, network and IPC namespaces, /proc, /tmp, /dev/shm and socket "
            "directory, no capabilities and the fresh start's seccomp filter before the "
            "system loaded.",
            "",
        ]
    if sandbox is not None and sandbox.get("tool") == "gvisor":
        lines += [
            "**Boundary: gVisor** (`--start snapshot`): each start ran on an application "
            "kernel of its own (its own /proc, /sys, cgroups, page cache, inode numbers, "
            "sockets and pids; no network), restored from one snapshot taken at the "
            "system's loaded point, before any data; no spare ran beside a live start.",
            "",
        ]
    if sandbox is not None and sandbox.get("confined") and sandbox.get("host_paths"):
        bound = ", ".join(f"`{md_code(p, 200)}`" for p in sandbox["host_paths"])
        lines += [
            f"Host paths bound read-only into the sandbox, beside the system directories: "
            f"{bound} (no kernel file system or whole host tmpfs is ever bound).",
            "",
        ]
    if sandbox is not None and not sandbox.get("confined"):
        lines += [
            f"**{md_code(sandbox.get('note', 'Not confined'))}**: the system ran with "
            "`--no-sandbox`, so it could read the "
            "dataset and keep memory outside its exported state.",
            "",
        ]
    mounted = mounted_into_system(record)
    if not mounted:
        return lines
    paths = ", ".join(f"`{md_code(m, 200)}`" for m in mounted)
    return [
        *lines,
        f"Mounted into the system: {paths} (the user's --mount; nothing else of the host, "
        "the dataset or the run directory was visible to it).",
        "",
    ]
