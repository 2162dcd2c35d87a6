"""The papers' claims, each tested on this workflow's per-topic scores.

A claim compares two rows of one of the workflow's tables in one column (a measure on a topic
set): "fusing Approach0 with ColBERT beats Approach0 alone" is row *system* against row
*baseline*, claimed ``greater`` (or ``less``). Its verdict comes from the paired per-topic
scores the table wrote (``<table>.per_query.tsv``):

- *supported*: the mean difference lies in the claimed direction and the paired test, after
  the correction across the paper's tested claims, rejects "no difference" at ``alpha``;
- *contradicted*: the same, in the opposite direction;
- *inconclusive*: no significant difference. The minimum detectable effect (MDE) says whether
  the topic set could have shown one: the smallest mean difference a two-tailed paired t-test
  at ``alpha`` detects with 80 % power given the per-topic differences' standard deviation,
  ``(t(1 - alpha/2, n-1) + t(0.8, n-1)) * sd / sqrt(n)`` (the usual approximation to the
  noncentral t). Where the paper's effect is at least the MDE the data could have shown it.

Beside the verdict are the reproducibility measures of Breuer et al. (SIGIR 2020, the
``repro_eval`` package) that need only the means: the Effect Ratio, this effect over the
paper's (1 = the whole improvement reproduced, 0 = none, negative = reversed), and ΔRI, this
relative improvement ``(system - baseline) / baseline`` minus the paper's (0 = the same
relative improvement). The paper's effect comes from the published values the table carries
(the rows' ``paper`` column, or published-only rows named in ``paper_rows``), or from the
claim's own ``published`` numbers.

A claim over fewer than :data:`MIN_TOPICS` paired topics is inconclusive with that reason,
not computed; a claim whose table the configuration does not build says which configuration
does (``configuration``) instead of a verdict.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_ir.claims_file import Claim, PaperClaims, Reproduction, load_claims
from hybrid_ir.claims_report import render_markdown
from hybrid_ir.formats import atomic_output
from hybrid_ir.reproducibility import (
    delta_ri,
    effect_ratio,
    kendall_tau_union,
    rank_biased_overlap,
    rmse,
)
from hybrid_ir.runs import read_run, topic_sort_key
from hybrid_ir.stats import holm, paired_ttest, randomization_test

MIN_TOPICS = 5
"""Fewer paired topics than this leave a claim inconclusive without a test."""
POWER = 0.8
CONFIDENCE = 0.95

SUPPORTED, CONTRADICTED, INCONCLUSIVE, NOT_HERE = (
    "supported",
    "contradicted",
    "inconclusive",
    "not tested here",
)


# -- the verdict -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """A claim's outcome here. ``effect`` is the mean per-topic difference system - baseline
    (its sign says which side won), with its confidence interval; ``p`` is the test's, and
    ``p_adjusted`` after the correction across the paper's tested claims."""

    id: str
    claim: str
    where: str
    table: str
    column: str
    system: str
    baseline: str
    direction: str
    verdict: str
    reason: str
    topics: int = 0
    system_mean: float | None = None
    baseline_mean: float | None = None
    effect: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    p: float | None = None
    p_adjusted: float | None = None
    alpha: float = 0.05
    test: str = "t-test"
    detectable_effect: float | None = None
    paper_system: float | None = None
    paper_baseline: float | None = None
    paper_effect: float | None = None
    effect_ratio: float | None = None
    delta_ri: float | None = None
    configuration: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class PairedEffect:
    """Mean difference of paired scores, its confidence interval, its test and the minimum
    detectable effect of the topic set."""

    topics: int
    system_mean: float
    baseline_mean: float
    effect: float
    ci_low: float
    ci_high: float
    p: float
    detectable_effect: float


def paired_effect(
    system: Mapping[str, float],
    baseline: Mapping[str, float],
    alpha: float = 0.05,
    test: str = "t-test",
) -> PairedEffect | None:
    """The paired comparison over the topics both have; None for fewer than
    :data:`MIN_TOPICS` of them."""
    from scipy.stats import t as student

    topics = sorted(system.keys() & baseline.keys(), key=topic_sort_key)
    n = len(topics)
    if n < MIN_TOPICS:
        return None
    a = np.array([system[topic] for topic in topics], dtype=float)
    b = np.array([baseline[topic] for topic in topics], dtype=float)
    differences = a - b
    mean = float(differences.mean())
    error = float(differences.std(ddof=1)) / math.sqrt(n)
    half = float(student.ppf(0.5 + CONFIDENCE / 2, n - 1)) * error
    chosen = {topic: system[topic] for topic in topics}
    reference = {topic: baseline[topic] for topic in topics}
    if test == "randomization":
        p = randomization_test(chosen, reference).pvalue
    else:
        p = paired_ttest(chosen, reference).pvalue
    detectable = (
        float(student.ppf(1 - alpha / 2, n - 1)) + float(student.ppf(POWER, n - 1))
    ) * error
    return PairedEffect(
        n, float(a.mean()), float(b.mean()), mean, mean - half, mean + half, float(p), detectable
    )


