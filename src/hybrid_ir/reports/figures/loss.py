"""The pretraining loss figure: MLM (and NSP) losses by step, training and held-out.

A module of its own, beside the papers' figures (:mod:`hybrid_ir.reports.figures.draw`), so that the
pretraining step's code version (:mod:`hybrid_ir.planning.code_digest`) covers the style it shares
with them (:mod:`hybrid_ir.reports.figures.style`) and not their evaluation and fusion code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hybrid_ir.reports.figures.style import (
    DPI,
    FIGSIZE,
    STYLE,
    add_legend,
    save_figure,
    series_style,
)


def loss_curves(
    history: Sequence[Mapping[str, Any]], out_stem: str | Path, title: str = "Pretraining loss"
) -> tuple[Path, Path]:
    """MLM and NSP losses against the step: training (every step) and held-out (markers)."""
    return save_figure(loss_figure(history, title), out_stem)


LOSS_SPLITS = {"train": "training (each step)", "heldout": "held-out"}
LOSS_NAMES = {"mlm": "MLM", "nsp": "NSP"}


def loss_figure(history: Sequence[Mapping[str, Any]], title: str = "Pretraining loss") -> Figure:
    """The figure :func:`loss_curves` writes: one panel per loss that was trained (NSP only when
    some row has it), each on its own y scale, as the two losses differ in size (NSP, a binary
    choice, sits near ln 2 while MLM starts near ln of the vocabulary size)."""
    losses = [loss for loss in LOSS_NAMES if any(row[loss] for row in history)] or ["mlm"]
    with matplotlib.rc_context(STYLE):
        size = (FIGSIZE[0] * len(losses), FIGSIZE[1])
        figure = Figure(figsize=size, dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        panels = figure.subplots(1, len(losses), squeeze=False)[0]
        for axes, loss in zip(panels, losses, strict=True):
            for index, (split, name) in enumerate(LOSS_SPLITS.items()):
                rows = [row for row in history if row["split"] == split]
                # every training step carries a marker of its own, which would hide the line
                style = {**series_style(index), "marker": "o" if split == "heldout" else "none"}
                axes.plot([row["step"] for row in rows], [row[loss] for row in rows],
                          label=name, **style)  # fmt: skip
            axes.set_xlabel("training step")
            axes.set_ylabel(f"{LOSS_NAMES[loss]} loss (cross-entropy, nats)")
            add_legend(axes)
        figure.suptitle(title)
        return figure
