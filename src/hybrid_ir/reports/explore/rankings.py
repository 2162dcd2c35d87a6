"""The rankings an explorer page shows: a run file's, or a cross-validated fusion's, the ranking
each topic was scored on.

A run is shown in canonical order (score descending, ties by document id descending: the order
trec_eval and every measure here read it in, :func:`hybrid_ir.data.runs.ranked`). A table row made
by cross-validation (paper 000's fusions) has no run file: each topic was scored on the linear
fusion of the row's two runs with the alpha chosen on the other folds, for each measure
separately (:mod:`hybrid_ir.fusion.crossval`). :func:`fold_alphas` reads those alphas from the
cross-validation report, and :func:`fused_ranking` makes the fusion for one alpha with
:func:`hybrid_ir.fusion.methods.linear`, the function the cross-validation scored, so the page shows
the documents each topic's score was computed on.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hybrid_ir.data.formats import parse_json, read_document
from hybrid_ir.data.runs import Run, ranked, read_run
from hybrid_ir.errors import InputFormatError
from hybrid_ir.fusion.methods import linear

Ranking = dict[str, list[str]]
"""Topic -> document ids in ranked order, cut at the depth kept."""


@dataclass(frozen=True)
class RunSource:
    """A row's run file."""

    path: str


@dataclass(frozen=True)
class FusionSource:
    """A row's cross-validated linear fusion: its report and the two runs it fused
    (``alpha * dense + (1 - alpha) * base``)."""

    report: str
    dense: str
    base: str


Source = RunSource | FusionSource


def ranking(run: Run, depth: int | None = None) -> Ranking:
    """Every topic's documents in canonical order, cut at ``depth``."""
    return {topic: [doc for doc, _ in ranked(docs, depth)] for topic, docs in run.items()}


def read_report(path: str | Path) -> dict:
    """A cross-validation report (:func:`hybrid_ir.fusion.crossval.report`), checked for what the
    explorer reads: its folds' topics and each column's per-fold alphas."""
    report = parse_json(read_document(path), path)
    folds = report.get("folds") if isinstance(report, dict) else None
    columns = report.get("columns") if isinstance(report, dict) else None
    if not isinstance(folds, list) or not isinstance(columns, dict):
        raise InputFormatError(path, None, "not a cross-validation report (no folds or columns)")
    return report


def fold_alphas(report: Mapping, column: str, path: str | Path) -> dict[str, float]:
    """Topic -> the alpha its fold was scored with for ``column`` (none if the report has no
    such column)."""
    entry = report["columns"].get(column)
    if entry is None:
        return {}
    chosen = {fold["fold"]: fold["param"] for fold in entry.get("folds", [])}
    alphas = {}
    for index, topics in enumerate(report["folds"]):
        if index not in chosen:
            raise InputFormatError(path, None, f"column {column!r} has no alpha for fold {index}")
        for topic in topics:
            alphas[str(topic)] = float(chosen[index])
    return alphas


def fused_ranking(dense: Run, base: Run, alpha: float, depth: int) -> Ranking:
    """The linear fusion the cross-validation scored for ``alpha`` (pya0's topics: the dense
    run's), in ranked order, cut at ``depth``."""
    return ranking(linear(dense, base, alpha, depth), depth)


class RunCache:
    """Run files read once each, whatever number of rows and fusions name them."""

    def __init__(self) -> None:
        self._runs: dict[str, Run] = {}

    def run(self, path: str) -> Run:
        if path not in self._runs:
            self._runs[path] = read_run(path)
        return self._runs[path]


def top_documents(rankings: Iterable[Ranking], topic: str, k: int) -> list[str]:
    """The documents of ``topic`` any of ``rankings`` puts in its top ``k``, in order of first
    appearance (ranking by ranking)."""
    seen: dict[str, None] = {}
    for one in rankings:
        seen.update(dict.fromkeys(one.get(topic, [])[:k]))
    return list(seen)


def rank_table(rankings: Sequence[Ranking], topic: str, docs: Sequence[str]) -> list[list[int]]:
    """Per ranking, the 1-based rank of each of ``docs`` for ``topic`` (0: not in that ranking
    within its depth)."""
    table = []
    for one in rankings:
        position = {doc: rank for rank, doc in enumerate(one.get(topic, []), start=1)}
        table.append([position.get(doc, 0) for doc in docs])
    return table
