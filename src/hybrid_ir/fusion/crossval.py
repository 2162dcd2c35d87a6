"""K-fold cross-validation of a tuned parameter on a table of per-topic scores.

Paper 000 tunes the fusion weight alpha in {0.1, ..., 0.9} by 5-fold cross-validation, once per
metric, with pya0's ``crossvalidate.py``. pya0 gets there through files: it writes every fused
run, splits each into fold train/test files, runs trec_eval on each and parses a TSV of the
printed means. All of that information is already in one table ``{param: {topic: score}}`` of
per-topic scores, so everything here works on that table and nothing else: the same code
cross-validates alpha, BM25 k1/b, eta or the RRF k once :func:`grid_search` has filled it.

A fold's score is the mean over the fold's topics that the parameter's table holds: the table
decides which topics count, so build it with :func:`hybrid_ir.evaluation.measures.evaluate`, whose
``per_query`` keeps per column exactly the topics its aggregate averages over (every qrels topic,
0 when unanswered, for trec_eval ``-c`` columns; the topics keeping a judged document for
ARQMath's prime measures). Two modes, each with its fold rule and its precision:

``default``
    Folds are a permutation, drawn from ``numpy.random.default_rng(seed)``, of the topics in
    natural order (:func:`hybrid_ir.data.runs.topic_sort_key`), so they depend only on the topic
    *set* and the seed. Fold scores and their mean are kept at full precision.
``legacy``
    Reproduces pya0 0.3.7 (``split_run_files`` then ``cross_validate_tsv``) number for number:
    the caller gives topics in pya0's order (first appearance in the first run file, then new
    ones from the others), shuffled by ``np.random.seed(seed); np.random.shuffle`` on a numpy
    array of the ids. A fold's score is what trec_eval (without ``-c``) prints for the fold's
    run file: the mean over the fold's topics that are in the run and the qrels (folds drawn
    from the run's topics, table from the qrels), summed in trec_eval's query order and printed
    with 4 decimals; pya0 compares and averages those printed values and rounds the mean with
    ``round(numpy.float64, 4)``.

A count column (``Rel_Ret``, ``NumRet``...: ``total`` in :func:`cross_validate`) is summed, not
averaged, as :func:`hybrid_ir.evaluation.measures.evaluate` and trec_eval sum it: a fold's score is
the sum over its topics and the cross-validated score the sum over all folds, the count over every
topic (pya0 would average the per-fold sums; that fifth of a count is no number a paper prints).

In both, fold k's parameter is the one with the best mean over the other folds' topics, the
first maximum in the order the parameters are given winning a tie (pya0's ``max`` over the TSV's
order), and is scored on fold k. The seed is the caller's (the workflow takes it from its
config): the paper's runs used 1234 (:data:`PAPER_SEED`), pya0's code default is 123
(:data:`PYA0_DEFAULT_SEED`).
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

import numpy as np

from hybrid_ir.data.qrels import Qrels
from hybrid_ir.data.runs import Run, topic_sort_key
from hybrid_ir.errors import ParameterError
from hybrid_ir.evaluation.measures import decisive_depth, evaluate, resolve_measures
from hybrid_ir.fusion.grids import grid_search
from hybrid_ir.fusion.methods import linear_sweep

Mode = Literal["default", "legacy"]
MODES: tuple[Mode, ...] = ("default", "legacy")

PAPER_SEED = 1234
"""The seed paper 000's cross-validated runs were split with."""
PYA0_DEFAULT_SEED = 123
"""``split_run_files``'s own default seed, used when pya0 is called without ``--seed``."""

ALPHAS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""Paper 000's grid for the fusion weight, written out so no value carries float noise."""

P = TypeVar("P", bound=Hashable)
T = TypeVar("T")
Scores = Mapping[P, Mapping[str, float]]
"""``{param: {topic: score}}``, the parameters in the order that breaks ties."""


@dataclass(frozen=True)
class Fold(Generic[P]):
    """One fold's outcome: the parameter tuned on the other folds and its score on this one."""

    index: int
    topics: tuple[str, ...]
    param: P
    train_score: float
    test_score: float


