"""Paired t-tests: scipy's numbers on shared topics, the */** markers, degenerate inputs."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import ttest_rel

from hybrid_ir.evaluation.significance import TTest, marker, paired_ttest


def _fixture() -> tuple[dict[str, float], dict[str, float]]:
    rng = np.random.default_rng(11)
    run = {f"A.{i}": float(rng.uniform(0, 1)) for i in range(1, 31)}
    reference = {f"A.{i}": float(rng.uniform(0, 1)) for i in range(5, 36)}
    return run, reference


def test_equals_scipy_on_the_shared_topics_in_natural_order():
    run, reference = _fixture()
    shared = [f"A.{i}" for i in range(5, 31)]
    expected = ttest_rel([run[t] for t in shared], [reference[t] for t in shared])
    result = paired_ttest(run, reference)
    assert result == TTest(float(expected.statistic), float(expected.pvalue), 26)


def test_input_order_does_not_matter():
    run, reference = _fixture()
    shuffled = dict(reversed(list(run.items())))
    assert paired_ttest(shuffled, reference) == paired_ttest(run, reference)


def test_statistic_is_positive_when_the_run_beats_the_reference():
    run, reference = _fixture()
    better = {topic: score + 0.5 for topic, score in reference.items()}
    assert paired_ttest(better, run).statistic > 0
    assert paired_ttest(run, better).statistic < 0


@pytest.mark.parametrize(
    ("pvalue", "expected"),
    [(0.0, "**"), (0.009999, "**"), (0.01, "*"), (0.049999, "*"), (0.05, ""), (1.0, "")],
)
def test_marker_boundaries(pvalue, expected):
    assert marker(pvalue) == expected
    assert TTest(1.0, pvalue, 10).marker == expected


@pytest.mark.parametrize(
    ("run", "reference", "expected"),
    [
        ({}, {}, TTest(math.nan, 1.0, 0)),
        ({"a": 0.1, "b": 0.2}, {"c": 0.3}, TTest(math.nan, 1.0, 0)),
        ({"a": 0.1, "b": 0.2}, {"a": 0.9, "c": 0.3}, TTest(math.nan, 1.0, 1)),
        ({"a": 0.1, "b": 0.2, "c": 0.3}, {"a": 0.1, "b": 0.2, "c": 0.3}, TTest(0.0, 1.0, 3)),
        ({"a": 0.5, "b": 0.75}, {"a": 0.25, "b": 0.5}, TTest(math.inf, 0.0, 2)),
        ({"a": 0.25, "b": 0.5}, {"a": 0.5, "b": 0.75}, TTest(-math.inf, 0.0, 2)),
    ],
    ids=["empty", "disjoint", "one-shared", "identical", "constant-gain", "constant-loss"],
)
def test_degenerate_cases_give_a_definite_answer_without_warnings(run, reference, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = paired_ttest(run, reference)
    assert result.n == expected.n
    assert result.pvalue == expected.pvalue
    if math.isnan(expected.statistic):
        assert math.isnan(result.statistic)
    else:
        assert result.statistic == expected.statistic
    assert result.marker == ("**" if expected.pvalue == 0.0 else "")
