"""Evaluation: measure sets checked by hand on tiny runs, and (mirror) the ARQMath-1 trec_eval
outputs staged with PSU's runs. Qrels reading is tested in test_qrels.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from hybrid_ir.data.qrels import read_qrels
from hybrid_ir.data.runs import read_run
from hybrid_ir.errors import ConfigError
from hybrid_ir.evaluation.measures import (
    evaluate,
    evaluate_files,
    ntcir12,
    resolve_measures,
)


def dcg(gains: list[float]) -> float:
    """trec_eval's DCG: gain at rank r discounted by log2(r + 1)."""
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


# ARQMath: T1 mixes judged and unjudged documents, T2 retrieves only unjudged ones, T3 is not
# answered, T9 is not judged at all.
ARQ_QRELS = {
    "T1": {"d1": 3, "d2": 2, "d3": 1, "d4": 0, "d5": 2},
    "T2": {"d1": 2},
    "T3": {"d7": 3},
}
ARQ_RUN = {
    "T1": {"u1": 10.0, "d3": 9.0, "u2": 8.0, "d1": 7.0, "d4": 6.0, "d2": 5.0},
    "T2": {"u3": 1.0},
    "T9": {"d1": 1.0},
}


def test_arqmath_prime_measures_by_hand():
    evaluation = evaluate(ARQ_QRELS, ARQ_RUN, ["arqmath"])
    # T1's prime run, unjudged u1 and u2 removed: d3 (1), d1 (3), d4 (0), d2 (2).
    ndcg = dcg([1, 3, 0, 2]) / dcg([3, 2, 2, 1, 0])
    # Relevant at >= 2: d1, d2, d5 (unretrieved); d3 (Low) is not relevant.
    average_precision = (1 / 2 + 2 / 4) / 3
    # bpref: R = 3, judged non-relevant N = {d3, d4}; d1 has 1 of them above, d2 has 2.
    bpref = ((1 - 1 / 2) + (1 - 2 / 2)) / 3
    expected = {"nDCG'": ndcg, "MAP'": average_precision, "P'@10": 2 / 10, "BPref": bpref}
    for column, value in expected.items():
        # Only T1 keeps a judged document, so the organisers average over T1 alone.
        assert evaluation.topics[column] == ("T1",)
        assert evaluation.per_query[column] == {"T1": pytest.approx(value)}
        assert evaluation.aggregate[column] == pytest.approx(value)
    # Judged is read on the original run: 4 of T1's 6 documents; T2 and T3 count 0 (-c).
    for column in ("Judged@10", "Judged@1000"):
        assert evaluation.per_query[column] == {"T1": pytest.approx(4 / 6), "T2": 0, "T3": 0}
        assert evaluation.aggregate[column] == pytest.approx(4 / 6 / 3)
    assert evaluation.per_query["Rel_Ret"] == {"T1": 2, "T2": 0, "T3": 0}
    assert evaluation.aggregate["Rel_Ret"] == 2  # a total, not a mean


def test_every_count_is_an_integer_summed_over_topics():
    evaluation = evaluate(ARQ_QRELS, ARQ_RUN, ["NumQ", "NumRet", "NumRel", "NumRelRet", "Rel_Ret"])
    # Every qrels topic counts (T3 unanswered: 0); T9, unjudged, does not.
    assert evaluation.per_query["NumRet"] == {"T1": 6, "T2": 1, "T3": 0}
    assert evaluation.aggregate["NumRet"] == 7
    assert evaluation.per_query["NumRel"] == {"T1": 4, "T2": 1, "T3": 1}  # relevance >= 1
    assert evaluation.aggregate["NumRelRet"] == 3  # d3, d1, d2 of T1 at relevance >= 1
    for column in ("NumQ", "NumRet", "NumRel", "NumRelRet", "Rel_Ret"):
        assert all(type(value) is int for value in evaluation.per_query[column].values())
        assert type(evaluation.aggregate[column]) is int
        assert evaluation.aggregate[column] == sum(evaluation.per_query[column].values())
    assert [c.name for c in resolve_measures(["NumRet", "nDCG@10"]) if c.total] == ["NumRet"]