@dataclass(frozen=True)
class CrossValidation(Generic[P]):
    """Cross-validated result of one metric.

    ``per_topic`` scores each topic with the parameter chosen for its fold, which is the run a
    significance test must see: the cross-validated system, not any single parameter value.
    ``frequencies`` counts how often each parameter was chosen, in the order first chosen, as
    pya0 prints them.
    """

    folds: tuple[Fold[P], ...]
    mean_test_score: float
    frequencies: dict[P, int]
    per_topic: dict[str, float]
    total: bool = False

    @property
    def params(self) -> list[P]:
        """The parameter chosen for each fold, in fold order."""
        return [fold.param for fold in self.folds]


def assign_folds(
    topics: Iterable[str], k: int = 5, *, seed: int, mode: Mode = "default"
) -> list[list[str]]:
    """Split ``topics`` into ``k`` folds (sizes differing by at most one, larger ones first).

    ``default`` ignores the order of ``topics``; ``legacy`` depends on it, as pya0 does, so pass
    the topics in the order pya0 would read them from the run files. A topic given twice is kept
    once, at its first position.
    """
    _check_mode(mode)
    unique = list(dict.fromkeys(topics))
    if not 2 <= k <= len(unique):
        raise ParameterError(
            f"cannot split {len(unique)} topic(s) into {k} folds (need 2 <= k <= n)"
        )
    if mode == "legacy":
        ids = np.array(unique)
        # RandomState(seed) is the generator np.random.seed(seed) reseeds, without touching
        # numpy's global state.
        np.random.RandomState(seed).shuffle(ids)
        return [[str(topic) for topic in fold] for fold in np.array_split(ids, k)]
    ordered = sorted(unique, key=topic_sort_key)
    permutation = np.random.default_rng(seed).permutation(len(ordered))
    return [[ordered[i] for i in fold] for fold in np.array_split(permutation, k)]


def fold_assignment_table(folds: Sequence[Sequence[str]]) -> list[dict[str, str | int]]:
    """Rows ``{topic, fold}`` (folds numbered from 0, as pya0 names its files) for an artifact."""
    return [{"topic": topic, "fold": index} for index, fold in enumerate(folds) for topic in fold]


def cross_validate(
    scores: Scores[P], folds: Sequence[Sequence[str]], mode: Mode = "default", total: bool = False
) -> CrossValidation[P]:
    """Choose a parameter per fold on the other folds and score it on that fold; a ``total``
    (a count) is summed over topics and folds instead of averaged."""
    _check_mode(mode)
    params = list(scores)
    if not params:
        raise ParameterError("no parameter values to choose from")
    if len(folds) < 2:
        raise ParameterError(f"cross-validation needs at least 2 folds, got {len(folds)}")
    results: list[Fold[P]] = []
    per_topic: dict[str, float] = {}
    frequencies: dict[P, int] = {}
    for index, test in enumerate(folds):
        train = [topic for other, fold in enumerate(folds) if other != index for topic in fold]
        train_scores = [
            _fold_score(_counted(scores[param], train, mode), mode, total) for param in params
        ]
        best = max(range(len(params)), key=train_scores.__getitem__)
        param = params[best]
        tested = _counted(scores[param], test, mode)
        results.append(
            Fold(index, tuple(test), param, train_scores[best], _fold_score(tested, mode, total))
        )
        per_topic.update(tested)
        frequencies[param] = frequencies.get(param, 0) + 1
    if total:
        count = sum(fold.test_score for fold in results)
        return CrossValidation(tuple(results), count, frequencies, per_topic, total=True)
    mean = np.array([fold.test_score for fold in results]).mean()
    if mode == "legacy":
        mean = round(mean, 4)  # numpy's rounding of a float64, exactly as pya0 rounds it
    return CrossValidation(tuple(results), float(mean), frequencies, per_topic)


def tune(
    scores_by_metric: Mapping[str, Scores[P]],
    folds: Sequence[Sequence[str]],
    mode: Mode = "default",
    totals: Collection[str] = (),
) -> dict[str, CrossValidation[P]]:
    """Cross-validate every metric separately, as paper 000 and pya0 tune alpha per metric;
    the metrics in ``totals`` are counts, summed."""
    return {
        metric: cross_validate(table, folds, mode, total=metric in totals)
        for metric, table in scores_by_metric.items()
    }


def by_metric(
    table: Mapping[P, Mapping[str, Mapping[str, float]]],
) -> dict[str, dict[P, Mapping[str, float]]]:
    """Turn ``{param: {metric: {topic: score}}}`` into the ``{metric: {param: ...}}`` of
    :func:`tune`, keeping the parameter order."""
    result: dict[str, dict[P, Mapping[str, float]]] = {}
    for param, metrics in table.items():
        for metric, per_topic in metrics.items():
            result.setdefault(metric, {})[param] = per_topic
    return result


