"""The audits of a run, aggregated from its trajectory records for report.json and the manifest.

Every flag is listed with its instance, so a reader can look at the very
query; `clean` is true only when no audit flagged anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

# A first token this much earlier than the answer it leads to, and at most this share of the
# time to answer, was not the answer's beginning but something sent to look fast.
BOUGHT_GAP_S = 1.0
BOUGHT_SHARE = 0.25


class FirstTokenFlag(TypedDict):
    """A query whose first token was not its answer's beginning."""

    instance_id: str
    problem: str


def bought_first_tokens(instances: Sequence[Mapping[str, Any]]) -> list[FirstTokenFlag]:
    """Queries whose time to first token is far below their time to answer."""
    flagged: list[FirstTokenFlag] = []
    for r in instances:
        ttft, tta = r.get("ttft_s"), r.get("time_to_answer_s")
        if ttft is None or tta is None:
            continue
        if tta - ttft >= BOUGHT_GAP_S and ttft <= BOUGHT_SHARE * tta:
            flagged.append(
                {
                    "instance_id": r["instance_id"],
                    "problem": f"first token after {ttft:.3f} s, but the answer was determined "
                    f"only after {tta:.3f} s: time to first token is not the answer's",
                }
            )
    return flagged


def audit_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """None when the run was not audited."""
    audited = [(r["trajectory_id"], r["audit"]) for r in records if "audit" in r]
    if not audited:
        return None
    mutation = [dict(e, trajectory_id=t) for t, a in audited for e in a["state_mutation"]]
    repeats = [dict(e, trajectory_id=t) for t, a in audited for e in a["caching"]["repeats"]]
    skipped = sorted({a["caching"]["skipped"] for _, a in audited if a["caching"].get("skipped")})
    tokens = [dict(e, trajectory_id=t) for t, a in audited for e in a["first_token"]["flagged"]]
    tokens += [
        dict(e, trajectory_id=r["trajectory_id"])
        for r in records
        if "audit" in r
        for e in bought_first_tokens(r.get("instances", ()))
    ]
    persistence = [dict(a["persistence"], trajectory_id=t) for t, a in audited]
    compared = [p for p in persistence if p["status"] == "compared"]
    summary: dict[str, Any] = {
        "state_mutation": {
            "sampled": len(mutation),
            "changed": [m for m in mutation if m["verdict"] == "changed"],
            "export_varies": [m for m in mutation if m["verdict"] == "export_varies"],
            "export_failed": [m for m in mutation if m["verdict"] == "export_failed"],
        },
        "caching": {
            "repeated": len(repeats),
            "flagged": [r for r in repeats if r["flags"]],
            "skipped": skipped,
        },
        "first_token": {
            "queries": sum(a["first_token"]["queries"] for _, a in audited),
            "flagged": tokens,
        },
        "persistence": {
            "compared": [
                {k: p[k] for k in ("trajectory_id", "compared_with", "instances", "same_text")}
                for p in compared
            ],
            "differing": [
                dict(d, trajectory_id=p["trajectory_id"]) for p in compared for d in p["differing"]
            ],
            "not_run": sorted({p["reason"] for p in persistence if p["status"] == "not_run"}),
        },
    }
    summary["flags"] = sum(len(v) for v in _flag_lists(summary))
    summary["clean"] = summary["flags"] == 0
    return summary


def _flag_lists(summary: Mapping[str, Any]) -> list[list[Any]]:
    return [
        summary["state_mutation"]["changed"],
        summary["state_mutation"]["export_varies"],
        summary["state_mutation"]["export_failed"],
        summary["caching"]["flagged"],
        summary["first_token"]["flagged"],
        summary["persistence"]["differing"],
    ]


def audit_headline(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The counts of `audit_summary` for the manifest (report.json has the details)."""
    mutation, caching = summary["state_mutation"], summary["caching"]
    tokens, persistence = summary["first_token"], summary["persistence"]
    return {
        "clean": summary["clean"],
        "flags": summary["flags"],
        "state_mutation": {
            "sampled": mutation["sampled"],
            "changed": len(mutation["changed"]),
            "export_varies": len(mutation["export_varies"]),
            "export_failed": len(mutation["export_failed"]),
        },
        "caching": {
            "repeated": caching["repeated"],
            "flagged": len(caching["flagged"]),
            "skipped": caching["skipped"],
        },
        "first_token": {"queries": tokens["queries"], "flagged": len(tokens["flagged"])},
        "persistence": {
            "trajectories_compared": len(persistence["compared"]),
            "differing": len(persistence["differing"]),
            "not_run": persistence["not_run"],
        },
    }
