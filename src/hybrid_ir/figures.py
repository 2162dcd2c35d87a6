"""The papers' figures as PNG and SVG, byte-identical from one run to the next.

- :func:`pr_curves` -- paper 003 Figs. 2 (left), 4 and 5: 11-point interpolated precision-recall
  curves (the ``IPrec@0.0`` ... ``IPrec@1.0`` columns of the ``cf`` measure set);
- :func:`metric_vs_parameter` -- paper 003's lambda ablation (NDCG@10 against lambda), with the
  single methods as horizontal reference lines;
- :func:`recall_at_k_curve` -- paper 002 Fig. 1: Recall@k against k;
- :func:`loss_curves` -- MLM further pretraining: training and held-out losses by step.

Figures are drawn on a bare :class:`~matplotlib.figure.Figure` rendered by Agg, never through
pyplot, so no global backend or figure registry is touched and figures can be made from worker
threads. Output is reproducible: a fixed size and DPI (so a PNG's pixel size is known), a fixed
SVG hash salt (the ids of clip paths), no date or software stamp in either file, and SVG text
kept as ``<text>`` elements (``svg.fonttype: none``) rather than glyph outlines, which also keeps
labels searchable. Each file is written atomically.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
from cycler import cycler
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hybrid_ir.errors import ConfigError
from hybrid_ir.formats import atomic_output
from hybrid_ir.runs import Run

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

Qrels = dict[str, dict[str, int]]

FIGSIZE = (6.4, 4.8)
DPI = 100
"""A figure is ``FIGSIZE * DPI`` = 640 x 480 pixels as PNG."""
RECALL_POINTS = tuple(level / 10 for level in range(11))

_STYLE: dict[RcKeyType, Any] = {
    "svg.hashsalt": "hybrid_ir",
    "svg.fonttype": "none",
    "axes.grid": True,
    "grid.alpha": 0.4,
    "axes.prop_cycle": cycler(
        color=["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#7f7f7f"],
        marker=["o", "s", "^", "D", "v", "P", "X"],
    ),
}
_PNG_METADATA = {"Software": None}
_SVG_METADATA = {"Date": None, "Creator": None}


def pr_curves(
    curves: Mapping[str, Sequence[float]],
    out_stem: str | Path,
    title: str = "Interpolated precision-recall",
) -> tuple[Path, Path]:
    """One 11-point interpolated precision-recall curve per label (recall 0.0, 0.1, ..., 1.0)."""
    for label, precisions in curves.items():
        if len(precisions) != len(RECALL_POINTS):
            raise ValueError(
                f"curve {label!r} has {len(precisions)} precision values, "
                f"expected {len(RECALL_POINTS)} (recall 0.0 to 1.0)"
            )
    with matplotlib.rc_context(_STYLE):
        figure, axes = _figure(title, "Recall", "Interpolated precision")
        for label, precisions in curves.items():
            axes.plot(RECALL_POINTS, precisions, label=label)
        axes.set_xlim(-0.02, 1.02)
        axes.set_ylim(-0.02, 1.02)
        axes.set_xticks(RECALL_POINTS)
        return _save(figure, axes, out_stem)


def metric_vs_parameter(
    xs: Sequence[float],
    series: Mapping[str, Sequence[float]],
    out_stem: str | Path,
    xlabel: str,
    ylabel: str,
    title: str,
    mark_best: bool = True,
    references: Mapping[str, float] | None = None,
) -> tuple[Path, Path]:
    """Each series against a swept parameter, e.g. NDCG@10 against lambda.

    ``mark_best`` rings each series' maximum (the first x reaching it) and labels it with its
    value, the point a reader of an ablation looks for. ``references`` draws each single
    method's score (e.g. VSR and dense alone) as a dashed horizontal line.
    """
    for label, values in series.items():
        if len(values) != len(xs):
            raise ValueError(f"series {label!r} has {len(values)} values for {len(xs)} x values")
    with matplotlib.rc_context(_STYLE):
        figure, axes = _figure(title, xlabel, ylabel)
        for label, values in series.items():
            (line,) = axes.plot(xs, values, label=label)
            if mark_best and values:
                best = max(range(len(values)), key=lambda i: (values[i], -i))
                axes.plot(
                    xs[best],
                    values[best],
                    marker="o",
                    markersize=14,
                    fillstyle="none",
                    color=line.get_color(),
                    linestyle="none",
                )
                axes.annotate(
                    f"{values[best]:.4f}",
                    (xs[best], values[best]),
                    textcoords="offset points",
                    xytext=(0, 10),
                    ha="center",
                    color=line.get_color(),
                )
        for index, (label, value) in enumerate((references or {}).items()):
            axes.axhline(value, linestyle="--", color=f"C{len(series) + index}", label=label)
        if mark_best:
            axes.margins(y=0.12)  # room above the highest point for its value label
        return _save(figure, axes, out_stem)


def recall_at_k_curve(
    curves: Mapping[str, Mapping[int, float]],
    out_stem: str | Path,
    title: str = "Recall@k",
    log_x: bool = False,
) -> tuple[Path, Path]:
    """Recall@k against k per label (paper 002 Fig. 1), k sorted ascending.

    The x axis is linear by default; ``log_x`` suits cut-offs spanning decades (1 to 1000),
    where a linear axis crowds the small k that matter most.
    """
    with matplotlib.rc_context(_STYLE):
        figure, axes = _figure(title, "k (documents retrieved)", "Recall@k")
        for label, points in curves.items():
            ks = sorted(points)
            axes.plot(ks, [points[k] for k in ks], label=label)
        if log_x:
            axes.set_xscale("log")
        axes.set_ylim(-0.02, 1.02)
        return _save(figure, axes, out_stem)


def loss_curves(
    history: Sequence[Mapping[str, Any]], out_stem: str | Path, title: str = "Pretraining loss"
) -> tuple[Path, Path]:
    """MLM and NSP losses against the step: training (every step) and held-out (markers)."""
    with matplotlib.rc_context(_STYLE):
        figure, axes = _figure(title, "step", "cross-entropy")
        for split, style in (("train", "-"), ("heldout", "o-")):
            rows = [row for row in history if row["split"] == split]
            for loss in ("mlm", "nsp"):
                if rows and any(row[loss] for row in rows):
                    steps = [row["step"] for row in rows]
                    axes.plot(steps, [row[loss] for row in rows], style, label=f"{split} {loss}")
        return _save(figure, axes, out_stem)


def _figure(title: str, xlabel: str, ylabel: str):
    figure = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    return figure, axes


def _save(figure: Figure, axes, out_stem: str | Path) -> tuple[Path, Path]:
    """Write ``<out_stem>.png`` and ``<out_stem>.svg`` atomically; return both paths."""
    if axes.get_legend_handles_labels()[1]:
        axes.legend(loc="best")
    stem = Path(out_stem)
    png, svg = stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".svg")
    with atomic_output(png, "wb") as out:
        figure.savefig(out, format="png", dpi=DPI, metadata=_PNG_METADATA)
    with atomic_output(svg, "wb") as out:
        figure.savefig(out, format="svg", metadata=_SVG_METADATA)
    return png, svg


def draw(
    kind: str,
    spec: Mapping[str, Any],
    runs: Mapping[str, Run],
    qrels: Qrels | None,
    sweep_report: Mapping[str, Any] | None,
    out_stem: str | Path,
) -> tuple[Path, Path]:
    """A configured figure: ``pr_curves`` and ``recall_curve`` of labelled runs, or ``sweep`` (a
    metric against the swept parameter, with the labelled runs as reference lines)."""
    from hybrid_ir.evaluate import RECALL_LEVELS, evaluate
    from hybrid_ir.sparse import recall_curve

    title = spec.get("title", Path(out_stem).name)
    if kind == "pr_curves":
        columns = [f"IPrec@{level}" for level in RECALL_LEVELS]
        curves: dict[str, list[float]] = {}
        for label, run in runs.items():
            aggregate = evaluate(_needed(qrels, kind), run, columns).aggregate
            curves[label] = [aggregate[column] for column in columns]
        return pr_curves(curves, out_stem, title)
    if kind == "recall_curve":
        ks = range(1, spec.get("max_k", 100) + 1)
        recalls = {
            label: recall_curve(run, _needed(qrels, kind), ks) for label, run in runs.items()
        }
        return recall_at_k_curve(recalls, out_stem, title)
    if kind == "sweep":
        metric = spec["metric"]
        references = {
            label: evaluate(_needed(qrels, kind), run, [metric]).aggregate[metric]
            for label, run in runs.items()
        }
        if sweep_report is None:
            raise ConfigError("a sweep figure needs the sweep report")
        series = {spec.get("label", "fused"): [score[metric] for score in sweep_report["scores"]]}
        return metric_vs_parameter(
            sweep_report["values"], series, out_stem, spec.get("xlabel", sweep_report["parameter"]),
            metric, title, references=references,
        )  # fmt: skip
    raise ConfigError(f"unknown figure kind {kind!r}; choose pr_curves, recall_curve or sweep")


def _needed(qrels: Qrels | None, kind: str) -> Qrels:
    """``qrels``, which a ``kind`` figure of runs cannot do without."""
    if qrels is None:
        raise ConfigError(f"a {kind} figure of runs needs qrels")
    return qrels
