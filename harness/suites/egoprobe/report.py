"""EgoProbe's report.md, summary tables, compare.md and the accuracy-by-bucket plot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import cast

from rich.table import Table

from apmbench.harness.json_types import JSON
from apmbench.harness.reports.format import num, size, table
from apmbench.harness.reports.system_text import md_cell
from apmbench.harness.run.manifest import Manifest
from apmbench.harness.suites.base import ComparedRun, ComparisonHead, RunLine
from apmbench.harness.suites.egoprobe.dataset import BUCKET_NAMES
from apmbench.harness.suites.egoprobe.metrics import (
    EVENT_GROUPS,
    FINE_EVENT_GROUPS,
    Accuracy,
    BySubset,
    EventGroup,
    Report,
)

BUCKET_PLOT = "accuracy_by_bucket.png"
TABLE_2 = ("Base", "Echo R1", "Echo two-turn", "Echo single-turn")
"""The paper's headline columns (EgoProbe, Table 2), in its order: Base single-turn, the Echo
dialogues' first round and both rounds right, Echo single-turn."""
COMPARE_HEADER = ("System", *TABLE_2, *BUCKET_NAMES)
POOLED = "Base and Echo single-turn pooled (the project's figure; the paper prints none)"

Run = ComparedRun[Report]


class ComparedRow(RunLine):
    """One run's line of compare.json."""

    single_turn: BySubset
    buckets: dict[str, float | None]
    r1_accuracy: float | None
    two_turn_accuracy: float | None
    share_event_linked: float | None


class Comparison(ComparisonHead):
    """compare.json of EgoProbe runs (the pipeline adds `headers`)."""

    benchmark: str
    runs: list[ComparedRow]
    plots: list[str]


def _p(value: float | None) -> str:
    return num(value, 1)


def _acc(cell: Accuracy) -> str:
    return f"{_p(cell['accuracy'])} (n={cell['n']})"


def table_2(report: Report) -> list[str]:
    st, d = report["single_turn"], report["dialogues"]
    dialogues = f" (n={d['n']})"
    return table(
        list(TABLE_2),
        [[_acc(st["base"]), _p(d["r1_accuracy"]) + dialogues,
          _p(d["two_turn_accuracy"]) + dialogues, _acc(st["echo"])]],
    )  # fmt: skip


def bucket_table(report: Report) -> list[str]:
    rows = [
        [b, _acc(report["buckets"][b]["base"]), _acc(report["buckets"][b]["echo"]),
         _acc(report["buckets"][b]["all"])]
        for b in BUCKET_NAMES
    ]  # fmt: skip
    return table(["Recall bucket", "Base", "Echo", "All"], rows)


def type_table(report: Report) -> list[str]:
    types = report.get("question_types") or {}
    if not types:
        return ["(the dataset names no question types)"]
    rows = [[t, _acc(c["base"]), _acc(c["echo"]), _acc(c["all"])] for t, c in types.items()]
    return table(["Question type", "Base", "Echo", "All"], rows)


def two_turn_table(report: Report) -> list[str]:
    d = report["dialogues"]
    o = d["outcomes"]
    return table(
        ["Dialogues", "R1 acc.", "Two-turn acc.", "R1 wrong", "R1 right, R2 wrong", "Both right"],
        [[str(d["n"]), _p(d["r1_accuracy"]), _p(d["two_turn_accuracy"]), _p(o["r1_wrong"]),
          _p(o["r1_right_r2_wrong"]), _p(o["both_right"])]],
    )  # fmt: skip


def _event_rows(groups: Mapping[str, EventGroup], names: Sequence[str]) -> list[list[str]]:
    rows = []
    for k in names:
        g = groups[k]
        label = f"{k} related event{'' if k == '1' else 's'}"
        rows.append([label, str(g["n"]), _p(g["accuracy"]), _p(g["event_error"]),
                     _p(g["other_error"])])  # fmt: skip
        r = g["random"]
        rows.append([f"{label}: random choice", str(g["n"]), _p(r["accuracy"]),
                     _p(r["event_error"]), _p(r["other_error"])])  # fmt: skip
    return rows


def event_table(report: Report) -> list[str]:
    linked = report["event_linked"]
    header = ["Echo group", "n", "Acc.", "Event err.", "Other err."]
    lines = table(header, _event_rows(linked["by_event_count"], EVENT_GROUPS))
    if (fine := linked.get("by_event_count_fine")) is not None:
        lines += ["", "Table 8's finer groups:", ""]
        lines += table(header, _event_rows(fine, FINE_EVENT_GROUPS))
    return lines


