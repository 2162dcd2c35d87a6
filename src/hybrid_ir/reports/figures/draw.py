"""The papers' figures as PNG and SVG, byte-identical from one run to the next.

- :func:`pr_curves` -- paper 003 Figs. 2 (left), 4 and 5: 11-point interpolated precision-recall
  curves (the ``IPrec@0.0`` ... ``IPrec@1.0`` columns of the ``cf`` measure set);
- :func:`metric_vs_parameter` -- paper 003's lambda ablation (NDCG@10 against lambda), with the
  single methods as horizontal reference lines;
- :func:`recall_at_k_curve` -- paper 002 Fig. 1: Recall@k against k;
- :func:`by_label_bars` -- paper 000 Fig. 2: a metric's mean over the topics of each label value
  (ARQMath topic category, dependency, difficulty), one panel per label, one bar per run;
- :func:`rank_scatter` -- paper 000 Fig. 3: where the top documents of a fused run sit in the
  runs it fused, for one topic, with the numbers in a TSV beside the figure;
- :func:`head_to_head_bars` -- paper 001 Fig. 2: two runs compared topic by topic within each
  value of a topic label (topics each run wins, and each run's mean), with a TSV of the numbers;
- :func:`recall_at_k_curve` with ``measure="NDCG"`` -- paper 003 Fig. 2 (right): NDCG@k for
  k = 1 ... 10;
- paper 003 Fig. 4: the fused run at each value of a sweep (``figure_data.sweep_runs``), so PR
  and NDCG@k curves can be drawn per lambda;
- :func:`table_figure` -- paper 004 Fig. 3: a table drawn as a figure (collection statistics,
  :mod:`hybrid_ir.data.collection_stats`).

What they show beyond a run's scores (topic labels, ranks in the fused inputs, head-to-head
counts, metric@k, a sweep's runs) is computed in :mod:`hybrid_ir.reports.figures.data`, without a
plotting library. Style, sizes and reproducible saving are :mod:`hybrid_ir.reports.figures.style`'s
(which the pretraining loss figure, :mod:`hybrid_ir.reports.figures.loss`, shares without depending
on these figures' code).
"""

from __future__ import annotations

import logging
import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from hybrid_ir.data.collection_stats import (
    HEADER,
    collection_stats_of_files,
    table_rows,
    write_stats_markdown,
    write_stats_tsv,
)
from hybrid_ir.data.qrels import read_qrels
from hybrid_ir.data.runs import Run
from hybrid_ir.errors import ConfigError
from hybrid_ir.evaluation.measures import RECALL_LEVELS, evaluate, recall_curve
from hybrid_ir.reports.figures.data import (
    HeadToHead,
    LabelPanel,
    Qrels,
    RankRow,
    fused_rank_rows,
    head_to_head,
    label_panels,
    metric_at_k,
    sweep_runs,
    write_curves,
    write_head_to_head,
    write_rank_rows,
)
from hybrid_ir.reports.figures.kinds import figure_kind
from hybrid_ir.reports.figures.style import (
    DPI,
    FIGSIZE,
    PALETTE,
    STYLE,
    add_legend,
    new_figure,
    save_figure,
    series_style,
)

LOGGER = logging.getLogger(__name__)


RECALL_POINTS = tuple(level / 10 for level in range(11))

SWEEP_COLORMAP = "viridis"
"""Curves of a swept parameter are coloured along this perceptually uniform, colour-blind-safe
map (dashed), so their order reads from the colour and they stand apart from the runs."""


