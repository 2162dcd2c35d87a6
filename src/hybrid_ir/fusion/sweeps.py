"""Parameter sweeps of a fusion method: every value evaluated, the best one chosen and applied.

Paper 003 reports its hybrid for every lambda in 0, 0.1, ..., 1 and picks the best on the same
queries (an ablation, said so in its table notes); paper 002 tunes the ensemble share eta on a
development split and applies it to the test split. Both are a sweep: with ``select_on`` runs
and qrels the value is chosen there, otherwise on the evaluated topics themselves. Paper 002
tunes eta per language (its Table 2): with ``by_language``, each language's value is chosen
on that language's queries and applied to them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hybrid_ir.data.qrels import Qrels
from hybrid_ir.data.runs import Run
from hybrid_ir.errors import ConfigError
from hybrid_ir.evaluation.measures import evaluate, resolve_measures
from hybrid_ir.fusion.grids import Tuned, grid_search, measure_per_topic, tuned
from hybrid_ir.fusion.methods import fuse, interleave

ETAS: tuple[float, ...] = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)
"""BM25's share eta in the ensemble, on paper 002 Table 2's 0.1 grid, largest first: the first
maximum wins, so TF-IDF gets a share only if that scores strictly better ("the best portion of
the contribution of BM25 is 1.00 ... taking TF-IDF predictions into account will not increase
the performance", §3.1). 0 is left out: Algorithm 1 with eta = 0 never takes a TF-IDF prediction
(``i < 0`` never holds) and returns BM25's list, the same run as eta = 1."""


def _scores(
    method: str, runs: Sequence[Run], parameter: str, values: Sequence[float], params: Mapping,
    qrels: Qrels, measures: Sequence[str],
) -> list[dict[str, float]]:  # fmt: skip
    return [
        evaluate(qrels, fuse(method, runs, **{**params, parameter: value}), measures).aggregate
        for value in values
    ]


def sweep(
    method: str,
    runs: Sequence[Run],
    parameter: str,
    values: Sequence[float],
    qrels: Qrels,
    measures: Sequence[str],
    select: str,
    params: Mapping[str, Any] | None = None,
    select_on: tuple[Sequence[Run], Qrels] | None = None,
    by_language: tuple[Mapping[str, str], Mapping[str, str]] | None = None,
) -> tuple[dict, Run]:
    """Evaluate the fusion at every value; return a report and the run at the selected value.

    The selected value maximizes ``select`` (first maximum in ``values`` order) on
    ``select_on``'s runs and qrels when given, else on ``runs`` and ``qrels``. With
    ``by_language`` (topic -> language of the evaluated topics and of the selection topics),
    a value is selected per language on its selection topics and applied to its evaluated
    topics: the report's ``best`` maps each language to its value.
    """
    params = dict(params or {})
    if parameter in params:
        raise ConfigError(f"sweep parameter {parameter!r} is also fixed in params")
    if select_on is None and select not in [column.name for column in resolve_measures(measures)]:
        raise ConfigError(f"sweep selects on {select!r}, which is not among its measures")
    scores = _scores(method, runs, parameter, values, params, qrels, measures)
    report: dict[str, Any] = {
        "method": method,
        "parameter": parameter,
        "values": list(values),
        "scores": scores,
        "select": select,
        "selected_on": "development split" if select_on is not None else "evaluated topics",
    }
    if by_language is not None:
        choices, run = _by_language(
            method, runs, parameter, values, params, select, select_on or (runs, qrels),
            by_language,
        )  # fmt: skip
        best_of = {language: choice["best"] for language, choice in choices.items()}
        return report | {"by_language": choices, "best": best_of}, run
    if select_on is None:
        selection = [score[select] for score in scores]
    else:
        development = _scores(
            method, select_on[0], parameter, values, params, select_on[1], [select]
        )
        selection = [score[select] for score in development]
    best = max(range(len(values)), key=selection.__getitem__)
    report |= {"selection_scores": selection, "best": values[best]}
    return report, fuse(method, runs, **{**params, parameter: values[best]})


def _by_language(
    method: str, runs: Sequence[Run], parameter: str, values: Sequence[float], params: Mapping,
    select: str, select_on: tuple[Sequence[Run], Qrels],
    languages: tuple[Mapping[str, str], Mapping[str, str]],
) -> tuple[dict[str, dict], Run]:  # fmt: skip
    """Each language's selected value (with its selection scores) and the run made of each
    language's topics fused at its value."""
    evaluated, selection = languages
    choices: dict[str, dict] = {}
    fused: Run = {}
    for language in sorted(set(evaluated.values())):
        qrels = {t: j for t, j in select_on[1].items() if selection.get(t) == language}
        if not qrels:
            raise ConfigError(
                f"no judged selection topic in language {language!r} to choose {parameter} on"
            )
        scored = _scores(method, select_on[0], parameter, values, params, qrels, [select])
        selection_scores = [score[select] for score in scored]
        best = values[max(range(len(values)), key=selection_scores.__getitem__)]
        choices[language] = {
            "best": best,
            "selection_scores": selection_scores,
            "topics": len(qrels),
        }
        run = fuse(method, runs, **{**params, parameter: best})
        fused |= {topic: docs for topic, docs in run.items() if evaluated.get(topic) == language}
    return choices, fused


def tune_interleave(
    first: Run,
    second: Run,
    qrels: Qrels,
    measure: str,
    etas: Sequence[float] = ETAS,
    k: int = 10,
) -> Tuned[float]:
    """Paper 002's second tuning stage: BM25's share eta in Algorithm 1, by grid search.

    ``first`` is BM25's run and ``second`` TF-IDF's (:func:`hybrid_ir.fusion.methods.interleave`);
    ``k`` is the ensemble's number of predictions, 10 for the paper's Recall@10. Tune on a
    development split's qrels and apply ``best`` to the test runs.
    """
    return tuned(
        grid_search(
            lambda eta: measure_per_topic(qrels, interleave(first, second, eta, k), measure), etas
        )
    )