def decide(effect: float, p_adjusted: float, alpha: float, direction: str) -> str:
    """supported / contradicted / inconclusive for an effect (system - baseline)."""
    if not p_adjusted < alpha or effect == 0:
        return INCONCLUSIVE
    claimed = 1 if direction == "greater" else -1
    return SUPPORTED if math.copysign(1, effect) == claimed else CONTRADICTED


def holm_adjusted(pvalues: Sequence[float], correction: str) -> list[float]:
    return holm(pvalues) if correction == "holm" else list(pvalues)


def judge(
    claims: PaperClaims,
    per_query: Mapping[str, Mapping[tuple[str, str], Mapping[str, float]]],
    published: Mapping[str, Mapping[tuple[str, str], float]],
) -> list[Verdict]:
    """Every claim's verdict. ``per_query``: table -> (row, column) -> topic -> score;
    ``published``: table -> (row, column) -> the paper's value; a table absent from both is
    not built here."""
    computed: dict[str, PairedEffect | None] = {}
    for claim in claims.claims:
        if claim.table in per_query:
            scores = per_query[claim.table]
            computed[claim.id] = paired_effect(
                scores.get((claim.system, claim.column), {}),
                scores.get((claim.baseline, claim.column), {}),
                claim.alpha,
                claim.test,
            )
    tested = [claim_id for claim_id, effect in computed.items() if effect is not None]
    adjusted = dict(
        zip(
            tested,
            holm_adjusted([computed[c].p for c in tested], claims.correction),  # type: ignore[union-attr]
            strict=True,
        )
    )
    return [
        _verdict(claim, claim.table in per_query, computed.get(claim.id), adjusted.get(claim.id),
                 published, claims.correction)
        for claim in claims.claims
    ]  # fmt: skip


def _paper_values(claim: Claim, published: Mapping[str, Mapping[tuple[str, str], float]]):
    values: dict[str, float | None] = {}
    table = published.get(claim.table, {})
    for side in ("system", "baseline"):
        if side in claim.published:
            values[side] = float(claim.published[side])
        else:
            row = claim.paper_rows.get(side, getattr(claim, side))
            values[side] = table.get((row, claim.column))
    return values["system"], values["baseline"]


def _verdict(claim, built, effect, p_adjusted, published, correction_name) -> Verdict:
    base: dict[str, Any] = {
        key: getattr(claim, key)
        for key in (
            "id", "claim", "where", "table", "column", "system", "baseline", "direction",
            "alpha", "test", "configuration", "note",
        )
    }  # fmt: skip
    paper_system, paper_baseline = _paper_values(claim, published)
    paper_effect = (
        paper_system - paper_baseline
        if paper_system is not None and paper_baseline is not None
        else None
    )
    paper: dict[str, Any] = {
        "paper_system": paper_system,
        "paper_baseline": paper_baseline,
        "paper_effect": paper_effect,
    }
    if not built:
        where = claim.configuration or "a configuration that builds it"
        reason = f"table {claim.table} is not built by this configuration; run {where}"
        return Verdict(**base, **paper, verdict=NOT_HERE, reason=reason)
    if effect is None:
        reason = f"fewer than {MIN_TOPICS} paired topics: no test"
        return Verdict(**base, **paper, verdict=INCONCLUSIVE, reason=reason)
    verdict = decide(effect.effect, p_adjusted, claim.alpha, claim.direction)
    correction = "Holm-corrected " if correction_name == "holm" else ""
    if verdict == INCONCLUSIVE:
        if effect.detectable_effect == 0:
            reason = "the two rows score every topic alike: no difference to test"
        elif paper_effect is None:
            reason = f"{correction}p = {p_adjusted:.3g} >= {claim.alpha:g}"
        elif abs(paper_effect) >= effect.detectable_effect:
            reason = (
                f"{correction}p = {p_adjusted:.3g} >= {claim.alpha:g}, though the paper's "
                f"effect ({paper_effect:+.3f}) is at least the detectable one "
                f"({effect.detectable_effect:.3f}): these topics could have shown it"
            )
        else:
            reason = (
                f"{correction}p = {p_adjusted:.3g} >= {claim.alpha:g}, and the paper's effect "
                f"({paper_effect:+.3f}) is below the detectable one "
                f"({effect.detectable_effect:.3f}): these topics could not have shown it"
            )
    else:
        reason = f"{correction}p = {p_adjusted:.3g} < {claim.alpha:g}"
    measures: dict[str, Any] = {
        "effect_ratio": None if paper_effect is None else effect_ratio(effect.effect, paper_effect),
        "delta_ri": None
        if paper_effect is None
        else delta_ri(effect.system_mean, effect.baseline_mean, paper_system, paper_baseline),
    }
    return Verdict(
        **base,
        **paper,
        **measures,
        **asdict(effect),
        verdict=verdict,
        reason=reason,
        p_adjusted=p_adjusted,
    )


