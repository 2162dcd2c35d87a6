"""Fusion of runs: pure functions from canonical runs to a new run, each topic cut at ``k``.

Every method returns a :data:`~hybrid_ir.data.runs.Run` in canonical order (score descending, ties
broken by document id descending, as trec_eval reads a run), so equal fused scores always resolve
the same way whatever order the inputs were built in. "Rank" below is a document's 1-based
position in its run's canonical order.

Methods and the paper each reproduces:

- :func:`linear` -- paper 000 §3.4: ``alpha * S_dense + (1 - alpha) * S_base`` after per-topic
  min-max normalization, a document missing from one run scoring 0 there. It gives the same run
  as pya0 0.3.7 ``mergerun.merge_run_file(dense, base, alpha)`` (the two-run interpolation the
  paper's authors call, alpha on run 1); the test suite checks this against pya0 itself.
- :func:`rerank` -- paper 000 §3.4 alternative (1): the baseline's candidates reordered by a
  dense run's scores.
- :func:`combsum`, :func:`borda`, :func:`isr`, :func:`log_isr`, :func:`rrf` -- paper 000 Table 4
  (computed there with the polyfuse tool, github.com/rmit-ir/polyfuse) and paper 001 (RRF, k=60).
- :func:`interleave` -- paper 002 Appendix D, Algorithm 1 (BM25 / TF-IDF share ``eta``).
- :func:`score_hybrid` -- paper 003 Eq. 1 on raw cosine similarities.

Min-max normalization (:func:`minmax`) maps a topic whose scores are all equal (range 0) to 0 for
every document, as pya0's ``normalized_scores`` does, instead of dividing by zero.

pya0 0.3.7 has two interpolation functions that disagree; :func:`linear` follows the old one:

- topics: ``merge_run_file`` (old) fuses only the topics of run 1 (here ``dense``), dropping a
  topic that only run 2 retrieved; ``merge_run_files`` (new, pandas) outer-joins, so such a topic
  survives with ``(1 - alpha) * S_base``. ``linear(..., topics="union")`` gives the new rule.
- range-0 topics: the new function divides 0 by 0 (NaN) but its ``fillna(0)`` after the join turns
  that into 0 for two runs, so both give 0 here; with a single input the new one would emit NaN.
- duplicate (topic, doc) lines: the old one keeps the last line's score (after normalizing over
  all lines), the new one sums them; runs here hold one score per document (the best, see
  :mod:`hybrid_ir.data.runs`), so neither rule applies to canonical runs.
- weights: the old one treats ``alpha < 0`` as an unweighted sum of the normalized scores (that is
  :func:`combsum`); the new one rounds weights to 5 decimals and takes a negative last weight as
  ``1 - sum(others)``. Here ``alpha`` must lie in [0, 1].

Both sort by ``(score, docid)`` descending and cut at ``topk`` per topic, which is this module's
tie and cut rule.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Literal

import numpy as np

from hybrid_ir.data.runs import DEFAULT_K, Run, canonicalize, ranked
from hybrid_ir.errors import ConfigError


def minmax(docs: dict[str, float]) -> dict[str, float]:
    """One topic's scores rescaled to [0, 1]; all 0 when every score is equal (range 0).

    Range 0 maps to 0 rather than 1 because pya0 does so, and a run that cannot tell its
    documents apart should not outweigh the other run in the fusion.
    """
    if not docs:
        return {}
    low, high = min(docs.values()), max(docs.values())
    span = high - low
    if span == 0:
        return dict.fromkeys(docs, 0.0)
    return {doc: (score - low) / span for doc, score in docs.items()}


def _check_unit(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ConfigError(f"fusion parameter {name} must lie in [0, 1], got {value!r}")


def _union_topics(runs: Iterable[Run]) -> list[str]:
    """Topics of all runs, first-seen order (the output order does not matter: writers sort)."""
    return list(dict.fromkeys(topic for run in runs for topic in run))


def linear(
    dense: Run,
    base: Run,
    alpha: float,
    k: int = DEFAULT_K,
    topics: Literal["first", "union"] = "first",
) -> Run:
    """Paper 000 §3.4: ``alpha * minmax(dense) + (1 - alpha) * minmax(base)``, missing = 0.

    ``topics="first"`` fuses only ``dense``'s topics, as pya0's ``merge_run_file`` (whose run 1
    carries ``alpha``); ``"union"`` keeps every topic, as pya0's ``merge_run_files``. The
    arithmetic is pya0's, term for term, so equal fused scores (and hence tie order) match it
    exactly.
    """
    return dict(linear_sweep(dense, base, [alpha], k, topics))[alpha]


def linear_sweep(
    dense: Run,
    base: Run,
    alphas: Sequence[float],
    k: int = DEFAULT_K,
    topics: Literal["first", "union"] = "first",
) -> Iterator[tuple[float, Run]]:
    """:func:`linear` for several weights, normalizing each topic once.

    Cross-validation fuses the same two runs for every alpha of a grid; normalizing and ordering
    the documents once per topic, then scoring with numpy, keeps that sweep cheap. Documents are
    laid out by id descending and ranked with a stable sort on the fused score, which is the
    canonical order (score descending, then id descending); IEEE products and sums are the same
    in numpy as in Python, so the scores equal pya0's to the last bit.
    """
    for alpha in alphas:
        _check_unit("alpha", alpha)
    if topics == "first":
        names: Iterable[str] = dense.keys()
    elif topics == "union":
        names = _union_topics([dense, base])
    else:
        raise ConfigError(f"linear fusion topics must be 'first' or 'union', got {topics!r}")
    layouts = [(topic, *_aligned(dense.get(topic, {}), base.get(topic, {}))) for topic in names]
    for alpha in alphas:
        fused: Run = {}
        for topic, docs, dense_scores, base_scores, in_dense, in_base in layouts:
            scores = np.where(in_dense, alpha * dense_scores, 0.0)
            scores = np.where(
                in_base,
                np.where(in_dense, scores + (1 - alpha) * base_scores, (1 - alpha) * base_scores),
                scores,
            )
            order = np.argsort(-scores, kind="stable")[:k]
            fused[topic] = dict(zip(docs[order].tolist(), scores[order].tolist(), strict=True))
        yield alpha, fused


def _aligned(dense: dict[str, float], base: dict[str, float]):
    """Both runs' normalized scores on one document axis sorted by id descending, with masks."""
    order = sorted(dense.keys() | base.keys(), reverse=True)
    position = {doc: row for row, doc in enumerate(order)}
    columns = []
    for scores in (minmax(dense), minmax(base)):
        rows = np.fromiter(map(position.__getitem__, scores), dtype=np.intp, count=len(scores))
        values, present = np.zeros(len(order)), np.zeros(len(order), dtype=bool)
        values[rows] = np.fromiter(scores.values(), dtype=float, count=len(scores))
        present[rows] = True
        columns += [values, present]
    return np.array(order, dtype=object), columns[0], columns[2], columns[1], columns[3]


