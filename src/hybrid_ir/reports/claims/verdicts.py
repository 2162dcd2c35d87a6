"""The papers' claims, each tested on this workflow's per-topic scores as the kind of statement
the paper makes.

A claim compares two rows of one of the workflow's tables in one column (a measure on a topic
set), *system* against *baseline*, from the paired per-topic scores the table wrote
(``<table>.per_query.tsv``). Its ``kind`` says what it asserts and so which test decides it;
``s`` is the mean per-topic difference system - baseline, signed so that positive favours the
system (``direction: less`` flips it), and ``M`` the claim's margin:

- *superiority* ("A beats B"): the paper's own two-tailed paired test (t-test or
  randomization); supported when it rejects "no difference" in the claimed direction,
  contradicted when it rejects it in the other;
- *non-inferiority* ("A is at least as effective as B"): one-sided t-test of H0 s <= -M against
  s > -M; supported ("non-inferior within M") when it rejects, contradicted ("inferior by more
  than M") when the opposite one-sided test rejects s >= -M;
- *equivalence* ("A and B are comparable"): two one-sided tests (TOST), p the larger of
  s > -M and s < M; contradicted ("differs by more than M") when one of s < -M, s > M is
  shown, at twice the smaller one-sided p (a Bonferroni bound over the two sides);
- *non-superiority* ("A does not help"): one-sided t-test of H0 s >= M against s < M;
  supported ("no gain above M"), contradicted ("gains more than M") when s > M is shown.

Each claim has one deciding p (the one of the side its data lean to), and Holm's correction
runs across the paper's tested claims; a claim whose adjusted p is not below ``alpha`` is
*inconclusive*. Its minimum detectable effect (MDE) says whether the topic set could have shown
a difference: the smallest mean difference a two-tailed paired t-test at ``alpha`` detects with
80 % power given the per-topic differences' standard deviation,
``(t(1 - alpha/2, n-1) + t(0.8, n-1)) * sd / sqrt(n)``. Two rows whose per-topic differences
do not vary (identical scores, or one constant shift) leave every test undefined: such a claim
is *untestable* and says what the rows did instead.

Beside the verdict are the reproducibility measures of Breuer et al. (SIGIR 2020, the
``repro_eval`` package) that need only the means: the Effect Ratio, this effect over the
paper's (1 = the whole improvement reproduced, 0 = none, negative = reversed), and ΔRI, this
relative improvement ``(system - baseline) / baseline`` minus the paper's (0 = the same
relative improvement). The paper's effect comes from the published values the table carries
(the rows' ``paper`` column, or published-only rows named in ``paper_rows``), or from the
claim's own ``published`` numbers.

Every verdict carries its setup (:mod:`hybrid_ir.config.claim_setups`): what this configuration ran
for the two rows beside what the paper ran, and the comparability label; a verdict on a
stand-in or another collection says so in its own words ("supported on this stand-in").

A claim over fewer than :data:`MIN_TOPICS` paired topics is inconclusive with that reason,
not computed; a claim whose table the configuration does not build is *not tested here* and
names the command that tests it.
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

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.data.runs import read_run, topic_sort_key
from hybrid_ir.evaluation.reproducibility import (
    delta_ri,
    effect_ratio,
    kendall_tau_union,
    rank_biased_overlap,
    rmse,
)
from hybrid_ir.evaluation.significance import holm, paired_ttest, randomization_test
from hybrid_ir.reports.claims.file import (
    LABELS,
    MARGIN_KINDS,
    Claim,
    PaperClaims,
    Reproduction,
    load_claims,
)
from hybrid_ir.reports.claims.render import render_markdown

MIN_TOPICS = 5
"""Fewer paired topics than this leave a claim inconclusive without a test."""
POWER = 0.8
CONFIDENCE = 0.95

SUPPORTED, CONTRADICTED, INCONCLUSIVE, UNTESTABLE, NOT_HERE = (
    "supported",
    "contradicted",
    "inconclusive",
    "untestable",
    "not tested here",
)
VERDICTS = (SUPPORTED, CONTRADICTED, INCONCLUSIVE, UNTESTABLE, NOT_HERE)

_FINDINGS = {
    "superiority": ("supported", "contradicted"),
    "non-inferiority": ("non-inferior within {margin}", "inferior by more than {margin}"),
    "equivalence": ("equivalent within ±{margin}", "differs by more than {margin}"),
    "non-superiority": ("no gain above {margin}", "gains more than {margin}"),
}
"""A verdict in the words of its kind: (supported, contradicted)."""

_ON = {LABELS[1]: " on this stand-in", LABELS[2]: " on a different collection"}


# -- the verdict -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """A claim's outcome here. ``effect`` is the mean per-topic difference system - baseline
    (its sign says which side won), with its 95 % confidence interval; ``p`` is the deciding
    test's, and ``p_adjusted`` after the correction across the paper's tested claims;
    ``finding`` is the verdict in the words of the claim's kind and setup."""

    id: str
    claim: str
    where: str
    table: str
    column: str
    system: str
    baseline: str
    kind: str
    direction: str
    margin: float | None
    paper_test: str | None
    verdict: str
    finding: str
    reason: str
    comparability: str | None = None
    setup: Mapping[str, Any] | None = None
    quote: str | None = None
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
    """Mean difference of paired scores, its confidence interval and the minimum detectable
    effect of the topic set; ``differences`` system - baseline per shared topic."""

    topics: int
    system_mean: float
    baseline_mean: float
    effect: float
    ci_low: float | None
    ci_high: float | None
    detectable_effect: float | None
    differences: tuple[float, ...]

    @property
    def varies(self) -> bool:
        return len(set(self.differences)) > 1


