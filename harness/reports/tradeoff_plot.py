"""The utility-latency-storage plot of the paper's Figure 2, as a PNG.

x: mean time to first token (the leaderboard: mean time to answer, which a
first chunk sent before the model ran cannot move; log scale when the runs span
more than a decade), y: the utility score `compare` chose (Overall, or the stated
fallback), bubble area: Storage/hr, proportional, with a floor so that
KiB-scale memories stay visible next to GiB-scale ones; every bubble is
labelled with its system and Storage/hr. matplotlib draws on its Agg canvas
directly (no pyplot, no display, no global backend switch). A point's `url`
makes its bubble and label a link in SVG output (the leaderboard links each
to its row); a PNG ignores it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from apmbench.harness.reports.format import size

MAX_AREA = 2400.0  # points^2 for the largest Storage/hr
MIN_AREA = 40.0


@dataclass(frozen=True)
class Point:
    label: str
    latency_s: float
    """The x value: mean time to first token (`compare`, the viewer: the paper's Figure 2)
    or mean time to answer (the leaderboard)."""
    utility: float
    storage_per_hour_bytes: float | None
    url: str | None = None


def bubble_areas(points: Sequence[Point]) -> list[float]:
    largest = max((p.storage_per_hour_bytes or 0.0 for p in points), default=0.0)
    if largest <= 0:
        return [MIN_AREA for _ in points]
    return [max(MIN_AREA, MAX_AREA * (p.storage_per_hour_bytes or 0.0) / largest) for p in points]


TTFT_AXIS = "Time to first token, mean (s)"
ANSWER_AXIS = "Time to answer, mean (s)"


def plot_tradeoff(
    points: Sequence[Point], y_label: str, path: Path, x_label: str = TTFT_AXIS
) -> None:
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(8, 5.5), layout="constrained")
    ax = fig.add_subplot()
    if points:
        xs = [p.latency_s for p in points]
        bubbles = ax.scatter(
            xs,
            [p.utility for p in points],
            s=bubble_areas(points),
            c=[f"C{i % 10}" for i in range(len(points))],
            alpha=0.55,
            edgecolors="black",
            linewidths=0.8,
        )
        if any(p.url for p in points):
            bubbles.set_urls([p.url for p in points])
        for i, p in enumerate(points):
            storage = "n/c" if p.storage_per_hour_bytes is None else size(p.storage_per_hour_bytes)
            ax.annotate(
                f"{p.label}\n{storage}/hr",
                (p.latency_s, p.utility),
                textcoords="offset points",
                # Staggered, so labels of systems that land on one spot stay legible.
                xytext=(8, 8 - 24 * (i % 3)),
                fontsize=8,
                # A label is a system's name, not TeX: a `$` in it must not start mathtext,
                # whose parser raises on what is not valid TeX.
                parse_math=False,
                url=p.url,
            )
        if min(xs) > 0 and max(xs) / min(xs) > 10:
            ax.set_xscale("log")
        else:
            ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
        # Room for the largest bubble and its label inside the axes.
        ax.margins(x=0.3, y=0.25)
    else:
        ax.text(
            0.5,
            0.5,
            f"no run has both a utility score and a {x_label.split(',')[0].lower()}",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_title(
        f"Utility-latency-storage trade-off (y: {y_label}; bubble area: Storage/hr)", fontsize=10
    )
    ax.grid(True, alpha=0.3)
    fig.savefig(path, dpi=120)
