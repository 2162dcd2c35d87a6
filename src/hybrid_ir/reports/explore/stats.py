"""The numbers the explorer page states about two systems on one measure: the mean per-topic
difference with its 95 % interval, the paired t-test's p (the tables' test,
:func:`hybrid_ir.evaluation.significance.paired_ttest`, so that the page and the table agree), and
the topics each side wins; and the t quantiles the page's script uses for the interval of a subset
of the topics (one label value).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from hybrid_ir.data.runs import topic_sort_key
from hybrid_ir.evaluation.significance import paired_ttest

CONFIDENCE = 0.95
TIE = 1e-12
"""Per-topic differences no larger than this (in absolute value) are ties: scores computed two
ways agree to about 1e-15, and no measure here resolves 1e-12."""


@dataclass(frozen=True)
class PairStats:
    """``system - baseline`` over the topics both score: their count, the mean difference and
    its interval (None for fewer than 2 topics, or differences that do not vary), the two-tailed
    paired t-test's p, and the topics won, lost and tied by the system."""

    n: int
    mean: float | None
    low: float | None
    high: float | None
    p: float
    wins: int
    losses: int
    ties: int

    def row(self) -> list[float | int | None]:
        """The compact form the page carries."""
        return [self.n, self.mean, self.low, self.high, self.p, self.wins, self.losses, self.ties]


def pair_stats(system: Mapping[str, float], baseline: Mapping[str, float]) -> PairStats:
    """The paired comparison of ``system`` with ``baseline`` (topic -> score)."""
    topics = sorted(system.keys() & baseline.keys(), key=topic_sort_key)
    differences = [system[topic] - baseline[topic] for topic in topics]
    wins = sum(d > TIE for d in differences)
    losses = sum(d < -TIE for d in differences)
    ties = len(differences) - wins - losses
    p = paired_ttest(system, baseline).pvalue
    if not differences:
        return PairStats(0, None, None, None, p, 0, 0, 0)
    n = len(differences)
    mean = sum(differences) / n
    if n < 2 or len(set(differences)) == 1:
        return PairStats(n, mean, None, None, p, wins, losses, ties)
    half = t_quantile(n - 1) * _standard_error(differences, mean)
    return PairStats(n, mean, mean - half, mean + half, p, wins, losses, ties)


def _standard_error(differences: list[float], mean: float) -> float:
    n = len(differences)
    variance = sum((d - mean) ** 2 for d in differences) / (n - 1)
    return math.sqrt(variance / n)


def t_quantile(degrees: int) -> float:
    """The two-sided :data:`CONFIDENCE` quantile of Student's t with ``degrees`` of freedom."""
    from scipy.stats import t as student

    return float(student.ppf(0.5 + CONFIDENCE / 2, degrees))


def t_quantiles(topics: int) -> list[float]:
    """:func:`t_quantile` for 1 .. ``topics - 1`` degrees of freedom (index 0: 1 degree), to 6
    significant digits: what the page's script needs for any subset of ``topics`` topics."""
    return [float(f"{t_quantile(degrees):.6g}") for degrees in range(1, max(topics, 2))]