def test_prime_equals_removing_unjudged_documents_by_hand():
    prime_run = {
        topic: {doc: score for doc, score in docs.items() if doc in ARQ_QRELS.get(topic, {})}
        for topic, docs in ARQ_RUN.items()
    }
    prime = evaluate(ARQ_QRELS, prime_run, ["arqmath"])
    original = evaluate(ARQ_QRELS, ARQ_RUN, ["arqmath"])
    for column in ("nDCG'", "MAP'", "P'@10", "BPref", "Rel_Ret"):
        assert prime.per_query[column] == original.per_query[column]
    # Plain trec_eval on the original run counts the unjudged documents as non-relevant.
    plain = evaluate(ARQ_QRELS, ARQ_RUN, ["AP(rel=2)", "nDCG"])
    assert plain.per_query["AP(rel=2)"]["T1"] == pytest.approx((1 / 4 + 2 / 6) / 3)
    assert plain.per_query["nDCG"]["T1"] == pytest.approx(
        dcg([0, 1, 0, 3, 0, 2]) / dcg([3, 2, 2, 1, 0])
    )


def test_judged_at_k_breaks_score_ties_as_trec_eval():
    # trec_eval ranks tied scores by document id descending: c, b, a.
    qrels = {"Q": {"c": 1, "a": 0}}
    run = {"Q": {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.5}}
    evaluation = evaluate(qrels, run, ["Judged@1", "Judged@2", "Judged@10", "P@1"])
    assert evaluation.aggregate == {"Judged@1": 1.0, "Judged@2": 0.5, "Judged@10": 0.5, "P@1": 1.0}


def test_cf_measures_by_hand():
    # Graded CF qrels: the sum of four judges' 0-2 scores.
    qrels = {"Q": {"a": 8, "b": 1, "c": 3, "d": 2, "e": 0}}
    run = {"Q": {"a": 6.0, "x": 5.0, "b": 4.0, "y": 3.0, "z": 2.0, "c": 1.0}}
    aggregate = evaluate(qrels, run, ["cf"]).aggregate
    # Binary (sum >= 1): a, b, c, d relevant; a at rank 1, b at 3, c at 6, d unretrieved.
    assert aggregate["P@1"] == 1
    assert aggregate["P@3"] == pytest.approx(2 / 3)
    assert aggregate["P@5"] == pytest.approx(2 / 5)
    assert aggregate["P@10"] == pytest.approx(3 / 10)
    assert aggregate["MAP"] == pytest.approx((1 + 2 / 3 + 3 / 6) / 4)
    # (recall, precision) at each relevant retrieved: (.25, 1), (.5, 2/3), (.75, 1/2); the
    # interpolated precision at r is the best precision at any recall >= r, 0 past .75.
    interpolated = [1, 1, 1, 2 / 3, 2 / 3, 2 / 3, 1 / 2, 1 / 2, 0, 0, 0]
    for level, value in enumerate(interpolated):
        assert aggregate[f"IPrec@{level / 10:.1f}"] == pytest.approx(value)
    # NDCG@10 with the MEAN judge score as gain (sum / 4) equals it with the sum.
    mean = {doc: total / 4 for doc, total in qrels["Q"].items()}
    ideal = sorted(mean.values(), reverse=True)
    retrieved = [mean.get(doc, 0) for doc in run["Q"]]
    assert aggregate["NDCG@10"] == pytest.approx(dcg(retrieved) / dcg(ideal))


NTCIR_QRELS = {"N": {"d1": 4, "d2": 3, "d3": 2, "d4": 1, "d5": 0, "d6": 3}}
NTCIR_RUN = {"N": {"d3": 6.0, "d1": 5.0, "d5": 4.0, "u1": 3.0, "d4": 2.0, "d2": 1.0}}


def test_ntcir12_bpref_at_both_levels_by_hand():
    aggregate = evaluate(NTCIR_QRELS, NTCIR_RUN, ["ntcir12"]).aggregate
    # Full (>= 3): R = {d1, d2, d6}, N = {d3, d4, d5}; d1 has d3 above, d2 has all three.
    assert aggregate["Full BPref"] == pytest.approx(((1 - 1 / 3) + (1 - 3 / 3)) / 3)
    # Partial (>= 1): R = {d1, d2, d3, d4, d6}, N = {d5}; only d4 and d2 come after d5.
    assert aggregate["Part. BPref"] == pytest.approx((1 + 1 + 0 + 0) / 5)
    assert aggregate["Full P@5"] == pytest.approx(1 / 5)
    assert aggregate["Part. P@5"] == pytest.approx(3 / 5)
    assert aggregate["Part. P@20"] == pytest.approx(4 / 20)
    assert aggregate["Judged@1000"] == pytest.approx(5 / 6)


