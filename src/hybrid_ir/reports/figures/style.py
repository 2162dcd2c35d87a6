"""The house style of every figure, and reproducible saving.

Figures are drawn on a bare :class:`~matplotlib.figure.Figure` rendered by Agg, never through
pyplot, so no global backend or figure registry is touched and figures can be made from worker
threads. Output is reproducible: a fixed size and DPI (so a PNG's pixel size is known), a fixed
SVG hash salt (the ids of clip paths), no date or software stamp in either file, and SVG text
kept as ``<text>`` elements (``svg.fonttype: none``) rather than glyph outlines, which also keeps
labels searchable. Each file is written atomically.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
from cycler import cycler
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hybrid_ir.data.formats import atomic_output

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.typing import RcKeyType

FIGSIZE = (6.4, 4.8)
DPI = 100
"""A figure is ``FIGSIZE * DPI`` = 640 x 480 pixels as PNG."""

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
"""Okabe-Ito: distinguishable with every common colour-vision deficiency. Yellow comes last,
as it is the faintest on white."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
"""One per colour, so a series still reads in grey print."""
LINESTYLES = ("-", "--", "-.", ":")
"""Series 9 to 16 repeat the colours and markers dashed, 17 to 24 dash-dotted, and so on."""

STYLE: dict[RcKeyType, Any] = {
    "svg.hashsalt": "hybrid_ir",
    "svg.fonttype": "none",
    "axes.grid": True,
    "grid.alpha": 0.4,
    "axes.prop_cycle": cycler(color=PALETTE, marker=MARKERS),
}
PNG_METADATA = {"Software": None}
SVG_METADATA = {"Date": None, "Creator": None}
LEGEND_INSIDE_MAX = 6
"""A legend of more entries is drawn beside the axes (the figure widens to hold it)."""


def series_style(index: int) -> dict[str, Any]:
    """Colour, marker and line style of a figure's ``index``-th series (0-based): distinct for
    the first ``len(PALETTE) * len(LINESTYLES)`` series."""
    return {
        "color": PALETTE[index % len(PALETTE)],
        "marker": MARKERS[index % len(MARKERS)],
        "linestyle": LINESTYLES[index // len(PALETTE) % len(LINESTYLES)],
    }


def new_figure(title: str, xlabel: str, ylabel: str) -> tuple[Figure, Any]:
    """A figure of the standard size with one titled, labelled axes."""
    figure = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    return figure, axes


def add_legend(axes: Axes) -> None:
    """A legend of the labelled artists of ``axes``, beside the axes when long."""
    labels = axes.get_legend_handles_labels()[1]
    if len(labels) > LEGEND_INSIDE_MAX:  # a long legend would hide curves: beside the axes
        axes.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize="small")
    elif labels:
        axes.legend(loc="best")


def save_figure(figure: Figure, out_stem: str | Path) -> tuple[Path, Path]:
    """Write ``<out_stem>.png`` and ``<out_stem>.svg`` atomically; return both paths."""
    stem = Path(out_stem)
    png, svg = stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".svg")
    with matplotlib.rc_context(STYLE):  # the SVG settings are read when saving
        with atomic_output(png, "wb") as out:
            figure.savefig(out, format="png", dpi=DPI, metadata=PNG_METADATA)
        with atomic_output(svg, "wb") as out:
            figure.savefig(out, format="svg", metadata=SVG_METADATA)
    return png, svg
