"""Parameter sweeps of a fusion method: every value evaluated, the best one chosen and applied.

Paper 003 reports its hybrid for every lambda in 0, 0.1, ..., 1 and picks the best on the same
queries (an ablation, said so in its table notes); paper 002 tunes the ensemble share eta on a
development split and applies it to the test split. Both are a sweep: with ``select_on`` runs
and qrels the value is chosen there, otherwise on the evaluated topics themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hybrid_ir.errors import ConfigError
from hybrid_ir.evaluate import Qrels, evaluate, resolve_measures
from hybrid_ir.fusion import fuse
from hybrid_ir.runs import Run


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
) -> tuple[dict, Run]:
    """Evaluate the fusion at every value; return a report and the run at the selected value.

    The selected value maximizes ``select`` (first maximum in ``values`` order) on
    ``select_on``'s runs and qrels when given, else on ``runs`` and ``qrels``.
    """
    params = dict(params or {})
    if parameter in params:
        raise ConfigError(f"sweep parameter {parameter!r} is also fixed in params")
    if select_on is None and select not in [column.name for column in resolve_measures(measures)]:
        raise ConfigError(f"sweep selects on {select!r}, which is not among its measures")
    scores = _scores(method, runs, parameter, values, params, qrels, measures)
    if select_on is None:
        selection = [score[select] for score in scores]
    else:
        development = _scores(
            method, select_on[0], parameter, values, params, select_on[1], [select]
        )
        selection = [score[select] for score in development]
    best = max(range(len(values)), key=selection.__getitem__)
    report = {
        "method": method,
        "parameter": parameter,
        "values": list(values),
        "scores": scores,
        "select": select,
        "selected_on": "development split" if select_on is not None else "evaluated topics",
        "selection_scores": selection,
        "best": values[best],
    }
    return report, fuse(method, runs, **{**params, parameter: values[best]})
