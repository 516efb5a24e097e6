"""The viewer's charts as inline SVG, drawn by matplotlib's SVG backend (no pyplot, no display)."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from apmbench.harness.reports.format import size
from apmbench.harness.reports.tradeoff_plot import TTFT_AXIS, Point, plot_tradeoff

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _svg(fig: Figure) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    text = buffer.getvalue()
    # Inline in HTML: drop the XML prolog and DOCTYPE, keep the <svg> element.
    return text[text.index("<svg") :]


def tradeoff_svg(points: Sequence[Point], y_label: str, x_label: str = TTFT_AXIS) -> str:
    """The Figure 2 plot `compare` writes as PNG, here as SVG."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tradeoff.svg"
        plot_tradeoff(points, y_label, path, x_label)
        text = path.read_text()
    # A point's link (Point.url) goes to a row of the same page: open it there, not in a
    # new tab as matplotlib's SVG backend asks.
    return text[text.index("<svg") :].replace(' target="_blank"', "")


def bars_svg(title: str, series: Mapping[str, Mapping[str, float | None]]) -> str:
    """Grouped bars: one group per key of the inner mappings, one bar per run; n/c left empty."""
    from matplotlib.figure import Figure

    groups: list[str] = []
    for values in series.values():
        groups += [g for g in values if g not in groups]
    runs = list(series)
    fig = Figure(figsize=(max(5.0, 0.55 * len(groups) * max(1, len(runs)) ** 0.5 + 2), 3.4))
    fig.set_layout_engine("constrained")
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(runs))
    for i, run in enumerate(runs):
        xs = [k + (i - (len(runs) - 1) / 2) * width for k in range(len(groups))]
        ys = [series[run].get(g) for g in groups]
        ax.bar(
            [x for x, y in zip(xs, ys, strict=True) if y is not None],
            [y for y in ys if y is not None],
            width=width,
            label=run,
            color=f"C{i % 10}",
        )
        for x, y in zip(xs, ys, strict=True):
            if y is None:
                ax.text(x, 1, "n/c", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_xticks(range(len(groups)), groups, fontsize=8)
    ax.set_ylim(0, 105)
    ax.set_ylabel("score")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    if len(runs) > 1:
        ax.legend(fontsize=7, ncols=min(4, len(runs)), loc="upper left", bbox_to_anchor=(0, -0.12))
    return _svg(fig)


def latency_svg(ttfts: Mapping[str, Sequence[float]]) -> str:
    """Distribution of the time to first token per run (box plot over every query with output)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 0.6 * max(2, len(ttfts)) + 1.2))
    fig.set_layout_engine("constrained")
    ax = fig.add_subplot()
    labels = [k for k, v in ttfts.items() if v]
    if labels:
        ax.boxplot([list(ttfts[k]) for k in labels], orientation="horizontal", tick_labels=labels)
        values = [v for k in labels for v in ttfts[k]]
        if min(values) > 0 and max(values) / min(values) > 100:
            ax.set_xscale("log")
    else:
        ax.text(0.5, 0.5, "no query produced output", ha="center", transform=ax.transAxes)
    ax.set_xlabel("time to first token (s)")
    ax.set_title("Latency distribution (every query with output)", fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    return _svg(fig)


def storage_svg(per_trajectory: Mapping[str, Mapping[str, float]]) -> str:
    """Storage/hr of every trajectory (Eq. 2 before the mean), per run."""
    return _svg(storage_figure(per_trajectory))


def storage_figure(per_trajectory: Mapping[str, Mapping[str, float]]) -> Figure:
    """`storage_svg`'s chart, as a matplotlib Figure."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, NullFormatter

    series = {run: dict(values) for run, values in per_trajectory.items()}
    fig = Figure(figsize=(6.5, 3.2))
    fig.set_layout_engine("constrained")
    ax = fig.add_subplot()
    runs = list(series)
    trajectories = sorted({t for v in series.values() for t in v})
    width = 0.8 / max(1, len(runs))
    for i, run in enumerate(runs):
        xs = [k + (i - (len(runs) - 1) / 2) * width for k in range(len(trajectories))]
        ax.bar(
            xs,
            [series[run].get(t, 0.0) for t in trajectories],
            width=width,
            label=run,
            color=f"C{i % 10}",
        )
    ax.set_xticks(range(len(trajectories)), trajectories, fontsize=8)
    # A log axis: a text memory's KiB stay visible beside a video memory's MiB. A zero has
    # no place on it and is written where its bar would start.
    positive = [v for values in series.values() for v in values.values() if v > 0]
    if positive:
        ax.set_yscale("log")
        floor = min(positive) / 4
        ax.set_ylim(bottom=floor, top=max(positive) * 4)
        for i, run in enumerate(runs):
            for k, t in enumerate(trajectories):
                if series[run].get(t, 0.0) <= 0:
                    x = k + (i - (len(runs) - 1) / 2) * width
                    ax.text(x, floor, "0 B", ha="center", va="bottom", fontsize=6, rotation=90)
    else:
        ax.text(0.5, 0.5, "every state was empty (0 B/hr)", ha="center", transform=ax.transAxes)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: size(v) + "/hr"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    scale = ", log scale" if positive else ""
    ax.set_title(f"Storage/hr per trajectory (Eq. 2{scale})", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    if len(runs) > 1:
        ax.legend(fontsize=7)
    return fig