def crossvalidate_linear(
    dense: Run,
    base: Run,
    qrels: Qrels,
    measures: Sequence[str],
    alphas: Sequence[float] = ALPHAS,
    k_folds: int = 5,
    *,
    seed: int,
    mode: Mode = "default",
    k: int = 1000,
) -> dict[str, CrossValidation[float]]:
    """Cross-validate the weight of ``alpha * dense + (1 - alpha) * base`` for each column.

    ``measures`` is what :func:`hybrid_ir.evaluation.measures.evaluate` takes (measure names and
    sets); the result has one entry per column, alpha tuned separately for each. Default folds are
    drawn from the qrels' topics. Legacy folds are drawn as ``split_run_files`` draws them from
    the fused run files: topics in order of first appearance, first fused run first (with
    :func:`~hybrid_ir.fusion.methods.linear`'s default that is ``dense``'s order, its file order
    when read with :func:`~hybrid_ir.data.runs.read_run`, as pya0's ``merge_run_file`` writes it);
    topics without judgments then fall out of the fold means, as they do for trec_eval.
    """
    _check_mode(mode)
    if k < 1:
        raise ParameterError(f"the depth (documents kept per topic) must be at least 1, got {k}")
    # Default folds come from the qrels, so too many folds fails before the costly sweep.
    folds = assign_folds(qrels, k_folds, seed=seed) if mode == "default" else None
    first_seen: dict[str, None] = {}
    # nDCG@10 alone is decided by each fused topic's first 10 documents: fusing no more than
    # that many saves building (and evaluating) 1,000-document rankings per weight.
    depth = decisive_depth(measures)
    fused_runs = dict(linear_sweep(dense, base, alphas, k if depth is None else min(k, depth)))

    def evaluate_alpha(alpha: float) -> dict[str, dict[str, float]]:
        first_seen.update(dict.fromkeys(fused_runs[alpha]))
        return evaluate(qrels, fused_runs[alpha], list(measures)).per_query

    scores = by_metric(grid_search(evaluate_alpha, alphas))
    if folds is None:
        folds = assign_folds(first_seen, k_folds, seed=seed, mode=mode)
    totals = {column.name for column in resolve_measures(measures) if column.total}
    return tune(scores, folds, mode, totals)


def _counted(per_topic: Mapping[str, float], topics: Sequence[str], mode: Mode) -> dict[str, float]:
    """The fold's topics that the table scores, in the order they are summed.

    Legacy sums in trec_eval's query order (it sorts its input by query id as strings), so that
    the mean rounds to 4 decimals exactly as trec_eval prints it.
    """
    ordered = sorted(topics) if mode == "legacy" else topics
    return {topic: per_topic[topic] for topic in ordered if topic in per_topic}


def _fold_score(counted: Mapping[str, float], mode: Mode, count: bool = False) -> float:
    """The mean of a fold's topic scores (their sum for a ``count``, which trec_eval prints
    whole); legacy keeps only what trec_eval prints (``%.4f``), since pya0 compares and averages
    those printed values, ties included."""
    if not counted:
        raise ParameterError("a fold has no scored topic (are the folds drawn from other topics?)")
    if count:
        return sum(counted.values())
    total = 0.0
    for value in counted.values():
        total += value
    mean = total / len(counted)
    return float(f"{mean:.4f}") if mode == "legacy" else mean


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ParameterError(f"unknown cross-validation mode {mode!r}; expected one of {MODES}")


def report(results: Mapping[str, CrossValidation]) -> dict:
    """A JSON-ready summary: the fold topics, then per column the chosen parameter and scores of
    every fold, the mean test score (a count's total over every topic when ``total``), the
    parameter frequencies and the per-topic scores."""
    first = next(iter(results.values()))
    return {
        "folds": [list(fold.topics) for fold in first.folds],
        "columns": {
            column: {
                "mean_test_score": result.mean_test_score,
                "total": result.total,
                "frequencies": [[param, count] for param, count in result.frequencies.items()],
                "folds": [
                    {
                        "fold": fold.index,
                        "param": fold.param,
                        "train_score": fold.train_score,
                        "test_score": fold.test_score,
                    }
                    for fold in result.folds
                ],
                "per_topic": result.per_topic,
            }
            for column, result in results.items()
        },
    }
