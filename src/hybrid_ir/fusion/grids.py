"""Grid search over named parameter values: the points in order, and a score per point.

Shared by the tuning that runs inside a retriever (paper 002's BM25 k1/b grid,
:mod:`hybrid_ir.retrieval.sparse`) and by cross-validation (:mod:`hybrid_ir.fusion.crossval`),
without tying the one to the other's code.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from hybrid_ir.data.qrels import Qrels
from hybrid_ir.data.runs import Run
from hybrid_ir.errors import ConfigError, ParameterError
from hybrid_ir.evaluation.measures import evaluate

P = TypeVar("P")
T = TypeVar("T")

GridPoint = tuple[tuple[str, Any], ...]


def grid(axes: Mapping[str, Iterable[Any]]) -> list[GridPoint]:
    """The Cartesian product of named parameter values, last axis varying fastest.

    Each point is a tuple of ``(name, value)`` pairs: hashable, so it can key a score table, and
    ``dict(point)`` gives the keyword arguments of the run it stands for, e.g.
    ``grid({"k1": [0.9, 1.2], "b": [0.4, 0.75]})`` for BM25.
    """
    names = list(axes)
    return [tuple(zip(names, values, strict=True)) for values in itertools.product(*axes.values())]


def grid_search(evaluate_param: Callable[[P], T], params: Iterable[P]) -> dict[P, T]:
    """``{param: evaluate_param(param)}`` in the order of ``params``, the order ties follow.

    ``evaluate_param`` returns ``{topic: score}`` for one metric, or ``{metric: {topic: score}}``
    to evaluate every metric on one run per parameter (then see :func:`by_metric`).
    """
    table: dict[P, T] = {}
    for param in params:
        if param in table:
            raise ParameterError(f"parameter {param!r} is listed twice")
        table[param] = evaluate_param(param)
    return table


@dataclass(frozen=True)
class Tuned(Generic[P]):
    """A grid search's outcome for one measure.

    ``per_topic`` is ``{param: {topic: score}}`` in grid order, the table
    :func:`hybrid_ir.fusion.crossval.cross_validate` takes; ``scores`` holds each parameter's mean
    (the measure's aggregate); ``best`` is the first parameter in grid order with the highest
    mean.
    """

    per_topic: dict[P, dict[str, float]]
    scores: dict[P, float]
    best: P
    best_score: float


def tuned(per_topic: dict[P, dict[str, float]]) -> Tuned[P]:
    """The outcome of a grid search's ``{param: {topic: score}}`` table for one measure."""
    scores = {param: float(np.mean(list(table.values()))) for param, table in per_topic.items()}
    best = max(scores, key=scores.__getitem__)  # max keeps the first of equal maxima
    return Tuned(per_topic, scores, best, scores[best])


def measure_per_topic(qrels: Qrels, run: Run, measure: str) -> dict[str, float]:
    """``{topic: score}`` of one measure (not a measure set) of ``run``."""
    per_query = evaluate(qrels, run, [measure]).per_query
    if list(per_query) != [measure]:
        raise ConfigError(f"tuning needs a single measure, not the set {measure!r}")
    return per_query[measure]
