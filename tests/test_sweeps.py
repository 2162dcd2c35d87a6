"""Fusion sweeps on two hand-made runs whose fused rankings are worked out below.

Scores are dyadic fractions and lambda steps by 1/4, so every fused score is exact and the one
tie (at lambda 1/2 in q1 and q2) is a true tie, broken by document id descending. With
``score_hybrid`` (``lam * dense + (1 - lam) * sparse``, a missing document scoring 0):

    q1 (relevant dA): dA = 3/4 - lam/2, dB = 1/4 + lam/2   -> dA first iff lam < 1/2
    q2 (relevant dC): dC = 1/4 + lam/2, dD = 3/4 - lam/2   -> dC first iff lam > 1/2
    q3 (relevant dE): dE = 5/8, dF = lam, dG = 1 - lam     -> dE first iff 3/8 < lam < 5/8

    P@1 at lam = 0, 1/4, 1/2, 3/4, 1:   q1 1 1 0 0 0   q2 0 0 0 1 1   q3 0 0 1 0 0
"""

from __future__ import annotations

import pytest

from hybrid_ir.errors import ConfigError
from hybrid_ir.fusion.methods import fuse
from hybrid_ir.fusion.sweeps import sweep

LAMS = [0.0, 0.25, 0.5, 0.75, 1.0]

DENSE = {
    "q1": {"dA": 0.25, "dB": 0.75},
    "q2": {"dC": 0.75, "dD": 0.25},
    "q3": {"dE": 0.625, "dF": 1.0},
}
SPARSE = {
    "q1": {"dA": 0.75, "dB": 0.25},
    "q2": {"dC": 0.25, "dD": 0.75},
    "q3": {"dE": 0.625, "dG": 1.0},
}

QRELS_ALL = {"q1": {"dA": 1, "dB": 0}, "q2": {"dC": 1}, "q3": {"dE": 2}}
QRELS_Q1 = {"q1": {"dA": 1}}
QRELS_Q3 = {"q3": {"dE": 1}}

P1 = {
    "q1": [1, 1, 0, 0, 0],
    "q2": [0, 0, 0, 1, 1],
    "q3": [0, 0, 1, 0, 0],
}


def _sweep(qrels, measures=("P@1",), select="P@1", runs=(DENSE, SPARSE), **options):
    return sweep("score_hybrid", list(runs), "lam", LAMS, qrels, list(measures), select, **options)


def test_scores_per_value_by_hand():
    report, _ = _sweep(QRELS_ALL)
    # Mean over the three qrels topics: 1/3 at every lambda, a five-way tie.
    expected = [sum(P1[topic][i] for topic in P1) / 3 for i in range(len(LAMS))]
    assert expected == pytest.approx([1 / 3] * 5)
    assert [score["P@1"] for score in report["scores"]] == pytest.approx(expected)
    assert report["selection_scores"] == pytest.approx(expected)
    # The first maximum wins the tie.
    assert report["best"] == 0.0
    assert report["method"] == "score_hybrid"
    assert report["parameter"] == "lam"
    assert report["values"] == LAMS
    assert report["select"] == "P@1"
    assert report["selected_on"] == "evaluated topics"


def test_several_measures_are_reported_and_one_selects():
    # RR on q3: dE is first at 1/2, second at 1/4 and 3/4 (below dG resp. dF), and at 0 and 1
    # second too (dE 5/8 against dG 1 resp. dF 1).
    report, _ = _sweep(QRELS_Q3, measures=["P@1", "RR"], select="RR")
    assert [score["P@1"] for score in report["scores"]] == [0, 0, 1, 0, 0]
    assert [score["RR"] for score in report["scores"]] == pytest.approx([0.5, 0.5, 1, 0.5, 0.5])
    assert report["selection_scores"] == pytest.approx([0.5, 0.5, 1, 0.5, 0.5])
    assert report["best"] == 0.5


@pytest.mark.parametrize(
    ("qrels", "scores", "best"),
    [
        (QRELS_Q1, [1, 1, 0, 0, 0], 0.0),  # tie of 0 and 1/4: the first
        (QRELS_Q3, [0, 0, 1, 0, 0], 0.5),  # a single maximum inside the grid
        ({"q2": {"dC": 1}}, [0, 0, 0, 1, 1], 0.75),  # tie of 3/4 and 1: the first
        ({"q1": {"dA": 1}, "q3": {"dE": 1}}, [0.5, 0.5, 0.5, 0, 0], 0.0),
    ],
)
def test_selection_is_the_first_maximum(qrels, scores, best):
    report, run = _sweep(qrels)
    assert [score["P@1"] for score in report["scores"]] == pytest.approx(scores)
    assert report["best"] == best
    assert run == fuse("score_hybrid", [DENSE, SPARSE], lam=best)