def test_ntcir12_levels_are_configurable():
    by_name = evaluate(NTCIR_QRELS, NTCIR_RUN, ["ntcir12(full=2, partial=1)"]).aggregate
    by_object = evaluate(NTCIR_QRELS, NTCIR_RUN, [ntcir12(full=2)]).aggregate
    # Full (>= 2): R = {d1, d2, d3, d6}, N = {d4, d5}; d3 and d1 lead, d2 has both above it.
    expected = (1 + 1 + (1 - 2 / 2)) / 4
    assert by_name["Full BPref"] == by_object["Full BPref"] == pytest.approx(expected)


def test_ntcir12_on_the_concrete_qrels_is_pya0s_protocol():
    # pya0 runs the concrete topics only and calls trec_eval WITHOUT -c on the qrels of all 40
    # topics, so its mean is over the run's topics: here N alone, a concrete topic (W has a
    # query variable and is not searched). The reader's concrete qrels give that mean with the
    # workflow's -c semantics; the qrels of every topic would average in W's zero.
    qrels = {**NTCIR_QRELS, "W": {"w1": 4, "w2": 0}}
    concrete = evaluate(NTCIR_QRELS, NTCIR_RUN, ["ntcir12"])
    every_topic = evaluate(qrels, NTCIR_RUN, ["ntcir12"])
    full = ((1 - 1 / 3) + (1 - 3 / 3)) / 3
    assert concrete.aggregate["Full BPref"] == pytest.approx(full)
    assert every_topic.aggregate["Full BPref"] == pytest.approx(full / 2)
    # pya0's judge_rate: 1000 x judged / retrieved over the run's topics, 5 of 6 here.
    assert 1000 * concrete.aggregate["Judged@1000"] == pytest.approx(1000 * 5 / 6)


def test_unanswered_topics_count_zero_as_trec_eval_c():
    qrels = {"A": {"x": 1}, "B": {"y": 1}}
    run = {"A": {"x": 1.0}, "Z": {"y": 1.0}}
    evaluation = evaluate(qrels, run, ["beir", "P@1"])
    assert evaluation.per_query["P@1"] == {"A": 1.0, "B": 0.0}
    assert evaluation.aggregate == {"nDCG@10": 0.5, "R@100": 0.5, "R@1000": 0.5, "P@1": 0.5}
    assert evaluation.topics["nDCG@10"] == ("A", "B")


def test_measure_lists_mix_sets_and_names():
    columns = [c.name for c in resolve_measures(["beir", "recall(10, 50)", "R@10", "P(rel=2)@10"])]
    assert columns == ["nDCG@10", "R@100", "R@1000", "R@10", "R@50", "P(rel=2)@10"]
    # Both sets define Judged@1000 alike: kept once.
    assert [c.name for c in resolve_measures(["arqmath", "ntcir12"])].count("Judged@1000") == 1


@pytest.mark.parametrize(
    "measures",
    [["nDCG@ten"], ["nosuchmeasure"], ["ntcir12", "ntcir12(full=2)"], ["recall()"], []],
)
def test_bad_measure_lists_are_config_errors(measures):
    with pytest.raises(ConfigError):
        resolve_measures(measures)


