"""The reproducibility measures of Breuer et al. (SIGIR 2020, the ``repro_eval`` package) this
workflow reports: on means, the Effect Ratio and ΔRI of a claim against the paper's numbers;
topic by topic, how far a reproduction's rankings are from the original's (the RMSE of the
scores, Kendall's tau over the union of two top-k lists, rank-biased overlap after Webber,
Moffat and Zobel 2010)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

RBO_PERSISTENCE = 0.9
"""RBO's p by default: the top 10 carry about 86 % of the weight (Webber et al. 2010)."""


def rmse(original: Mapping[str, float], reproduced: Mapping[str, float]) -> float | None:
    """Root mean square of the per-topic differences over the topics both have (Breuer et
    al. 2020's per-topic RMSE); None without a shared topic."""
    # Sorted: a set's order follows the process's string hashing, and so would the last bit
    # of the sum.
    topics = sorted(original.keys() & reproduced.keys())
    if not topics:
        return None
    return math.sqrt(sum((original[t] - reproduced[t]) ** 2 for t in topics) / len(topics))


def kendall_tau_union(original: Sequence[str], reproduced: Sequence[str]) -> float | None:
    """Kendall's tau-b between two rankings over the union of their documents, each ranking
    placing the documents it lacks after its own, tied (repro_eval's KTU compares the union
    too); None when a ranking orders nothing (fewer than two documents, or all tied)."""
    from scipy.stats import kendalltau

    union = sorted(set(original) | set(reproduced))
    if len(union) < 2:
        return None
    positions = []
    for ranking in (original, reproduced):
        rank = {doc: index for index, doc in enumerate(ranking)}
        positions.append([rank.get(doc, len(ranking)) for doc in union])
    tau = kendalltau(*positions).statistic
    return None if math.isnan(tau) else float(tau)


def rank_biased_overlap(
    original: Sequence[str], reproduced: Sequence[str], persistence: float = RBO_PERSISTENCE
) -> float:
    """Extrapolated RBO of two rankings cut at the same depth k (Webber, Moffat and Zobel
    2010, Eq. 32): ``X_k/k * p^k + (1-p)/p * sum_{d<=k} X_d/d * p^d`` with ``X_d`` the
    overlap of the two top-d lists; 1 for identical lists, 0 for disjoint ones."""
    depth = max(len(original), len(reproduced))
    if depth == 0:
        return 1.0
    seen_original: set[str] = set()
    seen_reproduced: set[str] = set()
    overlap, total = 0, 0.0
    for d in range(1, depth + 1):
        left = original[d - 1] if d <= len(original) else None
        right = reproduced[d - 1] if d <= len(reproduced) else None
        if left is not None and left == right:
            overlap += 1
        else:
            overlap += (left in seen_reproduced) + (right in seen_original)
        if left is not None:
            seen_original.add(left)
        if right is not None:
            seen_reproduced.add(right)
        total += overlap / d * persistence**d
    return overlap / depth * persistence**depth + (1 - persistence) / persistence * total


def effect_ratio(effect: float, paper_effect: float) -> float | None:
    """This effect over the paper's (Breuer et al. 2020's ER on means); None when the paper
    shows no difference."""
    return effect / paper_effect if paper_effect else None


def delta_ri(system: float, baseline: float, paper_system: float, paper_baseline: float):
    """This relative improvement minus the paper's (Breuer et al. 2020's ΔRI); None when a
    baseline is 0."""
    if not baseline or not paper_baseline:
        return None
    return (system - baseline) / baseline - (paper_system - paper_baseline) / paper_baseline
