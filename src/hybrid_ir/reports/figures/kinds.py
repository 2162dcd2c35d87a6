"""Kinds of figure, one registry entry each: what a kind reads, what it writes, how it is drawn.

A figure configured under ``figures.<name>`` names its ``kind``; :data:`FIGURE_KINDS` gives the
workflow everything else: the inputs it reads beyond its labelled runs and qrels
(:data:`EXTRA_INPUTS`), the files it writes beyond PNG and SVG, the resources entry of its rule
(one rule per kind, ``figure_<kind>``) and the function of :mod:`hybrid_ir.reports.figures.draw`
that draws it. :func:`figure_inputs` and :func:`figure_outputs` are what the rules ask. Adding a
kind is one entry here and its drawing function (and its keys in the configuration schema, whose
kind enum a test checks against this registry).

This module stays light (no plotting library), as the workflow reads it whenever it starts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hybrid_ir import paths
from hybrid_ir.errors import ConfigError

EXTRA_INPUTS = ("sweep_report", "sweep_runs", "label_table", "fused_run", "datasets")
"""What a kind may read besides runs and qrels: a sweep's report, a sweep's input runs (only
when the figure names a sweep), a collection table of topic labels, a fused run, and the
corpus, topics and qrels of several datasets."""
RESERVED_LABELS = frozenset({"qrels", "sweep", "sweep_runs", "label_table", "fused_run"})
"""Input names a run's legend label cannot take."""


@dataclass(frozen=True)
class FigureKind:
    """One kind of figure: ``draw`` names its function in :mod:`hybrid_ir.reports.figures.draw`."""

    draw: str
    reads: frozenset[str] = frozenset()
    writes: tuple[str, ...] = ()
    runs: bool = True
    resources: str = "figure"
    description: str = ""

    def __post_init__(self) -> None:
        unknown = sorted(self.reads - set(EXTRA_INPUTS))
        if unknown:
            raise ValueError(f"unknown figure inputs {unknown}; known: {EXTRA_INPUTS}")


FIGURE_KINDS: dict[str, FigureKind] = {
    "pr_curves": FigureKind(
        "draw_pr_curves",
        reads=frozenset({"sweep_runs"}),
        description="11-point interpolated precision-recall (paper 003 Figs. 2, 4, 5)",
    ),
    "ndcg_at_k": FigureKind(
        "draw_ndcg_at_k",
        reads=frozenset({"sweep_runs"}),
        writes=("tsv",),
        description="NDCG@k for k = 1 ... max_k (paper 003 Fig. 2, right)",
    ),
    "recall_curve": FigureKind("draw_recall_curve", description="Recall@k (paper 002 Fig. 1)"),
    "sweep": FigureKind(
        "draw_sweep",
        reads=frozenset({"sweep_report"}),
        description="a metric against a swept parameter (paper 003's lambda ablation)",
    ),
    "by_label": FigureKind(
        "draw_by_label",
        reads=frozenset({"label_table"}),
        description="a metric by topic label (paper 000 Fig. 2)",
    ),
    "head_to_head": FigureKind(
        "draw_head_to_head",
        reads=frozenset({"label_table"}),
        writes=("tsv",),
        description="two runs topic by topic per label value (paper 001 Fig. 2)",
    ),
    "rank_scatter": FigureKind(
        "draw_rank_scatter",
        reads=frozenset({"fused_run"}),
        writes=("tsv",),
        description="where a fused run's top documents sit in its inputs (paper 000 Fig. 3)",
    ),
    "collection_stats": FigureKind(
        "draw_collection_stats",
        reads=frozenset({"datasets"}),
        writes=("tsv", "md"),
        runs=False,
        resources="collection_stats",
        description="statistics of collections as a table figure (paper 004 Fig. 3)",
    ),
}


def figure_kind(name: str) -> FigureKind:
    if name not in FIGURE_KINDS:
        raise ConfigError(f"unknown figure kind {name!r}; choose one of {', '.join(FIGURE_KINDS)}")
    return FIGURE_KINDS[name]


def output_keys(kind: str) -> tuple[str, ...]:
    """The named outputs of a kind's rule: ``png``, ``svg``, then ``tsv`` / ``markdown``."""
    return ("png", "svg", *("markdown" if ext == "md" else ext for ext in figure_kind(kind).writes))


def kind_outputs(kind: str, name: str) -> dict[str, str]:
    """Output name -> path of a figure of ``kind`` named ``name`` (or its rule's wildcard)."""
    extensions = ("png", "svg", *figure_kind(kind).writes)
    return dict(zip(output_keys(kind), (paths.figure(name, e) for e in extensions), strict=True))


def figure_outputs(name: str, figure: Mapping[str, Any]) -> dict[str, str]:
    """Output name -> path of a configured figure."""
    return kind_outputs(figure["kind"], name)


def figure_inputs(
    name: str, config: Mapping[str, Any], run_file: Callable[[str, str, str], str]
) -> dict[str, Any]:
    """Input name -> file(s) of a configured figure: each legend label's run (``run_file`` of
    collection, topic set and run), the qrels, and what its kind reads besides."""
    figure = config["figures"][name]
    kind = figure_kind(figure["kind"])
    inputs: dict[str, Any] = {}
    if "datasets" in kind.reads:
        datasets = figure["datasets"].values()
        inputs["corpora"] = [paths.corpus(d["collection"]) for d in datasets]
        inputs["topics"] = [paths.topics(d["collection"], d["topics"]) for d in datasets]
        inputs["qrels"] = [paths.qrels(d["collection"], d["qrels"]) for d in datasets]
    if not kind.runs:
        return inputs
    collection, topics = figure["collection"], figure["topics"]
    reserved = RESERVED_LABELS & set(figure["runs"])
    if reserved:
        raise ConfigError(f"config: figures.{name}.runs: {sorted(reserved)} is a reserved label")
    inputs |= {label: run_file(collection, topics, run) for label, run in figure["runs"].items()}
    inputs["qrels"] = paths.qrels(collection, figure["qrels"])
    if "sweep_report" in kind.reads:
        sweep = config["sweeps"][figure["sweep"]]
        inputs["sweep"] = paths.sweep(sweep["collection"], sweep["topics"], figure["sweep"])
    if "sweep_runs" in kind.reads and "sweep" in figure:
        sweep_inputs = config["sweeps"][figure["sweep"]]["runs"]
        inputs["sweep_runs"] = [run_file(collection, topics, run) for run in sweep_inputs]
    if "label_table" in kind.reads:
        if figure["label_table"] not in config["collections"][collection]["tables"]:
            raise ConfigError(
                f"config: figures.{name}.label_table: collection {collection!r} writes no table "
                f"{figure['label_table']!r}"
            )
        inputs["label_table"] = paths.table(collection, figure["label_table"])
    if "fused_run" in kind.reads:
        inputs["fused_run"] = run_file(collection, topics, figure["fused"])
    return inputs