def test_evaluate_files_reads_arqmath_tsv_runs(tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("A.1 0 10 2\nA.1 0 11 0\nA.2 0 12 3\n")
    run = tmp_path / "run.tsv"
    run.write_text("A.1\t99\t1\t3.0\tr\nA.1\t10\t2\t2.0\tr\nA.1\t11\t3\t1.0\tr\n")
    aggregate, per_query = evaluate_files(qrels, run, ["arqmath", "nDCG@10"])
    assert aggregate["P'@10"] == pytest.approx(0.1)  # A.2 has no judged document: not averaged
    assert per_query["nDCG@10"] == {"A.1": pytest.approx(1 / math.log2(3)), "A.2": 0.0}


# ---------------------------------------------------------------------------------------------
# Mirror: PSU's ARQMath-1 runs and the trec_eval outputs staged next to them.

PSU = Path("arqmath/runs/arqmath1-psu")
NOTEBOOK_RUNS = PSU / "notebooks/final_runs"
ARQMATH1_QRELS = Path("arqmath/pya0-topics-and-qrels/qrels.arqmath-2020-task1.txt")
MATHDOWSERS = "prim_MathDowsers-task1-alpha05noReRank-auto-both-A"
PSU_BEST = "tf.psu-task1-rrf.prim.mlt.anserini.roberta-auto-both-A"
"""PSU's best post-hoc run, BM25+tf+tf.BERT in paper 001's Table 1."""


def trec_eval_output(path: Path) -> dict[str, dict[str, str]]:
    """``{measure: {topic or 'all': value}}`` from trec_eval's printed lines."""
    table: dict[str, dict[str, str]] = {}
    for line in path.read_text().splitlines():
        measure, topic, value = line.split()
        table.setdefault(measure, {})[topic] = value
    return table


@pytest.fixture(scope="module")
def arqmath1_qrels(mirror):
    return read_qrels(mirror / ARQMATH1_QRELS)


@pytest.mark.mirror
@pytest.mark.parametrize(
    "run_file",
    [
        "DPRL_task1_auto_both_A3.tsv.gz",
        "prim_MIRMU-task1-Ensemble-auto-both-A.tsv.gz",
        f"{MATHDOWSERS}.tsv.gz",
        "prim_zbMATH-task1-auto-both-P.tsv",
    ],
)
def test_prime_measures_match_staged_trec_eval_summaries(mirror, arqmath1_qrels, run_file):
    # The staged summaries are trec_eval -l2 (num_rel 1804 = relevance >= 2) on judged-only runs.
    name = run_file.removesuffix(".gz").removesuffix(".tsv")
    summary = trec_eval_output(mirror / PSU / "notebooks/trec_results" / f"{name}.txt")
    run = read_run(mirror / NOTEBOOK_RUNS / run_file)
    evaluation = evaluate(arqmath1_qrels, run, ["arqmath"])
    for column, measure in (("MAP'", "map"), ("P'@10", "P_10"), ("BPref", "bpref")):
        assert f"{evaluation.aggregate[column]:.4f}" == summary[measure]["all"], column
    assert f"{evaluation.aggregate['Rel_Ret']:.0f}" == summary["num_rel_ret"]["all"]
    # trec_eval without -c averages over the topics in the file: zbMATH answers 32 of 77.
    assert len(evaluation.topics["MAP'"]) == int(summary["num_q"]["all"])


@pytest.mark.mirror
def test_ndcg_prime_matches_staged_per_topic_values(mirror, arqmath1_qrels):
    expected = trec_eval_output(mirror / PSU / "notebooks/MathDowsers.ndcg.txt")["ndcg"]
    run = read_run(mirror / NOTEBOOK_RUNS / f"{MATHDOWSERS}.tsv.gz")
    evaluation = evaluate(arqmath1_qrels, run, ["arqmath"])
    got = {topic: f"{value:.4f}" for topic, value in evaluation.per_query["nDCG'"].items()}
    assert got == {topic: value for topic, value in expected.items() if topic != "all"}
    mean = evaluation.aggregate["nDCG'"]
    assert f"{mean:.4f}" == expected["all"]


@pytest.mark.mirror
def test_plain_measures_match_staged_outputs_of_an_unfiltered_run(mirror, arqmath1_qrels):
    # This run keeps unjudged posts; paper 001 scored it with plain trec_eval (0.314, 0.097,
    # 0.149, 902 in Table 1) and the staged outputs are plain trec_eval -l2 and ndcg.
    run = read_run(mirror / NOTEBOOK_RUNS / "recall" / f"{PSU_BEST}.tsv.gz")
    summary = trec_eval_output(mirror / NOTEBOOK_RUNS / f"{PSU_BEST}.txt")
    per_topic_ndcg = trec_eval_output(mirror / PSU / "notebooks/BM25+tf+tf.BERT.ndcg.txt")["ndcg"]
    names = {
        "AP(rel=2)": "map",
        "Bpref(rel=2)": "bpref",
        "RR(rel=2)": "recip_rank",
        "Rprec(rel=2)": "Rprec",
        "P(rel=2)@5": "P_5",
        "P(rel=2)@10": "P_10",
        "P(rel=2)@100": "P_100",
        "P(rel=2)@1000": "P_1000",
    }
    evaluation = evaluate(arqmath1_qrels, run, [*names, "nDCG", "arqmath"])
    for column, measure in names.items():
        assert f"{evaluation.aggregate[column]:.4f}" == summary[measure]["all"], column
    assert f"{evaluation.aggregate['Rel_Ret']:.0f}" == summary["num_rel_ret"]["all"]
    got = {topic: f"{value:.4f}" for topic, value in evaluation.per_query["nDCG"].items()}
    assert got == {topic: value for topic, value in per_topic_ndcg.items() if topic != "all"}
    # Prime filtering raises MAP and P@10 above the plain values the summary holds.
    assert evaluation.aggregate["MAP'"] > evaluation.aggregate["AP(rel=2)"]


@pytest.mark.mirror
def test_submitted_run_scores_as_its_judged_only_copy_and_paper_001(mirror, arqmath1_qrels):
    original = read_run(mirror / PSU / "final_runs/psu-task1-auto-both-A.tsv.gz")
    judged_only = read_run(mirror / PSU / "final_runs/prim_psu-task1-auto-both-A.tsv.gz")
    assert len(original) == 98 and sum(map(len, original.values())) == 98_000
    full = evaluate(arqmath1_qrels, original, ["arqmath"])
    prime = evaluate(arqmath1_qrels, judged_only, ["arqmath"])
    for column in ("nDCG'", "MAP'", "P'@10", "BPref", "Rel_Ret"):
        assert full.per_query[column] == pytest.approx(prime.per_query[column]), column
    # Paper 001, Table 1, PSU1 (tf+tf.BERT): 0.263, 0.082, 0.116, 761 over the 77 topics.
    assert len(full.topics["nDCG'"]) == 77
    rounded = [round(full.aggregate[column], 3) for column in ("nDCG'", "MAP'", "P'@10")]
    assert rounded == [0.263, 0.082, 0.116]
    assert full.aggregate["Rel_Ret"] == 761


@pytest.mark.parametrize("seed", range(5))
def test_cutoff_measures_score_the_same_on_the_first_documents_alone(seed, monkeypatch):
    """P@k, R@k and nDCG@k are computed from each topic's first k documents in trec_eval's order
    only; with tied scores around the cutoff and graded qrels, every value equals pytrec_eval's
    on the whole run."""
    import random

    from hybrid_ir.evaluation import measures as evaluation

    rng = random.Random(seed)
    run = {
        f"q{topic}": {f"d{doc}": float(rng.randrange(8)) for doc in rng.sample(range(60), 40)}
        for topic in range(12)
    }
    qrels = {
        f"q{topic}": {f"d{doc}": rng.randrange(-1, 4) for doc in rng.sample(range(60), 25)}
        for topic in range(14)
    }
    measures = ["P@5", "R@20", "nDCG@10", "P(rel=2)@10", "R(rel=2)@3"]
    prime = [*measures, "nDCG(judged_only=True)@10"]  # unjudged documents go first: whole run
    cut, whole = evaluate(qrels, run, measures), evaluate(qrels, run, prime)
    monkeypatch.setattr(evaluation, "_PREFIX_MEASURES", frozenset())
    assert evaluate(qrels, run, measures) == cut
    assert evaluate(qrels, run, prime) == whole


def test_decisive_depth_is_the_largest_cutoff_of_prefix_measures_only():
    from hybrid_ir.evaluation.measures import decisive_depth

    assert decisive_depth(["nDCG@10"]) == 10
    assert decisive_depth(["P@5", "R(rel=2)@100", "nDCG@10"]) == 100
    # The whole ranking matters: MAP, a judged-only measure, Judged@k (averaged over the topics
    # keeping a judged document anywhere), and the ARQMath set (judged-only, BPref, counts).
    for measures in (["nDCG@10", "AP"], ["nDCG(judged_only=True)@10"], ["Judged@10"], ["arqmath"]):
        assert decisive_depth(measures) is None, measures


@pytest.mark.parametrize("seed", range(3))
def test_a_run_cut_at_the_decisive_depth_scores_as_the_whole_run(seed):
    import random

    from hybrid_ir.data.runs import canonicalize
    from hybrid_ir.evaluation.measures import decisive_depth

    rng = random.Random(seed)
    run = {
        f"q{topic}": {f"d{doc}": float(rng.randrange(6)) for doc in rng.sample(range(80), 50)}
        for topic in range(10)
    }
    qrels = {
        f"q{topic}": {f"d{doc}": rng.randrange(0, 3) for doc in rng.sample(range(80), 30)}
        for topic in range(11)
    }
    measures = ["nDCG@10", "P@5", "R@20"]
    depth = decisive_depth(measures)
    assert depth == 20
    assert evaluate(qrels, canonicalize(run, depth), measures) == evaluate(qrels, run, measures)


def test_comments_and_extra_run_fields_score_as_the_plain_files(tmp_path):
    """trec_eval 10.0's input rules: '#' lines skipped in qrels and runs, a run line's fields
    after the sixth ignored. The annotated files give the plain files' numbers, every one."""
    qrels_lines = ["T1 0 a 2\n", "T1 0 b 0\n", "T1 0 c 1\n", "T2 0 d 3\n", "T2 0 e 1\n"]
    run_lines = ["T1 Q0 b 1 3.0 r\n", "T1 Q0 a 2 2.0 r\n", "T1 Q0 x 3 1.0 r\n",
                 "T2 Q0 e 1 2.0 r\n", "T2 Q0 d 2 1.5 r\n"]  # fmt: skip
    (tmp_path / "plain.qrels").write_text("".join(qrels_lines))
    (tmp_path / "plain.trec").write_text("".join(run_lines))
    (tmp_path / "annotated.qrels").write_text(
        "# qrels of a test, grades 0-3\n" + "".join(qrels_lines[:3]) + "  # pool 2\n"
        + "".join(qrels_lines[3:])
    )  # fmt: skip
    (tmp_path / "annotated.trec").write_text(
        "#run r\n" + "".join(line.rstrip("\n") + " 0.87 future\n" for line in run_lines[:3])
        + "\t# second topic\n" + "".join(run_lines[3:])
    )  # fmt: skip
    measures = ["arqmath", "beir", "cf", "P@1", "RR"]
    plain = evaluate_files(tmp_path / "plain.qrels", tmp_path / "plain.trec", measures)
    annotated = evaluate_files(tmp_path / "annotated.qrels", tmp_path / "annotated.trec", measures)
    assert annotated == plain
    assert plain[0]["P@1"] == 0.5 and plain[0]["Rel_Ret"] == 2


def test_iprec_at_recall_follows_trec_eval_9_0_8_not_10_0():
    """docs/evaluation.md: trec_eval 9.0.8 (pytrec_eval's) reads recall level r of a topic with
    R relevant documents at its (int)(r * R + 0.9)-th relevant document, 10.0 at the
    lround(r * R)-th. With R = 3 and r = 0.4 that is the 2nd (9.0.8) against the 1st (10.0)."""
    qrels = {"T1": {"r1": 1, "r2": 1, "r3": 1, "n1": 0}}
    # Relevant at ranks 2, 6 and 7: precision 1/2, 2/6, 3/7 at the three relevant documents.
    ranking = ["n1", "r1", "u1", "u2", "u3", "r2", "r3"]
    run = {"T1": {doc: float(len(ranking) - rank) for rank, doc in enumerate(ranking)}}
    aggregate = evaluate(qrels, run, ["IPrec@0.3", "IPrec@0.4", "IPrec@0.7"]).aggregate
    # 9.0.8: 0.3 -> 1st (0.5), 0.4 -> 2nd (max(2/6, 3/7) = 3/7), 0.7 -> 3rd (3/7); 10.0 would
    # give 0.5 at 0.4 (1st) and 3/7 at 0.7 (lround(2.1) = 2nd).
    assert aggregate == pytest.approx({"IPrec@0.3": 0.5, "IPrec@0.4": 3 / 7, "IPrec@0.7": 3 / 7})


def test_scores_are_ranked_as_32_bit_floats_as_trec_eval_9_0_8_reads_them():
    """docs/evaluation.md: trec_eval 9.0.8 (pytrec_eval's) keeps a score as a 32-bit float, so
    scores that differ only beyond its precision tie and rank by document id, descending;
    trec_eval 10.0 keeps doubles and would rank "a" first."""
    qrels = {"T1": {"a": 1, "b": 0}}
    tied = {"T1": {"a": 1.00000001, "b": 1.0}}  # equal as 32-bit floats
    apart = {"T1": {"a": 1.001, "b": 1.0}}
    assert evaluate(qrels, tied, ["P@1", "RR"]).aggregate == {"P@1": 0.0, "RR": 0.5}
    assert evaluate(qrels, apart, ["P@1", "RR"]).aggregate == {"P@1": 1.0, "RR": 1.0}
