"""The pool-restricted view: qrels cut to the corpus, scored as an independent ir_measures
computation on hand-filtered judgments scores them."""

from __future__ import annotations

import ir_measures
import pytest
from ir_measures import Qrel, ScoredDoc

from hybrid_ir.data.formats import write_records
from hybrid_ir.data.qrels import read_qrels
from hybrid_ir.errors import InputFormatError
from hybrid_ir.evaluation.measures import evaluate
from hybrid_ir.evaluation.views import restrict_qrels, write_restricted_qrels

QRELS = [("q1", "d1", 2), ("q1", "d2", 1), ("q1", "gone1", 3), ("q1", "d3", 0),
         ("q2", "gone2", 2), ("q2", "d4", 1), ("q3", "gone3", 3)]  # fmt: skip
CORPUS = ["d1", "d2", "d3", "d4", "d5"]
RUN = {"q1": {"d2": 3.0, "d5": 2.0, "d1": 1.0}, "q2": {"d4": 2.0, "d1": 1.0}}


def _files(tmp_path):
    qrels = tmp_path / "official.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in QRELS), encoding="utf-8")
    corpus = tmp_path / "corpus.jsonl"
    write_records(corpus, [{"id": doc, "title": "", "text": doc} for doc in CORPUS])
    return qrels, corpus


def test_the_view_keeps_the_judgments_of_documents_the_corpus_holds(tmp_path):
    qrels, corpus = _files(tmp_path)
    out = tmp_path / "restricted.qrels"
    counts = write_restricted_qrels(qrels, corpus, out)
    assert counts == {"judgments": 7, "kept": 4, "topics": 3, "topics_kept": 2}
    assert read_qrels(out) == {"q1": {"d1": 2, "d2": 1, "d3": 0}, "q2": {"d4": 1}}
    assert restrict_qrels(read_qrels(qrels), set(CORPUS)) == read_qrels(out)


def test_restricted_scores_equal_ir_measures_on_hand_filtered_judgments(tmp_path):
    qrels, corpus = _files(tmp_path)
    out = tmp_path / "restricted.qrels"
    write_restricted_qrels(qrels, corpus, out)
    measures = ["nDCG@10", "AP", "R@10"]
    ours = evaluate(read_qrels(out), RUN, measures)
    kept = [Qrel(q, d, r) for q, d, r in QRELS if d in CORPUS]
    scored = [ScoredDoc(q, d, s) for q, docs in RUN.items() for d, s in docs.items()]
    for measure in measures:
        parsed = ir_measures.parse_measure(measure)
        independent = {m.query_id: m.value for m in parsed.iter_calc(kept, scored)}
        assert ours.per_query[measure] == pytest.approx(independent)
    official = evaluate(read_qrels(qrels), RUN, measures)
    # The absent relevant documents lowered the official scores; the view does not count them.
    assert official.per_query["nDCG@10"]["q1"] < ours.per_query["nDCG@10"]["q1"]
    assert official.per_query["R@10"]["q2"] == 0.5 and ours.per_query["R@10"]["q2"] == 1.0


def test_a_view_without_any_judged_document_is_refused(tmp_path):
    qrels, _ = _files(tmp_path)
    corpus = tmp_path / "other.jsonl"
    write_records(corpus, [{"id": "x", "title": "", "text": "x"}])
    with pytest.raises(InputFormatError, match="no judged document is in the corpus"):
        write_restricted_qrels(qrels, corpus, tmp_path / "out.qrels")
    assert not (tmp_path / "out.qrels").exists()
