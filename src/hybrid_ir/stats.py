"""Two-tailed paired t-tests on per-topic scores, and the */** markers of paper 000's tables.

Paper 000 (like pya0's ``effectiveness_ttest.py``) compares each row with a reference row by
``scipy.stats.ttest_rel`` on the per-topic scores of the topics both runs have, and marks
p < 0.05 with ``*`` and p < 0.01 with ``**``.

Two inputs leave ``ttest_rel`` without an answer, and a table must still be printed:

* fewer than 2 shared topics: there is no variance to estimate (scipy returns NaN);
* every topic scores the same in both runs: the t statistic is 0/0 (scipy returns NaN).

Both give p = 1.0, "no evidence of a difference", rather than NaN, which compares False with
every threshold by accident and would print as "nan" in a table. Identical runs really do show
no difference; with fewer than 2 topics there is no test, and p = 1.0 keeps the marker empty.
A constant non-zero difference is the opposite limit: zero variance, infinite t, p = 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy.stats import ttest_rel

from hybrid_ir.runs import topic_sort_key


@dataclass(frozen=True)
class TTest:
    """Result of a paired t-test; ``statistic`` > 0 means the run beats the reference."""

    statistic: float
    pvalue: float
    n: int

    @property
    def marker(self) -> str:
        return marker(self.pvalue)


def paired_ttest(scores: Mapping[str, float], reference: Mapping[str, float]) -> TTest:
    """Two-tailed paired t-test of ``scores`` against ``reference`` over their shared topics."""
    topics = sorted(scores.keys() & reference.keys(), key=topic_sort_key)
    if len(topics) < 2:
        return TTest(math.nan, 1.0, len(topics))
    values = np.array([scores[topic] for topic in topics], dtype=float)
    baseline = np.array([reference[topic] for topic in topics], dtype=float)
    differences = values - baseline
    if np.all(differences == differences[0]):
        if differences[0] == 0:
            return TTest(0.0, 1.0, len(topics))
        return TTest(math.copysign(math.inf, differences[0]), 0.0, len(topics))
    result = ttest_rel(values, baseline)
    return TTest(float(result.statistic), float(result.pvalue), len(topics))


def marker(pvalue: float) -> str:
    """``**`` for p < 0.01, ``*`` for p < 0.05, else empty (the boundaries themselves do not
    count, as in pya0's ``ttest_tsv_tab``)."""
    if pvalue < 0.01:
        return "**"
    if pvalue < 0.05:
        return "*"
    return ""