def paired_effect(
    system: Mapping[str, float], baseline: Mapping[str, float], alpha: float = 0.05
) -> PairedEffect | None:
    """The paired comparison over the topics both have; None for fewer than
    :data:`MIN_TOPICS` of them. Differences that do not vary have no interval and no
    detectable effect (both undefined)."""
    from scipy.stats import t as student

    topics = sorted(system.keys() & baseline.keys(), key=topic_sort_key)
    n = len(topics)
    if n < MIN_TOPICS:
        return None
    a = np.array([system[topic] for topic in topics], dtype=float)
    b = np.array([baseline[topic] for topic in topics], dtype=float)
    differences = a - b
    mean = float(differences.mean())
    if len(set(differences.tolist())) == 1:
        return PairedEffect(n, float(a.mean()), float(b.mean()), mean, None, None, None,
                            tuple(differences.tolist()))  # fmt: skip
    error = float(differences.std(ddof=1)) / math.sqrt(n)
    half = float(student.ppf(0.5 + CONFIDENCE / 2, n - 1)) * error
    detectable = (
        float(student.ppf(1 - alpha / 2, n - 1)) + float(student.ppf(POWER, n - 1))
    ) * error
    return PairedEffect(
        n, float(a.mean()), float(b.mean()), mean, mean - half, mean + half, detectable,
        tuple(differences.tolist()),
    )  # fmt: skip


def one_sided_p(differences: Sequence[float], bound: float, alternative: str) -> float:
    """p of the one-sample t-test of H1: mean difference > ``bound`` (``greater``) or
    < ``bound`` (``less``)."""
    from scipy.stats import ttest_1samp

    return float(ttest_1samp(np.asarray(differences), bound, alternative=alternative).pvalue)


def margin_tests(
    kind: str, differences: Sequence[float], margin: float, sign: int = 1
) -> tuple[float, float]:
    """(p for the claim, p against it) of a margin kind; ``sign`` -1 when lower scores favour
    the system (the differences are flipped so that positive favours it)."""
    s = [sign * d for d in differences]
    if kind == "non-inferiority":
        return one_sided_p(s, -margin, "greater"), one_sided_p(s, -margin, "less")
    if kind == "non-superiority":
        return one_sided_p(s, margin, "less"), one_sided_p(s, margin, "greater")
    if kind == "equivalence":
        support = max(one_sided_p(s, -margin, "greater"), one_sided_p(s, margin, "less"))
        against = min(1.0, 2 * min(one_sided_p(s, -margin, "less"),
                                   one_sided_p(s, margin, "greater")))  # fmt: skip
        return support, against
    raise ValueError(f"not a margin kind: {kind}")