def rerank(base: Run, scorer: Run, k: int = DEFAULT_K) -> Run:
    """Paper 000 §3.4 (1): ``base``'s candidates reordered by ``scorer``'s scores.

    Only ``base``'s topics and documents are kept: reranking never adds candidates. A candidate
    ``scorer`` did not score keeps its relative order from ``base`` below every scored one: with
    ``low`` the lowest scorer score among the topic's candidates (0 when none is scored), the
    j-th unscored candidate in ``base``'s canonical order gets ``low - j``. So a failed or
    truncated dense pass degrades to the baseline's order instead of scattering those documents.
    """
    fused: Run = {}
    for topic, docs in base.items():
        scores = scorer.get(topic, {})
        reranked = {doc: scores[doc] for doc in docs if doc in scores}
        low = min(reranked.values(), default=0.0)
        unscored = (doc for doc, _ in ranked(docs) if doc not in scores)
        for depth, doc in enumerate(unscored, start=1):
            reranked[doc] = low - depth
        fused[topic] = reranked
    return canonicalize(fused, k)


def _weights(runs: Sequence[Run], weights: Sequence[float] | None) -> Sequence[float]:
    if weights is None:
        return [1.0] * len(runs)
    if len(weights) != len(runs):
        raise ConfigError(f"fusion got {len(weights)} weight(s) for {len(runs)} run(s)")
    return weights