# -- original runs beside their reproductions ------------------------------------------------


def compare_reproduction(
    reproduction: Reproduction,
    scores: Mapping[tuple[str, str], Mapping[str, float]],
    original_run: Mapping[str, Mapping[str, float]],
    reproduced_run: Mapping[str, Mapping[str, float]],
) -> dict:
    """RMSE of the per-topic scores in the reproduction's column, and Kendall's tau and RBO of
    the two runs' top ``depth`` per topic, averaged over the topics both runs answer."""

    original_scores = scores.get((reproduction.original, reproduction.column), {})
    reproduced_scores = scores.get((reproduction.reproduced, reproduction.column), {})
    topics = sorted(original_run.keys() & reproduced_run.keys(), key=topic_sort_key)
    taus, overlaps = [], []
    for topic in topics:
        left = list(original_run[topic])[: reproduction.depth]
        right = list(reproduced_run[topic])[: reproduction.depth]
        tau = kendall_tau_union(left, right)
        if tau is not None:
            taus.append(tau)
        overlaps.append(rank_biased_overlap(left, right, reproduction.persistence))
    return {
        **asdict(reproduction),
        "topics": len(topics),
        "rmse": rmse(original_scores, reproduced_scores),
        "kendall_tau": float(np.mean(taus)) if taus else None,
        "rbo": float(np.mean(overlaps)) if overlaps else None,
        "original_mean": float(np.mean(list(original_scores.values())))
        if original_scores
        else None,
        "reproduced_mean": float(np.mean(list(reproduced_scores.values())))
        if reproduced_scores
        else None,
    }


# -- the tables' files -----------------------------------------------------------------------


def read_table_scores(
    per_query_path: str | Path, csv_path: str | Path
) -> tuple[dict[tuple[str, str], dict[str, float]], dict[tuple[str, str], float]]:
    """A table's per-topic scores, (row, column) -> topic -> score, from its
    ``.per_query.tsv``, and its published values, (row, column) -> value, from its CSV."""
    scores: dict[tuple[str, str], dict[str, float]] = {}
    with open(per_query_path, encoding="utf-8", newline="") as handle:
        for record in csv.DictReader(handle, delimiter="\t"):
            key = (record["run"], record["column"])
            scores.setdefault(key, {})[record["topic"]] = float(record["value"])
    published: dict[tuple[str, str], float] = {}
    with open(csv_path, encoding="utf-8", newline="") as handle:
        for record in csv.DictReader(handle):
            if record["published"]:
                published[(record["run"], record["column"])] = float(record["published"])
    return scores, published


def judge_files(
    claims_path: str | Path,
    tables: Mapping[str, tuple[str | Path, str | Path]],
    runs: Mapping[str, Mapping[str, str | Path]] | None = None,
) -> tuple[list[Verdict], list[dict]]:
    """:func:`judge` on the files of the tables built here (name -> (per_query.tsv, csv)),
    and each reproduction compared from its two run files (id -> original/reproduced -> path)."""

    claims = load_claims(claims_path)
    per_query, published = {}, {}
    for name, (per_query_path, csv_path) in tables.items():
        per_query[name], published[name] = read_table_scores(per_query_path, csv_path)
    compared = []
    for reproduction in claims.reproductions:
        files = (runs or {}).get(reproduction.id)
        if files is None or reproduction.table not in per_query:
            continue
        compared.append(
            compare_reproduction(
                reproduction,
                per_query[reproduction.table],
                read_run(files["original"]),
                read_run(files["reproduced"]),
            )
        )
    return judge(claims, per_query, published), compared


def write_verdicts(
    claims_path: str | Path,
    verdicts: Sequence[Verdict],
    json_path: str | Path,
    md_path: str | Path,
    reproductions: Sequence[Mapping] = (),
) -> None:
    claims = load_claims(claims_path)
    document = {
        "paper": claims.paper,
        "title": claims.title,
        "correction": claims.correction,
        "verdicts": [asdict(verdict) for verdict in verdicts],
        "reproductions": list(reproductions),
    }
    with atomic_output(json_path) as handle:
        json.dump(document, handle, indent=1, allow_nan=False)
        handle.write("\n")
    with atomic_output(md_path) as handle:
        handle.write(render_markdown(document))
