"""Fusion methods: hand-computed golden runs, and linear fusion against pya0's own mergerun.

The shared fixture covers every rule a fusion can trip on: ``t1`` mixes shared and disjoint
documents and produces ties, ``t2`` is all-equal in RUN_A (min-max range 0) and disjoint from
RUN_B, ``t3`` is only in RUN_A and ``t4`` only in RUN_B. Expected runs are written out by hand
as (doc, score) lists in the expected order; equal scores must come out by doc id descending.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from hybrid_ir.data.runs import Run, canonicalize, read_run, write_run
from hybrid_ir.errors import ConfigError
from hybrid_ir.fusion.methods import (
    FUSION_METHODS,
    borda,
    combsum,
    fuse,
    interleave,
    isr,
    linear,
    log_isr,
    rerank,
    rrf,
    score_hybrid,
)

RUN_A: Run = canonicalize(
    {
        "t1": {"a": 3.0, "b": 2.0, "c": 1.0},
        "t2": {"x": 5.0, "y": 5.0},
        "t3": {"p": 1.0},
    }
)
RUN_B: Run = canonicalize(
    {
        "t1": {"e": 10.0, "b": 5.0, "c": 0.0},
        "t2": {"z": 2.0, "w": 1.0},
        "t4": {"q": 4.0, "r": 2.0},
    }
)


def assert_run(actual: Run, expected: dict[str, list[tuple[str, float]]]) -> None:
    """Same topics, same documents in the same order, scores equal to 1e-12."""
    assert sorted(actual) == sorted(expected)
    for topic, pairs in expected.items():
        assert list(actual[topic]) == [doc for doc, _ in pairs], topic
        got = [actual[topic][doc] for doc, _ in pairs]
        assert got == pytest.approx([score for _, score in pairs], abs=1e-12), topic


# linear ----------------------------------------------------------------------------------------


def test_linear_half_ties_range_zero_and_first_run_topics():
    # t1: minmax A a=1 b=.5 c=0; minmax B e=1 b=.5 c=0 -> a=.5, b=.25+.25, c=0, e=.5
    # t2: A range 0 -> x=y=0; B z=1 w=0 -> z=.5 and a three-way tie at 0
    # t3: a single document is range 0 -> 0; t4 is only in B and is dropped (as pya0's old rule)
    assert_run(
        linear(RUN_A, RUN_B, alpha=0.5),
        {
            "t1": [("e", 0.5), ("b", 0.5), ("a", 0.5), ("c", 0.0)],
            "t2": [("z", 0.5), ("y", 0.0), ("x", 0.0), ("w", 0.0)],
            "t3": [("p", 0.0)],
        },
    )


def test_linear_alpha_weights_the_dense_run():
    # t1: a=.2*1, b=.2*.5+.8*.5, c=0, e=.8*1
    assert_run(
        linear(RUN_A, RUN_B, alpha=0.2, topics="union"),
        {
            "t1": [("e", 0.8), ("b", 0.5), ("a", 0.2), ("c", 0.0)],
            "t2": [("z", 0.8), ("y", 0.0), ("x", 0.0), ("w", 0.0)],
            "t3": [("p", 0.0)],
            "t4": [("q", 0.8), ("r", 0.0)],
        },
    )


def test_linear_cuts_each_topic_at_k_in_canonical_order():
    assert_run(
        linear(RUN_A, RUN_B, alpha=0.5, k=2),
        {"t1": [("e", 0.5), ("b", 0.5)], "t2": [("z", 0.5), ("y", 0.0)], "t3": [("p", 0.0)]},
    )


def test_linear_rejects_alpha_outside_unit_interval_and_unknown_topic_rule():
    with pytest.raises(ConfigError, match="alpha"):
        linear(RUN_A, RUN_B, alpha=-1)
    with pytest.raises(ConfigError, match="topics"):
        linear(RUN_A, RUN_B, alpha=0.5, topics="second")


# rerank ----------------------------------------------------------------------------------------


def test_rerank_scored_first_then_unscored_in_baseline_order():
    # t1: b=5, c=0 scored; a unscored -> 0 - 1. t2: nothing scored, base order y, x (tie at 5,
    # doc id desc) -> -1, -2. t3: only in the base. t4: only in the scorer, not a candidate.
    assert_run(
        rerank(RUN_A, RUN_B),
        {
            "t1": [("b", 5.0), ("c", 0.0), ("a", -1.0)],
            "t2": [("y", -1.0), ("x", -2.0)],
            "t3": [("p", -1.0)],
        },
    )


def test_rerank_ties_in_scorer_break_by_doc_id_and_k_cuts():
    base = {"t": {"m": 4.0, "n": 3.0, "o": 2.0, "p0": 1.0}}
    scorer = {"t": {"m": 0.25, "o": 0.25, "zz": 9.0}}
    assert_run(
        rerank(base, scorer),
        {"t": [("o", 0.25), ("m", 0.25), ("n", -0.75), ("p0", -1.75)]},
    )
    assert_run(rerank(base, scorer, k=3), {"t": [("o", 0.25), ("m", 0.25), ("n", -0.75)]})


# combsum, borda --------------------------------------------------------------------------------


def test_combsum_sums_minmax_scores_over_union_of_topics():
    # t1: a=1+0, b=.5+.5, c=0+0, e=0+1 -> three-way tie at 1
    assert_run(
        combsum([RUN_A, RUN_B]),
        {
            "t1": [("e", 1.0), ("b", 1.0), ("a", 1.0), ("c", 0.0)],
            "t2": [("z", 1.0), ("y", 0.0), ("x", 0.0), ("w", 0.0)],
            "t3": [("p", 0.0)],
            "t4": [("q", 1.0), ("r", 0.0)],
        },
    )


def test_combsum_weighted():
    # weights 2, 1: a=2, b=1+.5, e=1, c=0
    fused = combsum([RUN_A, RUN_B], weights=[2.0, 1.0])
    assert_run({"t1": fused["t1"]}, {"t1": [("a", 2.0), ("b", 1.5), ("e", 1.0), ("c", 0.0)]})


def test_borda_points_depth_minus_rank_plus_one():
    # t1: A a=3 b=2 c=1, B e=3 b=2 c=1 -> b=4, e=3, a=3, c=2
    # t2: A ranks y before x (tie at 5, doc id desc): y=2 x=1; B z=2 w=1
    assert_run(
        borda([RUN_A, RUN_B]),
        {
            "t1": [("b", 4.0), ("e", 3.0), ("a", 3.0), ("c", 2.0)],
            "t2": [("z", 2.0), ("y", 2.0), ("x", 1.0), ("w", 1.0)],
            "t3": [("p", 1.0)],
            "t4": [("q", 2.0), ("r", 1.0)],
        },
    )


def test_borda_depth_is_each_runs_own_length_for_the_topic():
    short = {"t": {"a": 1.0}}
    long = {"t": {"b": 3.0, "c": 2.0, "a": 1.0}}
    # short: a=1 (depth 1); long: b=3 c=2 a=1 -> a=2
    assert_run(borda([short, long]), {"t": [("b", 3.0), ("c", 2.0), ("a", 2.0)]})


# isr, log_isr, rrf -----------------------------------------------------------------------------


def test_isr_multiplies_by_number_of_runs():
    # t1: a=1*1, b=2*(1/4+1/4)=1, c=2*(1/9+1/9)=4/9, e=1*1
    assert_run(
        isr([RUN_A, RUN_B]),
        {
            "t1": [("e", 1.0), ("b", 1.0), ("a", 1.0), ("c", 4 / 9)],
            "t2": [("z", 1.0), ("y", 1.0), ("x", 0.25), ("w", 0.25)],
            "t3": [("p", 1.0)],
            "t4": [("q", 1.0), ("r", 0.25)],
        },
    )


def test_log_isr_polyfuse_offset_by_default():
    # log(M+1): a=log2*1, b=log3*(1/2), c=log3*(2/9), e=log2*1
    log2, log3 = 0.6931471805599453, 1.0986122886681098
    assert_run(
        log_isr([RUN_A, RUN_B]),
        {
            "t1": [("e", log2), ("a", log2), ("b", log3 / 2), ("c", log3 * 2 / 9)],
            "t2": [("z", log2), ("y", log2), ("x", log2 / 4), ("w", log2 / 4)],
            "t3": [("p", log2)],
            "t4": [("q", log2), ("r", log2 / 4)],
        },
    )


def test_log_isr_mourao_definition_scores_single_run_documents_zero():
    # log(M): a=e=0, b=log2*(1/2), c=log2*(2/9)
    log2 = 0.6931471805599453
    fused = log_isr([RUN_A, RUN_B], log_offset=0)
    assert_run(
        {"t1": fused["t1"]},
        {"t1": [("b", log2 / 2), ("c", log2 * 2 / 9), ("e", 0.0), ("a", 0.0)]},
    )


def test_rrf_k60():
    # t1: a=1/61, b=2/62, c=2/63, e=1/61
    assert_run(
        rrf([RUN_A, RUN_B]),
        {
            "t1": [("b", 2 / 62), ("c", 2 / 63), ("e", 1 / 61), ("a", 1 / 61)],
            "t2": [("z", 1 / 61), ("y", 1 / 61), ("x", 1 / 62), ("w", 1 / 62)],
            "t3": [("p", 1 / 61)],
            "t4": [("q", 1 / 61), ("r", 1 / 62)],
        },
    )


def test_rrf_other_k_and_weights():
    # rrf_k=0, weights 1, 3: a=1, b=1/2+3/2=2, c=1/3+1=4/3, e=3
    fused = rrf([RUN_A, RUN_B], rrf_k=0, weights=[1.0, 3.0])
    assert_run({"t1": fused["t1"]}, {"t1": [("e", 3.0), ("b", 2.0), ("c", 4 / 3), ("a", 1.0)]})


# interleave ------------------------------------------------------------------------------------

BM25: Run = canonicalize({"t": {f"b{i}": 7.0 - i for i in range(1, 7)}})  # b1 .. b6
TFIDF: Run = canonicalize({"t": {"b2": 6.0, "f1": 5.0, "b1": 4.0, "f2": 3.0, "f3": 2.0, "f4": 1.0}})


def _scored(docs: list[str]) -> list[tuple[str, float]]:
    return [(doc, float(len(docs) - i)) for i, doc in enumerate(docs)]


def test_interleave_takes_tfidf_then_switches_back_to_bm25():
    # share 3: b1 b2 b3; TF-IDF i=0 b2 dup, i=1 f1, i=2 b1 dup; i=3 >= share -> BM25[3]=b4
    expected = ["b1", "b2", "b3", "f1", "b4"]
    assert_run(interleave(BM25, TFIDF, eta=0.6, k=5), {"t": _scored(expected)})


def test_interleave_small_share_and_short_lists():
    # share 2: b1 b2; i=0 b2 dup, i=1 f1; then BM25[2]=b3
    assert_run(interleave(BM25, TFIDF, eta=0.5, k=4), {"t": _scored(["b1", "b2", "f1", "b3"])})
    # share 4: b1..b4; f1, f2 from TF-IDF top 4; BM25 b5 b6, then BM25 runs out: 8 < k=10
    expected = ["b1", "b2", "b3", "b4", "f1", "f2", "b5", "b6"]
    assert_run(interleave(BM25, TFIDF, eta=0.4, k=10), {"t": _scored(expected)})


def test_interleave_switch_back_skips_documents_already_taken():
    first = canonicalize({"t": {"g1": 5.0, "g2": 4.0, "g3": 3.0, "g4": 2.0, "g5": 1.0}})
    second = canonicalize({"t": {"g3": 2.0, "h1": 1.0}})
    # share 2: g1 g2; TF-IDF g3, h1; BM25[2]=g3 taken, BM25[3]=g4
    assert_run(
        interleave(first, second, eta=0.4, k=5),
        {"t": _scored(["g1", "g2", "g3", "h1", "g4"])},
    )


def test_interleave_share_is_ceil_of_eta_k_robust_to_float_error():
    first = canonicalize({"t": {f"n{i:02d}": 20.0 - i for i in range(1, 11)}})
    second = canonicalize({"t": {f"m{i:02d}": 20.0 - i for i in range(1, 11)}})
    # 0.7 * 10 = 7.000000000000001 -> 7 BM25 documents, then m01 m02 m03
    expected = [f"n{i:02d}" for i in range(1, 8)] + ["m01", "m02", "m03"]
    assert_run(interleave(first, second, eta=0.7, k=10), {"t": _scored(expected)})
    # 0.3 * 5 = 1.5 -> i < 1.5 admits i = 0, 1: share 2
    expected = ["n01", "n02", "m01", "m02", "n03"]
    assert_run(interleave(first, second, eta=0.3, k=5), {"t": _scored(expected)})


def test_interleave_ties_topics_in_one_run_and_eta_bounds():
    first = {"t": {"q1": 1.0, "q2": 1.0}, "only_first": {"u": 2.0, "v": 1.0}}
    second = {"t": {"s": 1.0}, "only_second": {"m1": 3.0, "m2": 2.0, "m3": 1.0}}
    # tie at 1: BM25 order q2, q1. share = ceil(0.5 * 4) = 2
    assert_run(
        interleave(first, second, eta=0.5, k=4),
        {
            "t": _scored(["q2", "q1", "s"]),
            "only_first": _scored(["u", "v"]),
            "only_second": _scored(["m1", "m2"]),
        },
    )
    # eta=1: BM25 alone; eta=0: no BM25 slice and TF-IDF index never < 0, so BM25 from rank 1
    assert_run(interleave(BM25, TFIDF, eta=1.0, k=3), {"t": _scored(["b1", "b2", "b3"])})
    assert_run(interleave(BM25, TFIDF, eta=0.0, k=3), {"t": _scored(["b1", "b2", "b3"])})
    with pytest.raises(ConfigError, match="eta"):
        interleave(BM25, TFIDF, eta=1.5)


# score_hybrid ----------------------------------------------------------------------------------

DENSE: Run = {
    "t1": {"a": 0.75, "b": -0.25, "c": 0.5},
    "t2": {"x": 0.5},
    "t4": {"u": 0.5, "v": 0.5},
}
SPARSE: Run = {
    "t1": {"a": 0.25, "c": 0.5, "d": 0.375},
    "t3": {"y": 0.25},
    "t4": {"u": 0.5, "v": 0.5},
}


def test_score_hybrid_raw_cosines_missing_zero():
    # t1: a=.375+.125, b=-.125+0, c=.25+.25, d=0+.1875; t4 all equal: no normalization
    assert_run(
        score_hybrid(DENSE, SPARSE, lam=0.5),
        {
            "t1": [("c", 0.5), ("a", 0.5), ("d", 0.1875), ("b", -0.125)],
            "t2": [("x", 0.25)],
            "t3": [("y", 0.125)],
            "t4": [("v", 0.5), ("u", 0.5)],
        },
    )


def test_score_hybrid_paper_lambda():
    # lam=0.8: a=.6+.05, c=.4+.1, d=.2*.375, b=.8*-.25
    fused = score_hybrid(DENSE, SPARSE, lam=0.8, k=3)
    assert_run({"t1": fused["t1"]}, {"t1": [("a", 0.65), ("c", 0.5), ("d", 0.075)]})


# fuse and the registry -------------------------------------------------------------------------


def test_registry_names():
    assert set(FUSION_METHODS) == {
        "linear",
        "rerank",
        "combsum",
        "borda",
        "isr",
        "log_isr",
        "rrf",
        "interleave",
        "score_hybrid",
    }


def test_fuse_dispatches_with_parameters():
    assert fuse("linear", [RUN_A, RUN_B], alpha=0.5) == linear(RUN_A, RUN_B, 0.5)
    assert fuse("rrf", [RUN_A, RUN_B, RUN_A], k=2, rrf_k=10) == rrf(
        [RUN_A, RUN_B, RUN_A], 2, None, 10
    )
    assert fuse("rerank", (RUN_A, RUN_B)) == rerank(RUN_A, RUN_B)
    assert fuse("interleave", [BM25, TFIDF], eta=0.6, k=5) == interleave(BM25, TFIDF, 0.6, 5)


@pytest.mark.parametrize(
    ("method", "runs", "params", "message"),
    [
        ("mean", [RUN_A, RUN_B], {}, "unknown fusion method 'mean'"),
        ("linear", [RUN_A], {"alpha": 0.5}, "takes exactly 2 runs, got 1"),
        ("score_hybrid", [RUN_A, RUN_B, RUN_A], {"lam": 0.5}, "takes exactly 2 runs, got 3"),
        ("rrf", [RUN_A], {}, "needs at least 2 runs, got 1"),
        ("linear", [RUN_A, RUN_B], {}, "'linear' needs parameter alpha"),
        ("interleave", [RUN_A, RUN_B], {}, "needs parameter eta"),
        ("rrf", [RUN_A, RUN_B], {"alpha": 0.5}, "'rrf' has no parameter alpha"),
        ("borda", [RUN_A, RUN_B], {"k": 0}, "k must be a positive integer"),
        ("combsum", [RUN_A, RUN_B], {"weights": [1.0]}, "1 weight"),
        ("score_hybrid", [RUN_A, RUN_B], {"lam": 2}, "lam must lie in"),
        ("rrf", [RUN_A, RUN_B], {"rrf_k": -1}, "rrf_k"),
    ],
)
def test_fuse_reports_configuration_errors_in_one_line(method, runs, params, message):
    with pytest.raises(ConfigError, match=message) as caught:
        fuse(method, runs, **params)
    assert "\n" not in str(caught.value)


# linear against pya0 ---------------------------------------------------------------------------


def _fixture_runs(directory: Path) -> tuple[Path, Path]:
    """Two TREC runs: 5 topics x 20-30 documents on a coarse score grid (many exact ties),
    half the documents shared; topic 3 all-equal in run 1, topic 4 only in run 1, 5 only in 2."""
    rng = random.Random(20220923)
    dense: Run = {}
    base: Run = {}
    for topic in ("1", "2", "3", "4"):
        pool = [f"doc{n:03d}" for n in rng.sample(range(200), 40)]
        dense[topic] = {doc: float(rng.randint(0, 12)) / 4 for doc in pool[:25]}
        if topic != "4":
            base[topic] = {doc: rng.randint(-20, 40) / 2 for doc in pool[12:40]}
    dense["3"] = dict.fromkeys(dense["3"], 0.75)
    base["5"] = {f"doc{n:03d}": rng.randint(0, 9) * 1.5 for n in range(22)}
    paths = directory / "dense.run", directory / "base.run"
    write_run(dense, paths[0], "dense")
    write_run(base, paths[1], "base")
    return paths


def _read_in_order(path: str | Path) -> dict[str, list[tuple[str, float]]]:
    pairs: dict[str, list[tuple[str, float]]] = {}
    for line in Path(path).read_text().splitlines():
        topic, _, doc, _, score, _ = line.split()
        pairs.setdefault(topic, []).append((doc, float(score)))
    return pairs


def _assert_same_as_pya0(ours: Run, theirs: dict[str, list[tuple[str, float]]]) -> None:
    assert sorted(ours) == sorted(theirs)
    for topic, pairs in theirs.items():
        assert list(ours[topic]) == [doc for doc, _ in pairs], topic
        for doc, score in pairs:
            assert math.isclose(ours[topic][doc], score, rel_tol=0, abs_tol=1e-9), (topic, doc)


@pytest.mark.parametrize("topk", [1000, 10])
@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
def test_linear_matches_pya0_merge_run_file(tmp_path, alpha, topk):
    mergerun = pytest.importorskip("pya0.mergerun")
    dense_path, base_path = _fixture_runs(tmp_path)
    mergerun.merge_run_file(
        str(dense_path), str(base_path), alpha, topk=topk, out_prefix=f"{tmp_path}/"
    )
    (output,) = tmp_path.glob("mergerun-*")
    theirs = _read_in_order(output)
    assert "5" not in theirs and "3" in theirs  # the old rule: run 1's topics only
    ours = linear(read_run(dense_path), read_run(base_path), alpha, k=topk)
    _assert_same_as_pya0(ours, theirs)


@pytest.mark.parametrize("alpha", [0.25, 0.5, 0.75])
def test_linear_union_matches_pya0_merge_run_files(tmp_path, alpha):
    mergerun = pytest.importorskip("pya0.mergerun")
    pytest.importorskip("pandas")
    dense_path, base_path = _fixture_runs(tmp_path)
    output = mergerun.merge_run_files(
        f"{dense_path}:{alpha}", f"{base_path}:{1 - alpha}", out_prefix=str(tmp_path), out_name="o"
    )
    theirs = _read_in_order(output)
    assert "5" in theirs
    ours = linear(read_run(dense_path), read_run(base_path), alpha, topics="union")
    _assert_same_as_pya0(ours, theirs)


def test_the_schema_names_exactly_the_registered_fusion_methods():
    """Fusions and sweeps take the methods of the registry, no more, no fewer."""
    import yaml

    from hybrid_ir.fusion.methods import FUSION_METHODS

    schema = yaml.safe_load(
        (Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml").read_text()
    )
    fusion = schema["properties"]["fusions"]["additionalProperties"]["additionalProperties"]
    sweep = schema["properties"]["sweeps"]["additionalProperties"]
    for entry in (fusion, sweep):
        assert entry["properties"]["method"]["enum"] == list(FUSION_METHODS)
