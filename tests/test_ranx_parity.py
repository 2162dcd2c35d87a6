"""This package's fusion methods against ranx's on the same runs: equal where the two define a
method alike (RRF, CombSUM over min-max scores, ISR, log-ISR with pya0's offset removed, Borda
when every run ranks every candidate), and apart, as documented, where they do not:

- log-ISR: ranx (and Mourão et al.) weigh by ``log(M)``, which scores a document only one run
  retrieved 0; pya0's polyfuse, with which paper 000 made Table 4, weighs by ``log(M + 1)``,
  this package's default (``log_offset=1``);
- Borda: ranx gives a document a run did not retrieve the mean of the points left over,
  ``(candidates - retrieved + 1) / 2``, and the retrieved ones ``candidates - rank + 1``; this
  package (and polyfuse) gives an unretrieved document nothing and the retrieved ones
  ``retrieved - rank + 1``. The two agree when every run ranks every candidate.

The runs have no tied scores, where each library would break ties its own way."""

from __future__ import annotations

import math
import random

import pytest
from ranx import Run as RanxRun
from ranx import fuse as ranx_fuse

from hybrid_ir.fusion.methods import borda, combsum, isr, log_isr, rrf

pytestmark = pytest.mark.filterwarnings("ignore::numba.core.errors.NumbaTypeSafetyWarning")


def _runs(seed: int, overlap: bool) -> list[dict[str, dict[str, float]]]:
    """Three runs over eight topics with distinct scores; with ``overlap``, every run ranks the
    same documents, otherwise each a random part of a pool of 30."""
    rng = random.Random(seed)
    runs = []
    for _ in range(3):
        run = {}
        for topic in range(8):
            pool = [f"d{n}" for n in range(30)]
            docs = pool[:12] if overlap else rng.sample(pool, rng.randint(5, 20))
            scores = rng.sample(range(1, 10_000), len(docs))
            run[f"q{topic}"] = {doc: score / 100 for doc, score in zip(docs, scores, strict=True)}
        runs.append(run)
    return runs


def _ranx(runs, method: str, **options) -> dict[str, dict[str, float]]:
    fused = ranx_fuse([RanxRun(run) for run in runs], method=method, **options)
    return {topic: dict(docs) for topic, docs in fused.to_dict().items()}


def _assert_same(ours, theirs):
    assert ours.keys() == theirs.keys()
    for topic in ours:
        assert ours[topic].keys() == theirs[topic].keys(), topic
        for doc, score in ours[topic].items():
            assert score == pytest.approx(theirs[topic][doc], rel=1e-12, abs=1e-15), (topic, doc)


@pytest.fixture(scope="module")
def runs():
    return _runs(7, overlap=False)


def test_rrf_equals_ranx(runs):
    _assert_same(rrf(runs, rrf_k=60), _ranx(runs, "rrf", params={"k": 60}))


def test_combsum_over_min_max_scores_equals_ranx(runs):
    _assert_same(combsum(runs), _ranx(runs, "sum", norm="min-max"))


def test_isr_equals_ranx(runs):
    _assert_same(isr(runs), _ranx(runs, "isr"))


def test_log_isr_equals_ranx_without_pya0s_offset_and_differs_with_it(runs):
    _assert_same(log_isr(runs, log_offset=0), _ranx(runs, "log_isr"))
    ours, theirs = log_isr(runs), _ranx(runs, "log_isr")
    single = [
        (topic, doc)
        for topic, docs in theirs.items()
        for doc in docs
        if sum(doc in run.get(topic, {}) for run in runs) == 1
    ]
    assert single, "the runs must have documents only one run retrieved"
    for topic, doc in single:
        assert theirs[topic][doc] == 0
        assert ours[topic][doc] == pytest.approx(
            isr([run for run in runs if doc in run.get(topic, {})])[topic][doc] * math.log(2)
        )


def test_borda_equals_ranx_when_every_run_ranks_every_candidate():
    full = _runs(11, overlap=True)
    _assert_same(borda(full), _ranx(full, "bordafuse"))


def test_borda_differs_from_ranx_on_documents_a_run_did_not_retrieve(runs):
    ours, theirs = borda(runs), _ranx(runs, "bordafuse")
    topic = "q0"
    candidates = set().union(*(run[topic] for run in runs))
    for doc in candidates:
        missing = [run for run in runs if doc not in run[topic]]
        expected_ours = sum(len(run[topic]) - _rank(run[topic], doc) + 1
                            for run in runs if doc in run[topic])  # fmt: skip
        expected_ranx = sum(
            len(candidates) - _rank(run[topic], doc) + 1
            if doc in run[topic]
            else (len(candidates) - len(run[topic]) + 1) / 2
            for run in runs
        )
        assert ours[topic][doc] == pytest.approx(expected_ours)
        assert theirs[topic][doc] == pytest.approx(expected_ranx)
        if missing:
            assert ours[topic][doc] != pytest.approx(theirs[topic][doc])


def _rank(docs: dict[str, float], doc: str) -> int:
    return sorted(docs, key=docs.get, reverse=True).index(doc) + 1
