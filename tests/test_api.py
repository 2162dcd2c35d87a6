"""The documented Python API (hybrid_ir.interfaces.api): its examples run as tests, their numbers
are checked against nDCG computed by hand, and runs go to and from PyTerrier's DataFrame."""

from __future__ import annotations

import doctest
import math
import re

import pandas
import pytest

from hybrid_ir.errors import InputFormatError
from hybrid_ir.interfaces import api
from hybrid_ir.interfaces.frames import COLUMNS

QRELS = {"q1": {"d1": 1, "d3": 1}, "q2": {"d2": 1}, "q3": {"d4": 2}}
BM25 = {"q1": {"d1": 2.0, "d2": 1.0, "d3": 0.5}, "q2": {"d2": 1.0, "d1": 0.3},
        "q3": {"d5": 0.9, "d4": 0.4}}  # fmt: skip


def _ndcg(gains: list[int], judged: list[int]) -> float:
    """trec_eval's nDCG: linear gain, log2(rank + 1) discount, ideal from the judgments."""
    dcg = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains))
    ideal = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(sorted(judged)[::-1]))
    return dcg / ideal


def test_the_examples_in_the_api_documentation_run():
    results = doctest.testmod(api, optionflags=doctest.ELLIPSIS)
    assert results.failed == 0
    assert results.attempted >= 20


def test_the_documented_ndcg_is_trec_evals_by_hand():
    by_hand = [_ndcg([1, 0, 1], [1, 1]), _ndcg([1, 0], [1]), _ndcg([0, 2], [2])]
    assert api.evaluate(QRELS, BM25, ["nDCG@10"])["nDCG@10"] == pytest.approx(
        sum(by_hand) / 3, abs=1e-12
    )
    assert round(sum(by_hand) / 3, 4) == 0.8502  # the value the module's example prints
    per_query = api.evaluate(QRELS, BM25, ["nDCG@10"], per_query=True)["nDCG@10"]
    assert per_query == pytest.approx(dict(zip(["q1", "q2", "q3"], by_hand, strict=True)))


def test_a_run_goes_to_pyterriers_frame_and_back():
    frame = api.run_to_frame(BM25)
    assert tuple(frame.columns) == COLUMNS
    assert list(frame["rank"]) == [0, 1, 2, 0, 1, 0, 1]
    assert list(frame["docno"]) == ["d1", "d2", "d3", "d2", "d1", "d5", "d4"]
    assert api.run_from_frame(frame) == BM25
    shuffled = frame.sample(frac=1.0, random_state=3).drop(columns="rank")
    assert api.run_from_frame(shuffled) == BM25


@pytest.mark.parametrize(
    ("frame", "problem"),
    [
        (pandas.DataFrame({"qid": ["q"], "docno": ["d"]}), "no column score"),
        (pandas.DataFrame({"qid": ["q", "q"], "docno": ["d", "d"], "score": [1.0, 2.0]}),
         "row 1 (qid 'q', docno 'd'): the document is on an earlier row too"),
        (pandas.DataFrame({"qid": ["q"], "docno": ["d"], "score": [math.nan]}),
         "row 0 (qid 'q', docno 'd'): score nan is not finite"),
        (pandas.DataFrame({"qid": ["q"], "docno": ["d"], "score": ["high"]}),
         "row 0 (qid 'q', docno 'd'): score 'high' is not a number"),
    ],
)  # fmt: skip
def test_a_bad_frame_is_one_error_naming_the_row(frame, problem):
    with pytest.raises(InputFormatError, match=f"^results: {re.escape(problem)}"):
        api.run_from_frame(frame, name="results")