def _accumulate(
    runs: Sequence[Run],
    weights: Sequence[float] | None,
    values: Callable[[dict[str, float]], dict[str, float]],
) -> tuple[Run, dict[str, dict[str, int]]]:
    """Per topic (union over runs) and document: the weighted sum of ``values`` over the runs
    that retrieved it, and how many runs did (``M(d)`` for ISR and log-ISR)."""
    totals: Run = {}
    counts: dict[str, dict[str, int]] = {}
    for run, weight in zip(runs, _weights(runs, weights), strict=True):
        for topic, docs in run.items():
            total = totals.setdefault(topic, {})
            count = counts.setdefault(topic, {})
            for doc, value in values(docs).items():
                total[doc] = total.get(doc, 0.0) + weight * value
                count[doc] = count.get(doc, 0) + 1
    return totals, counts


def _by_rank(points: Callable[[int, int], float]) -> Callable[[dict[str, float]], dict[str, float]]:
    """``points(rank, depth)`` for each document of a topic, rank in canonical order."""

    def values(docs: dict[str, float]) -> dict[str, float]:
        depth = len(docs)
        return {doc: points(rank, depth) for rank, (doc, _) in enumerate(ranked(docs), start=1)}

    return values


def combsum(runs: Sequence[Run], k: int = DEFAULT_K, weights: Sequence[float] | None = None) -> Run:
    """CombSUM (Fox & Shaw 1994) over per-topic min-max normalized scores, missing = 0.

    Normalized as polyfuse ``combsum -n minmax`` (paper 000 Table 4), range 0 giving 0 as in
    :func:`linear`; ``weights`` scale each run's normalized scores. Topics: union of the runs.
    """
    totals, _ = _accumulate(runs, weights, minmax)
    return canonicalize(totals, k)


def borda(runs: Sequence[Run], k: int = DEFAULT_K, weights: Sequence[float] | None = None) -> Run:
    """Borda count: a run gives ``depth - rank + 1`` points, depth = its length for the topic.

    A document a run did not retrieve gets no points from it. polyfuse (paper 000 Table 4)
    divides by the whole run file's line count instead of the topic's depth, which only rescales
    each run's points by a constant; the per-topic depth used here is the textbook Borda count
    (Aslam & Montague 2001) and does not depend on how many topics a file holds.
    """
    totals, _ = _accumulate(runs, weights, _by_rank(lambda rank, depth: depth - rank + 1))
    return canonicalize(totals, k)


def _inverse_square(
    runs: Sequence[Run], weights: Sequence[float] | None
) -> tuple[Run, dict[str, dict[str, int]]]:
    return _accumulate(runs, weights, _by_rank(lambda rank, _depth: 1 / rank**2))


def isr(runs: Sequence[Run], k: int = DEFAULT_K, weights: Sequence[float] | None = None) -> Run:
    """Inverse Square Rank (Mourão, Martins & Magalhães, CBMI 2014): ``M(d) * sum 1/rank^2``.

    ``M(d)`` is the number of runs that retrieved ``d``; the multiplication follows the
    definition (the "MNZ" factor of the ISR family) and polyfuse's ``isr``, which paper 000
    Table 4 used, and ranx's ``isr``. Topics: union of the runs.
    """
    totals, counts = _inverse_square(runs, weights)
    fused = {
        topic: {doc: counts[topic][doc] * total for doc, total in docs.items()}
        for topic, docs in totals.items()
    }
    return canonicalize(fused, k)


def log_isr(
    runs: Sequence[Run],
    k: int = DEFAULT_K,
    weights: Sequence[float] | None = None,
    log_offset: int = 1,
) -> Run:
    """log-ISR (Mourão et al. 2014): ``log(M(d) + log_offset) * sum 1/rank^2``.

    Mourão et al. (and ranx's ``log_isr``) define the factor as ``log(M(d))``, i.e.
    ``log_offset=0``, which scores every document retrieved by a single run 0. polyfuse's
    ``logisr``, with which paper 000 computed Table 4, adds 1 "to avoid log(1) = 0"; that is the
    default here so Table 4 is reproduced.
    """
    totals, counts = _inverse_square(runs, weights)
    fused = {
        topic: {
            doc: math.log(counts[topic][doc] + log_offset) * total for doc, total in docs.items()
        }
        for topic, docs in totals.items()
    }
    return canonicalize(fused, k)


