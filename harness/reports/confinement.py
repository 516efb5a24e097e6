"""What the system could see beyond the protocol, stated in every report of every suite.

Numbers are comparable only between systems confined the same way; whatever
the user relaxed (a mounted host path, an unconfined process) is printed next
to them, read from the manifest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def mounted_into_system(manifest: Mapping[str, Any]) -> list[str]:
    """Host paths the user mounted into the system's container (--mount), as HOST:PATH:MODE."""
    container = (manifest.get("runtime") or {}).get("container") or {}
    return [str(m) for m in container.get("mounts") or []]


def confinement_lines(report: Mapping[str, Any], manifest: Mapping[str, Any]) -> list[str]:
    """Lines for the head of report.md: an unconfined process, the user's mounts."""
    lines = []
    iso = manifest.get("isolation") or {}
    if iso.get("rests_on_system_reset"):
        mode = (manifest.get("settings") or {}).get("persistence")
        lines += [
            f"Persistence `{mode}`: the isolation of forks and replays rests on the system's "
            "own Reset (no fresh process per segment); the largest look-ahead a process had "
            f"was {iso.get('max_lookahead_s', 0):.1f} s past its question.",
            "",
        ]
    synthetic = (manifest.get("dataset") or {}).get("synthetic") or {}
    if synthetic and not synthetic.get("seed_drawn"):
        lines += [
            f"Synthetic dataset from a known seed (`--seed {synthetic.get('seed')}`): the "
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
    if sandbox is not None and not sandbox.get("confined"):
        lines += [
            f"**{sandbox['note']}**: the system ran with `--no-sandbox`, so it could read the "
            "dataset and keep memory outside its exported state.",
            "",
        ]
    mounted = mounted_into_system(manifest)
    if not mounted:
        return lines
    paths = ", ".join(f"`{m}`" for m in mounted)
    return [
        *lines,
        f"Mounted into the system: {paths} (the user's --mount; nothing else of the host, "
        "the dataset or the run directory was visible to it).",
        "",
    ]