def test_returned_run_is_the_fusion_at_the_selected_value():
    _, run = _sweep({"q2": {"dC": 1}})
    # lam = 3/4: q1 dA = 3/8, dB = 5/8; q2 dC = 5/8, dD = 3/8; q3 dF = 3/4, dE = 5/8, dG = 1/4.
    assert run == {
        "q1": {"dB": 0.625, "dA": 0.375},
        "q2": {"dC": 0.625, "dD": 0.375},
        "q3": {"dF": 0.75, "dE": 0.625, "dG": 0.25},
    }
    assert [list(docs) for docs in run.values()] == [["dB", "dA"], ["dC", "dD"], ["dF", "dE", "dG"]]


def test_the_tie_at_one_half_goes_to_the_larger_document_id():
    _, run = _sweep(QRELS_Q3)
    assert run["q1"] == {"dB": 0.5, "dA": 0.5} and list(run["q1"]) == ["dB", "dA"]
    assert list(run["q2"]) == ["dD", "dC"]
    assert list(run["q3"]) == ["dE", "dG", "dF"]


def test_fixed_params_are_passed_to_every_fusion():
    report, run = _sweep(QRELS_Q3, params={"k": 1})
    assert report["best"] == 0.5
    assert run == {"q1": {"dB": 0.5}, "q2": {"dD": 0.5}, "q3": {"dE": 0.625}}


def test_select_on_uses_the_development_qrels():
    # The evaluated topic q1 prefers lam 0; the development qrels (q3) prefer 1/2.
    report, run = _sweep(QRELS_Q1, select_on=([DENSE, SPARSE], QRELS_Q3))
    assert [score["P@1"] for score in report["scores"]] == [1, 1, 0, 0, 0]
    assert report["selection_scores"] == [0, 0, 1, 0, 0]
    assert report["best"] == 0.5
    assert report["selected_on"] == "development split"
    assert run == fuse("score_hybrid", [DENSE, SPARSE], lam=0.5)
    assert list(run["q1"]) == ["dB", "dA"]  # worse on the evaluated topic than lam 0 would be


def test_select_on_uses_the_development_runs():
    # Same qrels, but the development runs are swapped, which turns lam into 1 - lam: there
    # q1's dA is first iff lam > 1/2, so the development split picks 3/4 (first of 3/4 and 1).
    report, run = _sweep(QRELS_Q1, select_on=([SPARSE, DENSE], QRELS_Q1))
    assert [score["P@1"] for score in report["scores"]] == [1, 1, 0, 0, 0]
    assert report["selection_scores"] == [0, 0, 0, 1, 1]
    assert report["best"] == 0.75
    # The run returned is still the evaluated runs' fusion, in their order.
    assert run == fuse("score_hybrid", [DENSE, SPARSE], lam=0.75)
    assert list(run["q1"]) == ["dB", "dA"]


def test_select_on_needs_only_the_selecting_measure():
    report, _ = _sweep(
        QRELS_Q1, measures=["RR"], select="P@1", select_on=([DENSE, SPARSE], QRELS_Q3)
    )
    assert list(report["scores"][0]) == ["RR"]
    assert report["best"] == 0.5


def test_a_swept_parameter_also_fixed_is_a_config_error():
    with pytest.raises(ConfigError, match="'lam' is also fixed"):
        _sweep(QRELS_Q1, params={"lam": 0.5})


def test_sweep_of_another_method():
    # Linear interpolation of min-max normalized scores; alpha weighs the first run. In q1 the
    # normalized dense run is dA 0, dB 1 and the sparse run dA 1, dB 0: dA first iff alpha < 1/2.
    report, run = sweep("linear", [DENSE, SPARSE], "alpha", [0.25, 0.75], QRELS_Q1, ["P@1"], "P@1")
    assert [score["P@1"] for score in report["scores"]] == [1, 0]
    assert report["best"] == 0.25
    assert list(run["q1"]) == ["dA", "dB"]
