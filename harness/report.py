"""report.json and report.md, laid out like the paper's Tables 3 and 4."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apmbench.harness import tasks


def _num(value: float | int | None, digits: int = 2) -> str:
    return "n/c" if value is None else f"{value:.{digits}f}"


def _bytes(value: float | int | None) -> str:
    if value is None:
        return "n/c"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size:
            return f"{value / size:.2f} {unit}"
    return f"{value:.0f} B"


def render_markdown(report: Mapping[str, Any], manifest: Mapping[str, Any]) -> str:
    system = manifest["system"]["name"]
    fam = report["families"]
    lat = report["latency"]
    sto = report["storage"]
    lines = [
        f"# APM-Bench report: {system}",
        "",
        f"Dataset `{manifest['dataset']['name']}` (hash `{manifest['dataset_hash'][:12]}`), "
        f"persistence `{manifest['settings']['persistence']}`, "
        f"harness {manifest['harness_version']}, protocol {manifest['protocol_version']}. "
        "`n/c` = not computed (see report.json for the reason).",
        "",
        "## Utility, latency and storage (paper Table 3)",
        "",
        "| System | CSU | RTP | AR | Overall | TTFT mean (s) | TTFT p90 (s) | RTF | Storage/hr |",
        "|---|---|---|---|---|---|---|---|---|",
        "| {} | {} | {} | {} | {} | {} | {} | {} | {}/hr |".format(
            system,
            _num(fam["cross_session_understanding"]["score"]),
            _num(fam["real_time_perception"]["score"]),
            _num(fam["adaptive_response"]["score"]),
            _num(report["overall"]["score"]),
            _num(lat["time_to_first_token_s"]["mean"], 4),
            _num(lat["time_to_first_token_s"]["p90"], 4),
            _num(lat["real_time_factor"]["mean"], 4),
            _bytes(sto["storage_per_hour_bytes"]),
        ),
        "",
        "## Task scores (paper Table 4)",
        "",
        "| " + " | ".join(tasks.MCQA_TASKS + tasks.ADAPTIVE_TASKS) + " |",
        "|" + "---|" * len(tasks.MCQA_TASKS + tasks.ADAPTIVE_TASKS),
        "| "
        + " | ".join(
            _num(report["tasks"][t]["score"]) for t in tasks.MCQA_TASKS + tasks.ADAPTIVE_TASKS
        )
        + " |",
        "",
        "## Adaptive decision accuracy (appendix B.1)",
        "",
        "| Task | P | N | BA | positive probes | negative probes |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in report["decision_accuracy"].items():
        lines.append(
            f"| {name} | {_num(row['P'])} | {_num(row['N'])} | {_num(row['BA'])} | "
            f"{row['positive_probes']} | {row['negative_probes']} |"
        )
    ea = report["evidence_availability"]
    ff = report["format_failures"]
    lines += [
        "",
        "## Evidence availability (appendix B.7)",
        "",
        "| EA | EU | Balanced | available | unavailable |",
        "|---|---|---|---|---|",
        f"| {_num(ea['evidence_available_accuracy'])} "
        f"| {_num(ea['evidence_unavailable_detection'])} "
        f"| {_num(ea['balanced_accuracy'])} | {ea['n_available']} | {ea['n_unavailable']} |",
        "",
        "## Latency and storage",
        "",
        "| Measure | n | mean | p50 | p90 | p99 |",
        "|---|---|---|---|---|---|",
    ]
    for label, key in (
        ("time to first token (s)", "time_to_first_token_s"),
        ("full response (s)", "full_response_s"),
        ("real-time factor", "real_time_factor"),
    ):
        row = lat[key]
        lines.append(
            f"| {label} | {row['n']} | {_num(row['mean'], 4)} | {_num(row['p50'], 4)} | "
            f"{_num(row['p90'], 4)} | {_num(row['p99'], 4)} |"
        )
    lines += [
        "",
        f"Storage/hr (Eq. 2): {_bytes(sto['storage_per_hour_bytes'])} over "
        f"{sto['trajectories_counted']} trajectories; peak prior-session state mean "
        f"{_bytes(sto['peak_bytes_mean'])}, max {_bytes(sto['peak_bytes_max'])} (Table 10).",
        "",
        f"Unrecoverable format failures (appendix B.5): {ff['total']} of {ff['probes']} probes"
        + (
            " (" + ", ".join(f"{t}: {n}" for t, n in ff["by_task"].items()) + ")"
            if ff["by_task"]
            else ""
        )
        + ".",
        "",
    ]
    return "\n".join(lines)