def rrf(
    runs: Sequence[Run],
    k: int = DEFAULT_K,
    weights: Sequence[float] | None = None,
    rrf_k: int = 60,
) -> Run:
    """Reciprocal Rank Fusion (Cormack et al. 2009; paper 001): ``sum 1 / (rrf_k + rank)``."""
    if rrf_k < 0:
        raise ConfigError(f"fusion parameter rrf_k must be >= 0, got {rrf_k!r}")
    totals, _ = _accumulate(runs, weights, _by_rank(lambda rank, _depth: 1 / (rrf_k + rank)))
    return canonicalize(totals, k)


def _algorithm1(bm25: list[str], tfidf: list[str], share: int, k: int) -> list[str]:
    """Paper 002 Algorithm 1 on one topic's ordered predictions."""
    picked = bm25[:share]
    seen = set(picked)
    i = 0
    while len(picked) < k:
        if i < share:
            candidate = tfidf[i] if i < len(tfidf) else None
        elif i < len(bm25):
            candidate = bm25[i]
        else:
            break
        if candidate is not None and candidate not in seen:
            picked.append(candidate)
            seen.add(candidate)
        i += 1
    return picked


def interleave(first: Run, second: Run, eta: float, k: int = DEFAULT_K) -> Run:
    """Paper 002 Algorithm 1: BM25's (``first``) top ``eta * k``, then TF-IDF (``second``).

    Per topic (union of both runs): take ``first[0 : eta*k]``; then for ``i = 0, 1, ...`` while
    fewer than ``k`` are taken: if ``i < eta*k`` append ``second[i]`` unless already taken,
    otherwise "switch back" (Appendix D) and append ``first[i]``. So TF-IDF contributes only
    from its own top ``eta*k``; once those are used up (or were duplicates), BM25 continues
    from rank ``eta*k + 1``.

    Choices where the pseudo-code is silent or cannot run as written:

    - ``eta*k`` is a real number; ``i < eta*k`` admits ``ceil(eta*k)`` indices, so that many
      BM25 predictions are taken (not floor or round). It is computed with a 1e-9 tolerance so
      ``0.7 * 10 == 7.000000000000001`` takes 7, as meant.
    - The switch-back branch also skips documents already taken: the prose says duplicates are
      ignored, and a run cannot hold a document twice.
    - A list that runs out simply contributes nothing more; the result may then hold fewer
      than ``k`` documents (a topic only in ``second`` yields its top ``ceil(eta*k)``).

    Scores are synthetic: the document at output position ``j`` (1-based) of ``n`` scores
    ``n - j + 1``, strictly decreasing, so the canonical order is the interleaved order.
    """
    _check_unit("eta", eta)
    share = math.ceil(eta * k - 1e-9)
    fused: Run = {}
    for topic in _union_topics([first, second]):
        bm25 = [doc for doc, _ in ranked(first.get(topic, {}))]
        tfidf = [doc for doc, _ in ranked(second.get(topic, {}))]
        order = _algorithm1(bm25, tfidf, share, k)
        fused[topic] = {doc: float(len(order) - j) for j, doc in enumerate(order)}
    return canonicalize(fused, k)


def score_hybrid(dense: Run, sparse: Run, lam: float, k: int = DEFAULT_K) -> Run:
    """Paper 003 Eq. 1: ``lam * cos_dense + (1 - lam) * cos_sparse`` on the raw cosines.

    No normalization, as in the paper: both are cosine similarities on a common scale. A
    document one run did not return has cosine 0 there (the paper scores every document in both
    spaces; a run cut at ``k`` just omits the tail). Dense cosines may be negative and are kept
    as they are, so such a document can rank below one only the sparse run retrieved.
    Topics: union of both runs.
    """
    _check_unit("lam", lam)
    weight = 1 - lam
    fused: Run = {}
    for topic in _union_topics([dense, sparse]):
        dense_docs, sparse_docs = dense.get(topic, {}), sparse.get(topic, {})
        fused[topic] = {
            doc: lam * dense_docs.get(doc, 0.0) + weight * sparse_docs.get(doc, 0.0)
            for doc in dict.fromkeys([*dense_docs, *sparse_docs])
        }
    return canonicalize(fused, k)


