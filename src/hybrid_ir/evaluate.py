"""Evaluation of TREC runs with ir_measures (pytrec_eval backend), trec_eval ``-c`` semantics.

With ``-c``, trec_eval averages over every query of the qrels, counting a query that the run
does not answer as 0; ir_measures alone averages over the queries both files share. Aggregates
here are therefore computed from per-query values over the qrels' queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import ir_measures

from hybrid_ir.errors import ConfigError
from hybrid_ir.formats import read_qrels, read_run


def parse_measures(names: Sequence[str]) -> list:
    measures = []
    for name in names:
        try:
            measures.append(ir_measures.parse_measure(name))
        except (ValueError, NameError, SyntaxError) as error:
            raise ConfigError(f"unknown measure {name!r}: {error}") from None
    return measures


def load_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for judgment in read_qrels(path):
        qrels.setdefault(judgment.query_id, {})[judgment.doc_id] = judgment.relevance
    return qrels


def load_run(path: str | Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for entry in read_run(path):
        run.setdefault(entry.query_id, {})[entry.doc_id] = entry.score
    return run


def per_query_scores(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], measure_names: Sequence[str]
) -> dict[str, dict[str, float]]:
    """``{measure name: {query id: value}}`` for every query of the qrels (0 when unanswered)."""
    measures = parse_measures(measure_names)
    by_name = {str(measure): name for measure, name in zip(measures, measure_names, strict=True)}
    scores = {name: dict.fromkeys(qrels, 0.0) for name in measure_names}
    answered = {query_id: docs for query_id, docs in run.items() if query_id in qrels}
    for metric in ir_measures.iter_calc(measures, qrels, answered):
        scores[by_name[str(metric.measure)]][metric.query_id] = float(metric.value)
    return scores


def aggregate(per_query: dict[str, dict[str, float]]) -> dict[str, float]:
    return {
        name: (sum(values.values()) / len(values) if values else 0.0)
        for name, values in per_query.items()
    }


def evaluate_files(
    qrels_path: str | Path, run_path: str | Path, measure_names: Sequence[str]
) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """Aggregate and per-query scores of one run against one qrels file."""
    per_query = per_query_scores(load_qrels(qrels_path), load_run(run_path), measure_names)
    return aggregate(per_query), per_query
