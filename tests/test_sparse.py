"""Sparse models against scores worked out by hand from the papers' formulas, and the tuning."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import sparse

from hybrid_ir.errors import ConfigError
from hybrid_ir.evaluation.measures import recall_curve
from hybrid_ir.fusion.sweeps import ETAS, tune_interleave
from hybrid_ir.retrieval.analysis import Analyzer
from hybrid_ir.retrieval.sparse import (
    PivotedTfidf,
    SparseBM25,
    TfidfCosine,
    grid_search_bm25,
    record_texts,
    top_k,
)

# Terms are whitespace-separated tokens (str.split as the analyzer), so counts are visible:
# a:{d1:1}, b:{d1:2, d2:1}, c:{d2:1, d3:3}, d:{d3:1}; lengths 3, 2, 4; N = 3, mean length L = 3.
CORPUS = {"d1": "a b b", "d2": "b c", "d3": "c c c d"}


def approx(run: dict[str, float]) -> dict[str, float]:
    return pytest.approx(run, rel=1e-12)


class Counting:
    """An analyzer that counts the texts it analyses."""

    def __init__(self) -> None:
        self.texts = 0

    def __call__(self, text: str) -> list[str]:
        self.texts += 1
        return text.split()


# --- BM25, paper 002 Eq. 3-5 -------------------------------------------------------------------

IDF_A = math.log((3 - 1 + 0.5) / (1 + 0.5) + 1)  # Eq. 3, n_t = 1
IDF_B = math.log((3 - 2 + 0.5) / (2 + 0.5) + 1)  # Eq. 3, n_t = 2 (also c)


def test_bm25_scores_by_hand() -> None:
    k1, b = 1.2, 0.75
    model = SparseBM25(str.split, k1=k1, b=b).fit(CORPUS)
    run = model.search({"q": "b c"})
    # Eq. 4: IDF * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / L)), summed over terms (Eq. 5).
    d1 = IDF_B * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 3))
    d2 = 2 * IDF_B * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / 3))
    d3 = IDF_B * 3 * 2.2 / (3 + 1.2 * (0.25 + 0.75 * 4 / 3))
    assert run == {"q": approx({"d2": d2, "d1": d1, "d3": d3})}
    assert list(run["q"]) == ["d2", "d3", "d1"]  # 2.32, 1.47, 1.38 times IDF(b)
    assert isinstance(model.weights, sparse.csc_matrix) and model.weights.shape == (3, 4)


def test_bm25_query_terms_are_a_set_and_unknown_terms_ignored() -> None:
    model = SparseBM25(str.split).fit(CORPUS)
    assert model.search({"q": "b b c c"}) == model.search({"q": "c b"})
    d1 = IDF_A * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 3 / 3))
    assert model.search({"q": "a zebra"}) == {"q": approx({"d1": d1})}
    assert model.search({"q": "zebra"}) == {"q": {}}


def test_bm25_new_parameters_reuse_the_counts() -> None:
    analyzer = Counting()
    model = SparseBM25(analyzer).fit(CORPUS)
    assert analyzer.texts == 3
    model.set_params(k1=2.0, b=0.0)
    assert analyzer.texts == 3
    assert (model.k1, model.b) == (2.0, 0.0)
    # b = 0: no length normalization, g = IDF * tf * (k1 + 1) / (tf + k1).
    expected = {"d3": IDF_B * 3 * 3 / (3 + 2), "d2": IDF_B * 3 / 3}
    assert model.search({"q": "c"}) == {"q": approx(expected)}
    fresh = SparseBM25(str.split, k1=2.0, b=0.0).fit(CORPUS)
    assert (model.weights != fresh.weights).nnz == 0


def test_bm25_rejects_bad_parameters_and_unfitted_use() -> None:
    with pytest.raises(ConfigError, match="b must be in"):
        SparseBM25(str.split, b=1.5)
    with pytest.raises(ConfigError, match="k1 must be"):
        SparseBM25(str.split).set_params(k1=-1)
    with pytest.raises(ConfigError, match="fitted"):
        SparseBM25(str.split).search({"q": "a"})
    with pytest.raises(ConfigError, match="empty corpus"):
        SparseBM25(str.split).fit({})


# --- pivoted TF-IDF, paper 002 Eq. 1, 2, 6-8 -----------------------------------------------------


def test_pivoted_tfidf_scores_by_hand() -> None:
    model = PivotedTfidf(str.split).fit(CORPUS)
    # ||TF(d)||_2: d1 sqrt(1 + 4), d2 sqrt(2), d3 sqrt(9 + 1); the median is sqrt(5).
    assert model.median_norm == pytest.approx(math.sqrt(5))
    idf = {"a": math.log(3), "b": math.log(3 / 2), "c": math.log(3 / 2), "d": math.log(3)}
    counts = {"d1": {"a": 1, "b": 2}, "d2": {"b": 1, "c": 1}, "d3": {"c": 3, "d": 1}}
    documents = {}
    for doc, tf in counts.items():
        norm = math.sqrt(sum(n * n for n in tf.values()))
        pivoted = {t: n / (0.5 * math.sqrt(5) + 0.5 * norm) for t, n in tf.items()}  # Eq. 6
        weights = {t: v * idf[t] for t, v in pivoted.items()}
        length = math.sqrt(sum(w * w for w in weights.values()))
        documents[doc] = {t: w / length for t, w in weights.items()}  # Eq. 8
    # Query "b c": TF'(q) = (1, 1) / sqrt(2) (Eq. 7), times IDF, L2-normalized (Eq. 2).
    query = {"b": 1 / math.sqrt(2), "c": 1 / math.sqrt(2)}
    expected = {
        doc: sum(query.get(t, 0.0) * w for t, w in vector.items())
        for doc, vector in documents.items()
    }
    run = model.search({"q": "b c"})
    assert run == {"q": approx(expected)}
    assert run["q"]["d2"] == pytest.approx(1.0)  # same direction as the query
    # The pivot is a per-document factor that Eq. 8's normalization divides out.
    assert expected["d1"] == pytest.approx(
        2 * math.log(1.5) / math.sqrt(2) / math.hypot(math.log(3), 2 * math.log(1.5))
    )


def test_pivoted_tfidf_term_in_every_document_counts_for_nothing() -> None:
    model = PivotedTfidf(str.split).fit({"x": "a the", "y": "b the"})
    assert model.search({"q": "the"}) == {"q": {}}
    assert list(model.search({"q": "the a"})["q"]) == ["x"]


# --- TF-IDF cosine (scikit-learn) ----------------------------------------------------------------

FRUIT = {"d1": "apple banana", "d2": "banana cherry cherry", "d3": "cherry date"}
SMOOTH_1 = math.log(4 / 2) + 1  # ln((1 + N) / (1 + df)) + 1, df = 1
SMOOTH_2 = math.log(4 / 3) + 1  # df = 2


def test_tfidf_cosine_scores_by_hand() -> None:
    model = TfidfCosine(stop_words=None).fit(FRUIT)
    expected = {
        "d1": SMOOTH_2 / math.hypot(SMOOTH_1, SMOOTH_2),
        "d2": SMOOTH_2 / math.hypot(SMOOTH_2, 2 * SMOOTH_2),
    }
    assert model.search({"q": "Banana"}) == {"q": approx(expected)}
    sublinear = TfidfCosine(stop_words=None, sublinear_tf=True).fit(FRUIT)
    d2 = SMOOTH_2 / math.hypot(SMOOTH_2, (1 + math.log(2)) * SMOOTH_2)
    assert sublinear.search({"q": "banana"})["q"]["d2"] == pytest.approx(d2, rel=1e-12)
    raw_idf = TfidfCosine(stop_words=None, smooth_idf=False).fit(FRUIT)
    d1 = (math.log(3 / 2) + 1) / math.hypot(math.log(3) + 1, math.log(3 / 2) + 1)
    assert raw_idf.search({"q": "banana"})["q"]["d1"] == pytest.approx(d1, rel=1e-12)


def test_tfidf_cosine_stop_words_and_analyzer() -> None:
    english = TfidfCosine().fit(FRUIT)
    assert english.search({"q": "the banana and a"}) == english.search({"q": "banana"})
    custom = TfidfCosine(stop_words=None, analyzer=str.split).fit(FRUIT)
    assert custom.search({"q": "banana"}) == english.search({"q": "banana"})
    no_banana = TfidfCosine(stop_words={"banana"}, analyzer=str.split).fit(FRUIT)
    assert no_banana.search({"q": "banana"}) == {"q": {}}
    with pytest.raises(ConfigError, match="stop-word list"):
        TfidfCosine(stop_words="french")


def test_models_with_the_paper_analyzer() -> None:
    corpus = {"m": "The mice were running home.", "c": "A cat sleeps."}
    for model in (SparseBM25(Analyzer()), PivotedTfidf(Analyzer()), TfidfCosine(None, Analyzer())):
        assert list(model.fit(corpus).search({"q": "mouse runs"})["q"]) == ["m"]


# --- top-k extraction ----------------------------------------------------------------------------


def test_ties_are_broken_by_doc_id_descending() -> None:
    corpus = {"d1": "a", "d2": "a", "d10": "a", "e": "b"}
    run = SparseBM25(str.split).fit(corpus).search({"q": "a"}, k=2)
    assert list(run["q"]) == ["d2", "d10"]  # ids compare as strings, as in trec_eval


def test_top_k_keeps_positive_scores_and_cuts_ties_canonically() -> None:
    scores = sparse.csr_matrix(
        np.array([[0.5, 0.9, 0.5, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0], [-1.0, 0.2, 0, 0, 0]])
    )
    docs = np.array(["a", "b", "c", "d", "e"], dtype=object)
    run = top_k(scores, ["q1", "q2", "q3"], docs, k=3)
    assert run == {"q1": {"b": 0.9, "d": 0.5, "c": 0.5}, "q2": {}, "q3": {"b": 0.2}}
    assert list(run["q1"]) == ["b", "d", "c"]
    with pytest.raises(ConfigError):
        top_k(scores, ["q1", "q2", "q3"], docs, k=0)


# --- tuning and curves ---------------------------------------------------------------------------

# Query "a": the short d1 wins unless b is 0, where d2's two occurrences win. With N = 2,
# IDF(a) = ln(1.2); b = 1, k1 = 1.2: d1 = 2.2 / (1 + 1.2 / 4.5) > d2 = 4.4 / (2 + 1.2 * 8 / 4.5).
B_CORPUS = {"d1": "a", "d2": "a a x x x x x x"}
B_QRELS = {"q": {"d2": 1}}


def test_grid_search_picks_the_first_maximum_in_grid_order() -> None:
    model = SparseBM25(str.split, k1=1.3, b=0.4).fit(B_CORPUS)
    tuned = grid_search_bm25(model, {"q": "a"}, B_QRELS, "P@1", k1s=(1.2, 1.5), bs=(1.0, 0.0))
    assert list(tuned.scores) == [(1.2, 1.0), (1.2, 0.0), (1.5, 1.0), (1.5, 0.0)]
    assert tuned.scores == {(1.2, 1.0): 0.0, (1.2, 0.0): 1.0, (1.5, 1.0): 0.0, (1.5, 0.0): 1.0}
    assert tuned.best == (1.2, 0.0) and tuned.best_score == 1.0
    assert tuned.per_topic[(1.5, 0.0)] == {"q": 1.0}
    assert (model.k1, model.b) == (1.3, 0.4)  # left as it was


def test_grid_search_default_grid_is_the_papers() -> None:
    model = SparseBM25(str.split).fit(B_CORPUS)
    tuned = grid_search_bm25(model, {"q": "a"}, B_QRELS, "P@1", k=1)
    assert len(tuned.scores) == 110
    assert tuned.best == (1.1, 0.0)
    with pytest.raises(ConfigError, match="single measure"):
        grid_search_bm25(model, {"q": "a"}, B_QRELS, "beir", k1s=(1.2,), bs=(0.5,))


def test_tune_interleave_picks_the_first_best_eta() -> None:
    bm25 = {"q": {"a": 4.0, "b": 3.0, "c": 2.0}}
    tfidf = {"q": {"e": 2.0, "f": 1.0}}
    # k = 2: eta >= 0.6 keeps BM25's a, b; eta <= 0.5 takes a, then TF-IDF's e (relevant).
    tuned = tune_interleave(bm25, tfidf, {"q": {"e": 1}}, "P@2", k=2)
    assert list(tuned.scores) == list(ETAS)
    assert tuned.scores[1.0] == tuned.scores[0.6] == 0.0
    assert tuned.scores[0.5] == tuned.scores[0.1] == 0.5
    assert tuned.best == 0.5
    # Nothing better than BM25 alone: the full share, listed first, wins the tie.
    assert tune_interleave(bm25, tfidf, {"q": {"c": 1}}, "P@2", k=2).best == 1.0


def test_recall_curve_averages_over_qrels_topics() -> None:
    run = {"q": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}
    qrels = {"q": {"d2": 1, "d3": 1}, "unanswered": {"x": 1}}
    assert recall_curve(run, qrels, ks=[1, 2, 3]) == {1: 0.0, 2: 0.25, 3: 0.5}


def test_record_texts_joins_title_and_text() -> None:
    records = [{"id": "1", "title": "T", "text": "body"}, {"id": "2", "title": "", "text": "x"}]
    assert record_texts(records) == {"1": "T body", "2": "x"}