def pr_curves(
    curves: Mapping[str, Sequence[float]],
    out_stem: str | Path,
    title: str = "Interpolated precision-recall",
    styles: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[Path, Path]:
    """One 11-point interpolated precision-recall curve per label (recall 0.0, 0.1, ..., 1.0);
    ``styles`` gives some labels their own line properties (:func:`sweep_styles`)."""
    for label, precisions in curves.items():
        if len(precisions) != len(RECALL_POINTS):
            raise ValueError(
                f"curve {label!r} has {len(precisions)} precision values, "
                f"expected {len(RECALL_POINTS)} (recall 0.0 to 1.0)"
            )
    return save_figure(pr_curves_figure(curves, title, styles), out_stem)


def pr_curves_figure(
    curves: Mapping[str, Sequence[float]],
    title: str = "Interpolated precision-recall",
    styles: Mapping[str, Mapping[str, Any]] | None = None,
) -> Figure:
    """The figure :func:`pr_curves` writes."""
    with matplotlib.rc_context(STYLE):
        figure, axes = new_figure(title, "Recall", "Interpolated precision")
        for index, (label, precisions) in enumerate(curves.items()):
            style = (styles or {}).get(label, series_style(index))
            axes.plot(RECALL_POINTS, precisions, label=label, **style)
        axes.set_xlim(-0.02, 1.02)
        axes.set_ylim(-0.02, 1.02)
        axes.set_xticks(RECALL_POINTS)
        add_legend(axes)
        return figure


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
    figure = metric_vs_parameter_figure(
        xs, series, xlabel, ylabel, title, mark_best=mark_best, references=references
    )
    return save_figure(figure, out_stem)


def metric_vs_parameter_figure(
    xs: Sequence[float],
    series: Mapping[str, Sequence[float]],
    xlabel: str,
    ylabel: str,
    title: str,
    mark_best: bool = True,
    references: Mapping[str, float] | None = None,
) -> Figure:
    """The figure :func:`metric_vs_parameter` writes."""
    with matplotlib.rc_context(STYLE):
        figure, axes = new_figure(title, xlabel, ylabel)
        for index, (label, values) in enumerate(series.items()):
            (line,) = axes.plot(xs, values, label=label, **series_style(index))
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
            color = series_style(len(series) + index)["color"]
            axes.axhline(value, linestyle="--", color=color, label=label)
        if mark_best:
            axes.margins(y=0.12)  # room above the highest point for its value label
        add_legend(axes)
        return figure


def recall_at_k_curve(
    curves: Mapping[str, Mapping[int, float]],
    out_stem: str | Path,
    title: str = "Recall@k",
    log_x: bool = False,
    measure: str = "Recall",
    styles: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[Path, Path]:
    """``measure``@k against k per label (paper 002 Fig. 1: Recall; paper 003 Fig. 2: NDCG), k
    sorted ascending, on the 0-1 scale every figure of the measure shares.

    The x axis is linear by default; ``log_x`` suits cut-offs spanning decades (1 to 1000),
    where a linear axis crowds the small k that matter most.
    """
    return save_figure(recall_at_k_figure(curves, title, log_x, measure, styles), out_stem)


def recall_at_k_figure(
    curves: Mapping[str, Mapping[int, float]],
    title: str = "Recall@k",
    log_x: bool = False,
    measure: str = "Recall",
    styles: Mapping[str, Mapping[str, Any]] | None = None,
) -> Figure:
    """The figure :func:`recall_at_k_curve` writes."""
    with matplotlib.rc_context(STYLE):
        figure, axes = new_figure(title, "k (documents retrieved)", f"{measure}@k")
        for index, (label, points) in enumerate(curves.items()):
            ks = sorted(points)
            # about ten markers a curve: one on each of a hundred cut-offs would hide the line
            style = {"markevery": max(1, len(ks) // 10), **series_style(index)}
            axes.plot(ks, [points[k] for k in ks], label=label,
                      **(styles or {}).get(label, style))  # fmt: skip
        if log_x:
            axes.set_xscale("log")
        elif len({k for points in curves.values() for k in points}) <= 20:
            axes.xaxis.get_major_locator().set_params(integer=True)
        axes.set_ylim(-0.02, 1.02)
        add_legend(axes)
        return figure


# --- paper 000 Fig. 2: a metric by topic label ------------------------------------------------

LABEL_PANEL_WIDTH = 3.2
"""Inches per panel of :func:`by_label_bars` (three panels: 960 x 480 pixels)."""


def label_bar_figure(panels: Sequence[LabelPanel], ylabel: str, title: str) -> Figure:
    """Grouped bars, one panel per label column, every panel on the same y scale."""
    with matplotlib.rc_context(STYLE):
        size = (max(FIGSIZE[0], LABEL_PANEL_WIDTH * len(panels)), FIGSIZE[1])
        figure = Figure(figsize=size, dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        grid = figure.subplots(1, len(panels), sharey=True, squeeze=False)[0]
        runs = list(panels[0].means) if panels else []
        width = 0.8 / max(len(runs), 1)
        containers = []
        for axes, panel in zip(grid, panels, strict=True):
            for index, run in enumerate(runs):
                offset = (index - (len(runs) - 1) / 2) * width
                xs = [position + offset for position in range(len(panel.values))]
                color = PALETTE[index % len(PALETTE)]
                bars = axes.bar(xs, panel.means[run], width, color=color)
                if axes is grid[0]:
                    containers.append(bars)
            axes.set_title(panel.column)
            axes.set_xticks(range(len(panel.values)))
            axes.set_xticklabels(
                [
                    f"{value} (n={count})"
                    for value, count in zip(panel.values, panel.counts, strict=True)
                ],
                rotation=30,
                ha="right",
            )
            axes.grid(axis="x", visible=False)
        grid[0].set_ylabel(ylabel)
        figure.suptitle(title)
        if runs:
            figure.legend(containers, runs, loc="outside lower center", ncols=min(len(runs), 4))
        return figure


def by_label_bars(
    panels: Sequence[LabelPanel], out_stem: str | Path, ylabel: str, title: str
) -> tuple[Path, Path]:
    """Paper 000 Fig. 2: :func:`label_bar_figure` written as PNG and SVG."""
    return save_figure(label_bar_figure(panels, ylabel, title), out_stem)


# --- paper 000 Fig. 3: ranks of a fused run's top documents in its inputs ----------------------

NOT_RETRIEVED = "not retrieved"
_RUN_MARKERS = ("o", "s", "D", "v", "P", "X")  # "^" is kept for documents not retrieved


def rank_scatter(
    rows: Sequence[RankRow],
    labels: Sequence[str],
    out_stem: str | Path,
    title: str,
    min_relevance: int = 2,
    max_rank: int = 1000,
) -> tuple[Path, Path, Path]:
    """Paper 000 Fig. 3: x is a document's rank in the fused run, y its rank in each input run
    (log scale, rank 1 at the bottom). A document an input lacks, or ranks below ``max_rank``,
    sits on the "not retrieved" line at the top edge as a triangle. Relevant documents
    (relevance >= ``min_relevance``) are filled, the others hollow. Writes PNG, SVG and the TSV
    of :func:`write_rank_rows` (same stem)."""
    png, svg = save_figure(
        rank_scatter_figure(rows, labels, title, min_relevance, max_rank), out_stem
    )
    stem = Path(out_stem)
    tsv = write_rank_rows(rows, labels, stem.with_name(stem.name + ".tsv"))
    return png, svg, tsv


def rank_scatter_figure(
    rows: Sequence[RankRow],
    labels: Sequence[str],
    title: str,
    min_relevance: int = 2,
    max_rank: int = 1000,
) -> Figure:
    """The figure :func:`rank_scatter` writes."""
    top = max_rank * 2  # the "not retrieved" line, one step above max_rank on the log axis
    with matplotlib.rc_context(STYLE):
        figure, axes = new_figure(title, "rank in the fused run", "rank in the input run")
        width = 0.5 / max(len(labels), 1)
        for index, label in enumerate(labels):
            color = PALETTE[index % len(PALETTE)]
            offset = (index - (len(labels) - 1) / 2) * width
            for row in rows:
                rank = row.ranks[label]
                missing = rank is None or rank > max_rank
                relevant = row.relevance is not None and row.relevance >= min_relevance
                axes.plot(
                    row.fused_rank + offset,
                    top if missing else rank,
                    marker="^" if missing else _RUN_MARKERS[index % len(_RUN_MARKERS)],
                    markersize=8,
                    color=color,
                    markerfacecolor=color if relevant else "white",
                    linestyle="none",
                )
                if not missing:  # the rank itself, as a log axis reads coarsely
                    axes.annotate(
                        str(rank),
                        (row.fused_rank + offset, rank),
                        textcoords="offset points",
                        xytext=(6, 0),
                        va="center",
                        fontsize="x-small",
                        color=color,
                    )
        axes.axhline(max_rank, color="#7f7f7f", linestyle=":", linewidth=1)
        axes.set_yscale("log")
        axes.set_ylim(0.7, top * 1.6)
        ticks = sorted({tick for tick in (1, 10, 100, 1000, 10000) if tick < max_rank} | {max_rank})
        axes.set_yticks([*ticks, top], [*(str(tick) for tick in ticks), NOT_RETRIEVED])
        axes.minorticks_off()
        axes.set_xticks(range(1, len(rows) + 1))
        axes.set_xlim(0.4, max(len(rows), 1) + 0.6)
        handles = [
            Line2D([], [], color=PALETTE[i % len(PALETTE)], linestyle="none", label=label,
                   marker=_RUN_MARKERS[i % len(_RUN_MARKERS)])
            for i, label in enumerate(labels)
        ]  # fmt: skip
        handles += [
            Line2D([], [], color="#7f7f7f", marker="^", linestyle="none", label=NOT_RETRIEVED),
            Line2D([], [], color="#7f7f7f", marker="o", linestyle="none",
                   label=f"relevant (relevance >= {min_relevance})"),
            Line2D([], [], color="#7f7f7f", marker="o", markerfacecolor="white",
                   linestyle="none", label="not relevant or unjudged"),
        ]  # fmt: skip
        figure.legend(handles=handles, loc="outside lower center", ncols=3, fontsize="small")
        return figure


# --- paper 001 Fig. 2: two runs topic by topic, by topic label --------------------------------


def head_to_head_bars(
    rows: Sequence[HeadToHead],
    runs: Sequence[str],
    column: str,
    metric: str,
    out_stem: str | Path,
    title: str,
) -> tuple[Path, Path, Path]:
    """Paper 001 Fig. 2: (a) topics where each run scores higher, ties in grey, and (b) each
    run's mean ``metric``, per value of label ``column``. Writes PNG, SVG and the TSV of
    :func:`write_head_to_head` (same stem)."""
    png, svg = save_figure(head_to_head_figure(rows, runs, column, metric, title), out_stem)
    stem = Path(out_stem)
    tsv = write_head_to_head(rows, runs, column, metric, stem.with_name(stem.name + ".tsv"))
    return png, svg, tsv


def head_to_head_figure(
    rows: Sequence[HeadToHead], runs: Sequence[str], column: str, metric: str, title: str
) -> Figure:
    """The figure :func:`head_to_head_bars` writes; its two panels count different things
    (topics, a mean score), so each has its own y scale."""
    values = [f"{row.value} (n={row.topics})" for row in rows]
    positions = range(len(rows))
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(2 * FIGSIZE[0], FIGSIZE[1]), dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        wins, means = figure.subplots(1, 2)
        width = 0.8 / 3
        for index, run in enumerate(runs):
            color = PALETTE[index % len(PALETTE)]
            offset = (index - 1) * width
            bars = wins.bar([x + offset for x in positions], [row.higher[index] for row in rows],
                            width, color=color, label=run)  # fmt: skip
            wins.bar_label(bars)
            bars = means.bar([x + (index - 0.5) * width for x in positions],
                             [row.means[index] for row in rows], width, color=color)  # fmt: skip
            means.bar_label(bars, fmt="%.3f")
        bars = wins.bar([x + width for x in positions], [row.ties for row in rows], width,
                        color="#bbbbbb", label="tie")  # fmt: skip
        wins.bar_label(bars)
        wins.set_title(f"(a) topics where the run has the higher {metric}")
        wins.set_ylabel("topics")
        means.set_title(f"(b) mean {metric} over the topics")
        means.set_ylabel(f"mean {metric}")
        for axes in (wins, means):
            axes.set_xticks(positions, values)
            axes.set_xlabel(column)
            axes.grid(axis="x", visible=False)
            axes.margins(y=0.1)  # room for the bar labels
        figure.suptitle(title)
        add_legend(wins)
        return figure


# --- paper 003 Figs. 2 and 4: NDCG@k, and curves per value of a swept parameter -----------------


def sweep_styles(labels: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Line properties of the curves of a sweep, in value order: dashed, no markers, coloured
    along :data:`SWEEP_COLORMAP` (so they never share a colour with a run's curve)."""
    colormap = matplotlib.colormaps[SWEEP_COLORMAP]
    steps = max(len(labels) - 1, 1)
    return {
        label: {"color": colormap(0.9 * index / steps), "linestyle": "--", "marker": "none"}
        for index, label in enumerate(labels)
    }


# --- paper 004 Fig. 3: a table as a figure ------------------------------------------------------


def table_figure(
    header: Sequence[str], rows: Sequence[Sequence[str]], out_stem: str | Path, title: str
) -> tuple[Path, Path]:
    """A table drawn as PNG and SVG (paper 004 Fig. 3 is a table printed as a figure): a header
    row on grey, its names wrapped to two lines at most, one line per row, each column as wide
    as its longest cell; cells as given (format numbers before)."""
    return save_figure(table_figure_of(header, rows, title), out_stem)


def table_figure_of(header: Sequence[str], rows: Sequence[Sequence[str]], title: str) -> Figure:
    """The figure :func:`table_figure` writes."""
    wrapped = [textwrap.fill(name, max(12, math.ceil(len(name) / 2))) for name in header]
    with matplotlib.rc_context(STYLE):
        height = 1.0 + 0.35 * (len(rows) + 2)
        figure = Figure(figsize=(FIGSIZE[0] * 1.5, height), dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        axes.axis("off")
        # Each column as wide as its longest line of text (plus padding), all within the axes.
        longest = [
            max(
                len(line) for cell in (name, *(row[i] for row in rows)) for line in cell.split("\n")
            )
            + 4
            for i, name in enumerate(wrapped)
        ]
        table = axes.table(cellText=[list(row) for row in rows], colLabels=wrapped,
                           colWidths=[n / sum(longest) for n in longest], loc="center",
                           cellLoc="center")  # fmt: skip
        table.auto_set_font_size(False)
        table.set_fontsize(9)
        for (line, _), cell in table.get_celld().items():
            cell.set_height(0.2 if line == 0 else 0.12)
            if line == 0:
                cell.set_facecolor("#dddddd")
                cell.set_text_props(weight="bold")
        axes.set_title(title)
        return figure


@dataclass(frozen=True)
class Dataset:
    """One row of a collection_stats figure: its label, settings and canonical files."""

    name: str
    settings: Mapping[str, Any]
    corpus: str
    topics: str
    qrels: str


@dataclass(frozen=True)
class FigureData:
    """What a kind's drawing function gets: the figure's configuration, where to write, and
    what its kind reads (:data:`hybrid_ir.reports.figures.kinds.FIGURE_KINDS`)."""

    spec: Mapping[str, Any]
    out_stem: Path
    runs: Mapping[str, Run]
    qrels: Qrels | None = None
    sweep_report: Mapping[str, Any] | None = None
    sweep: tuple[Mapping[str, Any], Sequence[Run]] | None = None
    topic_labels: Mapping[str, Mapping[str, str]] | None = None
    fused: Run | None = None
    fused_name: str = "the fused run"
    datasets: Sequence[Dataset] = ()

    @property
    def title(self) -> str:
        return self.spec.get("title", self.out_stem.name)

    @property
    def tsv(self) -> Path:
        return self.out_stem.with_name(self.out_stem.name + ".tsv")

    def judged(self, kind: str) -> Qrels:
        """The qrels, which a ``kind`` figure of runs cannot do without."""
        if self.qrels is None:
            raise ConfigError(f"a {kind} figure of runs needs qrels")
        return self.qrels

    def with_sweep_curves(self, kind: str) -> tuple[Mapping[str, Run], dict[str, dict[str, Any]]]:
        """The runs plus, with a ``sweep`` in the spec, the sweep's fused run at each of its
        ``sweep_values`` (dashed, :func:`sweep_styles`), and each curve's line properties."""
        if "sweep" not in self.spec:
            return self.runs, {}
        if self.sweep is None:
            raise ConfigError(f"a {kind} figure with a sweep needs the sweep and its input runs")
        settings, inputs = self.sweep
        values = self.spec.get("sweep_values", settings["values"])
        swept = sweep_runs(settings, inputs, values, self.spec["sweep_label"])
        return {**self.runs, **swept}, sweep_styles(list(swept))


def draw(
    kind: str,
    spec: Mapping[str, Any],
    runs: Mapping[str, Run],
    qrels: Qrels | None,
    sweep_report: Mapping[str, Any] | None,
    out_stem: str | Path,
    topic_labels: Mapping[str, Mapping[str, str]] | None = None,
    fused: Run | None = None,
    fused_name: str = "the fused run",
    sweep: tuple[Mapping[str, Any], Sequence[Run]] | None = None,
    datasets: Sequence[Dataset] = (),
) -> tuple[Path, ...]:
    """A configured figure of any kind (:data:`hybrid_ir.reports.figures.kinds.FIGURE_KINDS` names
    the function here that draws it); returns the files written."""
    data = FigureData(
        spec, Path(out_stem), runs, qrels, sweep_report, sweep, topic_labels, fused, fused_name,
        datasets,
    )  # fmt: skip
    drawer: Callable[[FigureData], tuple[Path, ...]] = globals()[figure_kind(kind).draw]
    return drawer(data)


def draw_pr_curves(data: FigureData) -> tuple[Path, ...]:
    runs, styles = data.with_sweep_curves("pr_curves")
    columns = [f"IPrec@{level}" for level in RECALL_LEVELS]
    curves: dict[str, list[float]] = {}
    for label, run in runs.items():
        aggregate = evaluate(data.judged("pr_curves"), run, columns).aggregate
        curves[label] = [aggregate[column] for column in columns]
    return pr_curves(curves, data.out_stem, data.title, styles)


def draw_ndcg_at_k(data: FigureData) -> tuple[Path, ...]:
    runs, styles = data.with_sweep_curves("ndcg_at_k")
    qrels, max_k = data.judged("ndcg_at_k"), data.spec["max_k"]
    at_k = {label: metric_at_k(qrels, run, "nDCG", max_k) for label, run in runs.items()}
    figure_paths = recall_at_k_curve(at_k, data.out_stem, data.title, measure="NDCG", styles=styles)
    return (*figure_paths, write_curves(at_k, "k", data.tsv))


def draw_recall_curve(data: FigureData) -> tuple[Path, ...]:
    ks = range(1, data.spec.get("max_k", 100) + 1)
    qrels = data.judged("recall_curve")
    recalls = {label: recall_curve(run, qrels, ks) for label, run in data.runs.items()}
    return recall_at_k_curve(recalls, data.out_stem, data.title)


def draw_sweep(data: FigureData) -> tuple[Path, ...]:
    metric, report = data.spec["metric"], data.sweep_report
    references = {
        label: evaluate(data.judged("sweep"), run, [metric]).aggregate[metric]
        for label, run in data.runs.items()
    }
    if report is None:
        raise ConfigError("a sweep figure needs the sweep report")
    series = {data.spec.get("label", "fused"): [score[metric] for score in report["scores"]]}
    return metric_vs_parameter(
        report["values"], series, data.out_stem, data.spec.get("xlabel", report["parameter"]),
        metric, data.title, references=references,
    )  # fmt: skip


def _label_scores(data: FigureData, kind: str) -> tuple[Mapping, Qrels, dict]:
    if data.topic_labels is None:
        raise ConfigError(f"a {kind} figure needs the label table")
    metric, judged = data.spec["metric"], data.judged(kind)
    scores = {
        label: evaluate(judged, run, [metric]).per_query[metric] for label, run in data.runs.items()
    }
    return data.topic_labels, judged, scores


def draw_by_label(data: FigureData) -> tuple[Path, ...]:
    labels, judged, scores = _label_scores(data, "by_label")
    spec = data.spec
    panels = label_panels(scores, labels, spec["labels"], judged, spec["label_order"])
    return by_label_bars(panels, data.out_stem, f"mean {spec['metric']}", data.title)


def draw_head_to_head(data: FigureData) -> tuple[Path, ...]:
    labels, _, scores = _label_scores(data, "head_to_head")
    (column,) = data.spec["labels"]
    compared = head_to_head(scores, labels, column, data.spec["label_order"].get(column, []))
    return head_to_head_bars(
        compared, list(data.runs), column, data.spec["metric"], data.out_stem, data.title
    )


def draw_rank_scatter(data: FigureData) -> tuple[Path, ...]:
    if data.fused is None:
        raise ConfigError("a rank_scatter figure needs its fused run")
    spec = data.spec
    rows = fused_rank_rows(
        data.fused, data.runs, data.judged("rank_scatter"), spec["topic"], spec["cutoff"],
        data.fused_name,
    )  # fmt: skip
    return rank_scatter(
        rows, list(data.runs), data.out_stem, data.title, spec["min_relevance"], spec["max_rank"]
    )


def draw_collection_stats(data: FigureData) -> tuple[Path, ...]:
    """Paper 004 Fig. 3: each dataset's statistics, read from its canonical files, as a table
    figure, a TSV and a Markdown table (with the spec's notes)."""
    stats = []
    for dataset in data.datasets:
        LOGGER.info("%s: reading %s", dataset.name, dataset.corpus)
        settings = dataset.settings
        stats.append(
            collection_stats_of_files(
                dataset.name, dataset.corpus, dataset.topics, read_qrels(dataset.qrels),
                settings["sections"], settings["query_fields"], settings["min_relevance"],
            )
        )  # fmt: skip
    png, svg = table_figure(HEADER, table_rows(stats), data.out_stem, data.spec["title"])
    markdown = data.out_stem.with_name(data.out_stem.name + ".md")
    write_stats_tsv(stats, data.tsv)
    write_stats_markdown(stats, markdown, data.spec["title"], data.spec["notes"])
    return png, svg, data.tsv, markdown