def deciding_test(claim: Claim, effect: PairedEffect, system, baseline) -> tuple[float, str]:
    """The claim's deciding p and the verdict it gives when significant."""
    sign = -1 if claim.direction == "less" else 1
    if claim.kind in MARGIN_KINDS:
        assert claim.margin is not None  # the schema requires it of these kinds
        support, against = margin_tests(claim.kind, effect.differences, claim.margin, sign)
        return (support, SUPPORTED) if support <= against else (against, CONTRADICTED)
    if claim.test == "randomization":
        p = randomization_test(system, baseline).pvalue
    else:
        p = paired_ttest(system, baseline).pvalue
    return float(p), SUPPORTED if sign * effect.effect > 0 else CONTRADICTED


def holm_adjusted(pvalues: Sequence[float], correction: str) -> list[float]:
    return holm(pvalues) if correction == "holm" else list(pvalues)


def judge(
    claims: PaperClaims,
    per_query: Mapping[str, Mapping[tuple[str, str], Mapping[str, float]]],
    published: Mapping[str, Mapping[tuple[str, str], float]],
    setups: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Verdict]:
    """Every claim's verdict. ``per_query``: table -> (row, column) -> topic -> score;
    ``published``: table -> (row, column) -> the paper's value; a table absent from both is
    not built here; ``setups``: claim id -> its setup
    (:class:`hybrid_ir.config.claim_setups.ClaimSetup` as a mapping, with the corpus's share of the
    relevant documents)."""
    computed: dict[str, PairedEffect | None] = {}
    decided: dict[str, tuple[float, str]] = {}
    for claim in claims.claims:
        if claim.table not in per_query:
            continue
        scores = per_query[claim.table]
        system = scores.get((claim.system, claim.column), {})
        baseline = scores.get((claim.baseline, claim.column), {})
        effect = paired_effect(system, baseline, claim.alpha)
        computed[claim.id] = effect
        if effect is not None and effect.varies:
            decided[claim.id] = deciding_test(claim, effect, system, baseline)
    tested = list(decided)
    adjusted = dict(
        zip(
            tested,
            holm_adjusted([decided[c][0] for c in tested], claims.correction),
            strict=True,
        )
    )
    return [
        _verdict(claim, claim.table in per_query, computed.get(claim.id), decided.get(claim.id),
                 adjusted.get(claim.id), published, claims.correction, (setups or {}).get(claim.id))
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


def _finding(claim: Claim, verdict: str, label: str | None) -> str:
    """The verdict in the words of the claim's kind, and where it was reached."""
    if verdict in (SUPPORTED, CONTRADICTED):
        words = _FINDINGS[claim.kind][verdict == CONTRADICTED]
        if claim.margin is not None:
            words = words.format(margin=f"{claim.margin:g} {claim.column}")
    else:
        words = verdict
    if verdict == NOT_HERE:
        return words
    if label is None:
        return f"{words} (setup not described)"
    return words + _ON.get(label, "")


def _untestable_reason(claim: Claim, effect: PairedEffect) -> str:
    shift = effect.differences[0]
    if shift == 0:
        what = f"the two rows score each of the {effect.topics} topics alike"
    else:
        what = f"the system differs from the baseline by exactly {shift:+.4f} on every topic"
    return (
        f"{what}: no variation, so no test and no interval are defined (the difference is a "
        f"fact of these rows, not an estimate)"
    )


def _inconclusive_reason(claim, effect, p_adjusted, paper_effect, correction, label) -> str:
    head = f"{correction}p = {p_adjusted:.3g} >= {claim.alpha:g}"
    if paper_effect is None or effect.detectable_effect is None:
        return head
    where = (
        "this configuration"
        if label in (None, LABELS[0])
        else ("this stand-in" if label == LABELS[1] else "this collection")
    )
    if abs(paper_effect) >= effect.detectable_effect:
        return (
            f"{head}; an effect the size of the paper's ({paper_effect:+.3f}) is above what "
            f"these {effect.topics} topics detect with 80 % power "
            f"({effect.detectable_effect:.3f}), so {where} shows no effect that large "
            f"(which bears on {where} only)"
        )
    return (
        f"{head}; an effect the size of the paper's ({paper_effect:+.3f}) is below what these "
        f"{effect.topics} topics detect with 80 % power ({effect.detectable_effect:.3f}): they "
        "could not have shown it either way"
    )


def _verdict(claim, built, effect, decided, p_adjusted, published, correction_name, setup):
    base: dict[str, Any] = {
        key: getattr(claim, key)
        for key in (
            "id", "claim", "where", "table", "column", "system", "baseline", "kind",
            "direction", "margin", "paper_test", "quote", "alpha", "test", "configuration",
            "note",
        )
    }  # fmt: skip
    label = None if setup is None else setup["label"]
    base |= {"comparability": label, "setup": setup}
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

    def verdict_of(verdict: str, reason: str, **rest: Any) -> Verdict:
        return Verdict(
            **base, **paper, **rest, verdict=verdict, reason=reason,
            finding=_finding(claim, verdict, label),
        )  # fmt: skip

    if not built:
        where = claim.configuration or "a configuration that builds it"
        reason = (
            f"this configuration does not build table {claim.table}; "
            f"`snakemake --cores N {where}` tests it"
        )
        return verdict_of(NOT_HERE, reason)
    if effect is None:
        return verdict_of(INCONCLUSIVE, f"fewer than {MIN_TOPICS} paired topics: no test")
    measures: dict[str, Any] = {
        "effect_ratio": None if paper_effect is None else effect_ratio(effect.effect, paper_effect),
        "delta_ri": None
        if paper_effect is None
        else delta_ri(effect.system_mean, effect.baseline_mean, paper_system, paper_baseline),
    }
    numbers = {key: value for key, value in asdict(effect).items() if key != "differences"}
    if not effect.varies:
        return verdict_of(UNTESTABLE, _untestable_reason(claim, effect), **numbers, **measures)
    p, side = decided
    correction = "Holm-corrected " if correction_name == "holm" else ""
    if not p_adjusted < claim.alpha:
        verdict = INCONCLUSIVE
        reason = _inconclusive_reason(claim, effect, p_adjusted, paper_effect, correction, label)
    else:
        verdict = side
        reason = f"{correction}p = {p_adjusted:.3g} < {claim.alpha:g}"
    if claim.kind in MARGIN_KINDS:
        reason += "; " + _margin_interval(claim, effect)
    return verdict_of(verdict, reason, **numbers, **measures, p=p, p_adjusted=p_adjusted)


def _margin_interval(claim: Claim, effect: PairedEffect) -> str:
    """Where the (1 - 2 alpha) interval of the difference lies against the margin: the
    interval form of the one-sided tests."""
    from scipy.stats import t as student

    n = effect.topics
    error = float(np.std(effect.differences, ddof=1)) / math.sqrt(n)
    half = float(student.ppf(1 - claim.alpha, n - 1)) * error
    level = f"{1 - 2 * claim.alpha:.0%}"
    low, high = effect.effect - half, effect.effect + half
    return (
        f"the {level} interval of the difference is [{low:+.3f}, {high:+.3f}] against a margin "
        f"of {claim.margin:g}"
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
    setups: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[list[Verdict], list[dict]]:
    """:func:`judge` on the files of the tables built here (name -> (per_query.tsv, csv)),
    and each reproduction compared from its two run files (id -> original/reproduced -> path);
    ``setups`` as :func:`judge` takes them."""

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
    return judge(claims, per_query, published, setups), compared


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
