"""Paired significance tests on per-topic scores (t-test, randomization test), Holm–Bonferroni
adjustment, and the */** markers of paper 000's tables.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hybrid_ir.data.runs import topic_sort_key
from hybrid_ir.errors import ParameterError


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
    # Imported here: scipy.stats takes half a second, which hybrid-ir --help need not wait for.
    from scipy.stats import ttest_rel

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


RANDOMIZATION_SEED = 1234
"""Seed of the randomization test's sign flips when none is given, so that a p-value printed
twice is the same number."""
PERMUTATIONS = 10_000
"""Random sign flips drawn by default: a p-value near 0.05 is then known to about +-0.002."""
MAX_PERMUTATIONS = 1_000_000
"""The most random sign flips a test draws: a p-value near 0.05 is then known to about
+-0.0002, and one test over a thousand topics takes seconds; 10^10 took hours."""
# Signs held at once (one per topic per sign vector): bounds memory at any number of
# permutations.
_BATCH_SIGNS = 1 << 20


@dataclass(frozen=True)
class RandomizationTest:
    """Result of a paired randomization test; ``statistic`` is the mean difference (run minus
    reference), ``permutations`` the sign vectors scored (all ``2**n`` when ``exact``)."""

    statistic: float
    pvalue: float
    n: int
    permutations: int
    exact: bool


def randomization_test(
    scores: Mapping[str, float],
    reference: Mapping[str, float],
    permutations: int = PERMUTATIONS,
    seed: int = RANDOMIZATION_SEED,
) -> RandomizationTest:
    """Two-tailed paired randomization (sign-flip permutation) test of the mean difference of
    ``scores`` and ``reference`` over their shared topics.

    Under the null hypothesis each topic's two scores are exchangeable, so each difference is
    as likely with either sign. p is the share of sign vectors whose mean difference is at least
    as far from 0 as the observed one. When ``permutations >= 2**n`` every sign vector is
    enumerated and p is exact; otherwise ``permutations`` random sign vectors are drawn from
    ``seed`` and p = (1 + at least as extreme) / (1 + permutations), which counts the observed
    assignment and so is never 0 (Phipson and Smyth 2010). Fewer than 2 shared topics give
    p = 1.0, as :func:`paired_ttest`.
    """
    if not 1 <= permutations <= MAX_PERMUTATIONS:
        raise ParameterError(
            f"permutations must be from 1 to {MAX_PERMUTATIONS:,}, got {permutations}"
        )
    topics = sorted(scores.keys() & reference.keys(), key=topic_sort_key)
    n = len(topics)
    if n < 2:
        return RandomizationTest(math.nan, 1.0, n, 0, True)
    differences = np.array([scores[t] - reference[t] for t in topics], dtype=float)
    observed = float(differences.mean())
    # Sign vectors whose mean equals the observed one in exact arithmetic can differ from it by
    # rounding (scores such as P@10 make such ties common); they count as at least as extreme.
    threshold = abs(observed) - 1e-12 * float(np.abs(differences).mean())
    exact = permutations >= 2**n
    total = 2**n if exact else permutations
    rng = np.random.default_rng(seed)
    batch = max(1, _BATCH_SIGNS // n)
    extreme = 0
    for start in range(0, total, batch):
        rows = min(batch, total - start)
        if exact:
            codes = np.arange(start, start + rows, dtype=np.int64)[:, None]
            signs = ((codes >> np.arange(n)) & 1) * 2 - 1
        else:
            signs = rng.integers(0, 2, size=(rows, n)) * 2 - 1
        extreme += int(np.count_nonzero(np.abs(signs @ differences) / n >= threshold))
    pvalue = extreme / total if exact else (extreme + 1) / (total + 1)
    return RandomizationTest(observed, pvalue, n, total, exact)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the order given: the i-th smallest p times the
    number of hypotheses not yet rejected (m - i + 1), never below the adjusted p before it,
    at most 1. Rejecting where the adjusted p < alpha controls the family-wise error rate."""
    adjusted = [0.0] * len(pvalues)
    running = 0.0
    for rank, index in enumerate(sorted(range(len(pvalues)), key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[index]))
        adjusted[index] = running
    return adjusted