FUSION_METHODS: dict[str, Callable[..., Run]] = {
    "linear": linear,
    "rerank": rerank,
    "combsum": combsum,
    "borda": borda,
    "isr": isr,
    "log_isr": log_isr,
    "rrf": rrf,
    "interleave": interleave,
    "score_hybrid": score_hybrid,
}


def _unit(value: object) -> bool:
    return _number(value) and 0.0 <= value <= 1.0  # type: ignore[operator]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


PARAMETER_DOMAINS: dict[str, tuple[Callable[[object], bool], str]] = {
    "alpha": (_unit, "lie in [0, 1]"),
    "eta": (_unit, "lie in [0, 1]"),
    "lam": (_unit, "lie in [0, 1]"),
    "rrf_k": (lambda value: _number(value) and value >= 0, "be >= 0"),  # type: ignore[operator]
    "k": (
        lambda value: isinstance(value, int) and not isinstance(value, bool) and value >= 1,
        "be a positive integer",
    ),
    "topics": (lambda value: value in ("first", "union"), "be 'first' or 'union'"),
}
"""Each fusion parameter's domain, checked by :func:`check_fusion` before any run is read."""


def check_fusion(method: str, runs: int, params: dict) -> None:
    """That ``method`` can fuse ``runs`` runs with ``params``: a known method, the number of
    runs it takes, every parameter it needs and none it lacks, each in its domain
    (:data:`PARAMETER_DOMAINS`; ``weights`` one finite number per run). Bad input is one
    ``ConfigError`` naming the method, so the configuration is checked before any job runs."""
    function = FUSION_METHODS.get(method)
    if function is None:
        raise ConfigError(
            f"unknown fusion method {method!r}; choose one of {', '.join(FUSION_METHODS)}"
        )
    parameters = inspect.signature(function).parameters
    names = list(parameters)
    if names[0] == "runs":
        if runs < 2:
            raise ConfigError(f"fusion method {method!r} needs at least 2 runs, got {runs}")
        options = names[1:]
    else:
        if runs != 2:
            raise ConfigError(f"fusion method {method!r} takes exactly 2 runs, got {runs}")
        options = names[2:]
    unknown = sorted(set(params) - set(options))
    if unknown:
        raise ConfigError(
            f"fusion method {method!r} has no parameter {', '.join(unknown)}; "
            f"it takes {', '.join(options)}"
        )
    missing = [
        name
        for name in options
        if parameters[name].default is inspect.Parameter.empty and name not in params
    ]
    if missing:
        raise ConfigError(f"fusion method {method!r} needs parameter {', '.join(missing)}")
    for name, value in params.items():
        if name in PARAMETER_DOMAINS:
            accepts, domain = PARAMETER_DOMAINS[name]
            if not accepts(value):
                raise ConfigError(f"fusion parameter {name} must {domain}, got {value!r}")
    weights = params.get("weights")
    if weights is not None:
        if not isinstance(weights, list | tuple) or not all(map(_number, weights)):
            raise ConfigError(f"fusion parameter weights must be finite numbers, got {weights!r}")
        if len(weights) != runs:
            raise ConfigError(f"fusion got {len(weights)} weight(s) for {runs} run(s)")
        if not any(weights):
            raise ConfigError(
                f"fusion parameter weights must not all be zero, got {weights!r}: every fused "
                "score would be 0 and the ranking arbitrary"
            )


def fuse(method: str, runs: Sequence[Run], **params) -> Run:
    """Apply a fusion method by name, as config and CLI do, after :func:`check_fusion`.

    Methods whose first parameter is ``runs`` take two or more runs; the others take exactly
    two.
    """
    check_fusion(method, len(runs), params)
    function = FUSION_METHODS[method]
    if list(inspect.signature(function).parameters)[0] == "runs":
        return function(list(runs), **params)
    return function(*runs, **params)