def render_markdown(report: Report, manifest: Mapping[str, JSON]) -> str:
    st = report["single_turn"]
    lat = report["latency"]["time_to_first_token_s"]
    linked = report["event_linked"]
    ff = report["format_failures"]
    lines = [
        f"# EgoProbe report: {md_cell(Manifest.of(manifest).shown_name)}",
        "",
        f"Chance: {report['chance']['single_turn']}% "
        f"single-turn, {report['chance']['r1']}% R1, {report['chance']['two_turn']}% two-turn.",
        "",
        "## Table 2's columns (%)",
        "",
        "As the paper prints them: Base single-turn accuracy; on Echo, the two-turn dialogues' "
        "first round (R1) and both rounds right (two-turn), and the single-turn questions.",
        "",
        *table_2(report),
        "",
        f"{POOLED}: {_acc(st['all'])}.",
        "",
        "## Accuracy by recall bucket (%)",
        "",
        "Recall interval = query time - end of the target evidence. Base intervals hold no "
        "related event, so its column isolates how far back the recall reaches.",
        "",
        *bucket_table(report),
        "",
        "## Accuracy by question type (%)",
        "",
        *type_table(report),
        "",
        "## Two-turn probing (%)",
        "",
        "Over all dialogues; R2 counts only when both rounds are right, and a dialogue whose "
        "R1 was not a parsed yes never reaches R2 and counts zero.",
        "",
        *two_turn_table(report),
        "",
        "## Event-linked errors on Echo (% of questions)",
        "",
        "Groups count the related events that support an alternative answer; the random-choice "
        "row is a uniform guess over the group's own option types (25 % accuracy, event "
        "errors = the share of event-grounded options).",
        "",
        *event_table(report),
        "",
        f"Of {linked['wrong_echo_answers']} wrong Echo answers, "
        f"{_p(linked['share_event_linked'])}% chose an event-grounded distractor (a detail of "
        f"another real event) and {_p(linked['share_other'])}% another option.",
        "",
        "## Cost",
        "",
        f"Time to first token: mean {num(lat['mean'], 3)} s, p90 {num(lat['p90'], 3)} s; "
        f"storage/hr {size(report['storage']['storage_per_hour_bytes'])}; "
        f"format failures {ff['total']} of {ff['queries']} queries ({ff['repaired']} repaired).",
        "",
    ]
    return "\n".join(lines)


def summary_tables(reports: Sequence[Report], names: Sequence[str]) -> list[Table]:
    main = Table(title="EgoProbe accuracy (%)")
    columns = (*COMPARE_HEADER, "Event err.", "TTFT mean (s)", "Storage/hr")
    for column in columns:
        main.add_column(column, justify="left" if column == "System" else "right")
    for name, r in zip(names, reports, strict=True):
        ttft = r["latency"]["time_to_first_token_s"]["mean"]
        events = [g for g in r["event_linked"]["by_event_count"].values() if g["n"]]
        n = sum(g["n"] for g in events)
        event_err = sum((g["event_error"] or 0.0) * g["n"] for g in events) / n if n else None
        main.add_row(
            name,
            _p(r["single_turn"]["base"]["accuracy"]),
            _p(r["dialogues"]["r1_accuracy"]),
            _p(r["dialogues"]["two_turn_accuracy"]),
            _p(r["single_turn"]["echo"]["accuracy"]),
            *(_p(r["buckets"][b]["all"]["accuracy"]) for b in BUCKET_NAMES),
            _p(event_err),
            "n/c" if ttft is None else f"{ttft:.3f}",
            size(r["storage"]["storage_per_hour_bytes"]),
        )
    return [main]


def comparison(runs: Sequence[Run]) -> Comparison:
    rows: list[ComparedRow] = []
    for r in runs:
        rep = r.report
        rows.append(
            {
                "label": r.label,
                "run_dir": str(r.root),
                "system": md_cell(r.record.shown_name),
                "plot_y": rep["single_turn"]["all"]["accuracy"],
                "single_turn": rep["single_turn"],
                "buckets": {b: rep["buckets"][b]["all"]["accuracy"] for b in BUCKET_NAMES},
                "r1_accuracy": rep["dialogues"]["r1_accuracy"],
                "two_turn_accuracy": rep["dialogues"]["two_turn_accuracy"],
                "share_event_linked": rep["event_linked"]["share_event_linked"],
            }
        )
    return {
        "benchmark": "egoprobe",
        "plot_y_label": "Single-turn accuracy, Base and Echo pooled (%, the project's)",
        "notes": [],
        "runs": rows,
        "plots": [BUCKET_PLOT],
    }


def plot_buckets(data_: Mapping[str, object], path: Path) -> None:
    """Accuracy by recall bucket, one line per system, with the 25 % chance line."""
    data = cast(Comparison, data_)  # what `comparison` returned
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.2), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    xs = list(range(len(BUCKET_NAMES)))
    for row in data["runs"]:
        ys = [row["buckets"][b] for b in BUCKET_NAMES]
        points = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=row["label"])
    ax.axhline(25.0, color="grey", linestyle="--", linewidth=1, label="chance (25%)")
    ax.set_xticks(xs, list(BUCKET_NAMES))
    ax.set_ylim(0, 105)  # a system at 100% stays visible above the frame
    ax.set_xlabel("Recall interval")
    ax.set_ylabel("Single-turn accuracy (%)")
    ax.set_title("EgoProbe: accuracy by recall bucket")
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(str(path))


def render_comparison(runs: Sequence[Run], data_: Mapping[str, object], plot: str | None) -> str:
    data = cast(Comparison, data_)  # what `comparison` returned, with the pipeline's headers
    rows = [
        [r["label"], _p(r["single_turn"]["base"]["accuracy"]), _p(r["r1_accuracy"]),
         _p(r["two_turn_accuracy"]), _p(r["single_turn"]["echo"]["accuracy"]),
         *(_p(r["buckets"][b]) for b in BUCKET_NAMES), _p(r["share_event_linked"])]
        for r in data["runs"]
    ]  # fmt: skip
    lines = [
        "# EgoProbe comparison",
        "",
        *table([*COMPARE_HEADER, "Wrong Echo answers on an event distractor"], rows),
        "",
        "Base, Echo R1, Echo two-turn and Echo single-turn are the paper's Table 2 columns; the "
        "buckets pool Base and Echo single-turn questions.",
        "",
        "Chance: 25% single-turn, 50% R1, 12.5% two-turn.",
        "",
        f"![accuracy by recall bucket]({BUCKET_PLOT})",
    ]
    if plot:
        lines += ["", f"![accuracy, latency and storage]({plot})"]
    lines += [f"- {n}" for n in data["notes"]]
    return "\n".join(lines) + "\n"
