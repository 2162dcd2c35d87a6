"""Cross-validation: hand-computed folds, tie rules, and pya0 0.3.7 reproduced in legacy mode."""

from __future__ import annotations

import ast
import contextlib
import io
import re
import types
from pathlib import Path

import numpy as np
import pytest

from hybrid_ir.errors import HybridIRError
from hybrid_ir.evaluation.measures import evaluate
from hybrid_ir.fusion import crossval
from hybrid_ir.fusion.crossval import (
    ALPHAS,
    PAPER_SEED,
    PYA0_DEFAULT_SEED,
    assign_folds,
    by_metric,
    cross_validate,
    crossvalidate_linear,
    fold_assignment_table,
    report,
    tune,
)
from hybrid_ir.fusion.grids import grid, grid_search
from hybrid_ir.fusion.methods import linear
from hybrid_ir.retrieval.pya0_modules import load_crossvalidate

HAND_FOLDS = [["t1", "t2"], ["t3", "t4"], ["t5", "t6"]]
HAND_SCORES = {
    "a": {"t1": 0.2, "t2": 0.4, "t3": 0.6, "t4": 0.8, "t5": 0.1, "t6": 0.3},
    "b": {"t1": 0.5, "t2": 0.5, "t3": 0.2, "t4": 0.2, "t5": 0.9, "t6": 0.7},
}


@pytest.fixture(scope="module")
def pya0_cv() -> types.ModuleType:
    try:
        return load_crossvalidate()[0]
    except HybridIRError as error:
        pytest.skip(str(error))


# --- the core on a hand-made table -------------------------------------------------------------


def test_cross_validate_by_hand():
    # fold 0 trains on t3..t6: a = (.6+.8+.1+.3)/4 = .45, b = (.2+.2+.9+.7)/4 = .50 -> b,
    #   tested on t1, t2: (.5+.5)/2 = .5
    # fold 1 trains on t1, t2, t5, t6: a = (.2+.4+.1+.3)/4 = .25, b = (.5+.5+.9+.7)/4 = .65 -> b,
    #   tested on t3, t4: (.2+.2)/2 = .2
    # fold 2 trains on t1..t4: a = (.2+.4+.6+.8)/4 = .50, b = (.5+.5+.2+.2)/4 = .35 -> a,
    #   tested on t5, t6: (.1+.3)/2 = .2
    result = cross_validate(HAND_SCORES, HAND_FOLDS)
    assert result.params == ["b", "b", "a"]
    assert [fold.train_score for fold in result.folds] == pytest.approx([0.5, 0.65, 0.5])
    assert [fold.test_score for fold in result.folds] == pytest.approx([0.5, 0.2, 0.2])
    assert [fold.topics for fold in result.folds] == [tuple(fold) for fold in HAND_FOLDS]
    assert result.mean_test_score == pytest.approx((0.5 + 0.2 + 0.2) / 3)
    assert result.frequencies == {"b": 2, "a": 1}
    assert list(result.frequencies) == ["b", "a"]  # order first chosen, as pya0 prints it
    assert result.per_topic == pytest.approx(
        {"t1": 0.5, "t2": 0.5, "t3": 0.2, "t4": 0.2, "t5": 0.1, "t6": 0.3}
    )


def test_tie_goes_to_the_first_parameter_given():
    twin = dict(HAND_SCORES["b"])
    assert cross_validate({"b": HAND_SCORES["b"], "twin": twin}, HAND_FOLDS).params == ["b"] * 3
    assert cross_validate({"twin": twin, "b": HAND_SCORES["b"]}, HAND_FOLDS).params == ["twin"] * 3


@pytest.mark.parametrize("mode", ["default", "legacy"])
def test_a_fold_averages_over_the_topics_the_table_holds(mode):
    # x is in a fold but not in the table (not in the qrels, or no judged document kept): it
    # neither counts 0 nor gets a per-topic score; the evaluator's table decides.
    scores = {"a": {"t1": 0.4, "t2": 0.8, "t3": 0.6, "t4": 0.6}}
    result = cross_validate(scores, [["t1", "t2", "x"], ["t3", "t4"]], mode=mode)
    assert [fold.test_score for fold in result.folds] == pytest.approx([0.6, 0.6])
    assert [fold.train_score for fold in result.folds] == pytest.approx([0.6, 0.6])
    assert result.per_topic == scores["a"]


def test_legacy_compares_scores_as_trec_eval_prints_them():
    # 0.50001 and 0.50004 both print as 0.5000: pya0 sees a tie and keeps the first.
    folds = [["t1"], ["t2"]]
    scores = {"low": {"t1": 0.50001, "t2": 0.50001}, "high": {"t1": 0.50004, "t2": 0.50004}}
    assert cross_validate(scores, folds).params == ["high", "high"]
    legacy = cross_validate(scores, folds, mode="legacy")
    assert legacy.params == ["low", "low"]
    assert legacy.mean_test_score == 0.5


@pytest.mark.parametrize("mode", ["default", "legacy"])
def test_a_count_is_summed_over_topics_and_folds(mode):
    # Relevant retrieved per topic: a wins on t1..t4, b on t5, t6.
    counts = {
        "a": {"t1": 3, "t2": 5, "t3": 2, "t4": 4, "t5": 0, "t6": 1},
        "b": {"t1": 1, "t2": 1, "t3": 1, "t4": 1, "t5": 6, "t6": 7},
    }
    # fold 0 trains on t3..t6: a 7, b 15 -> b, tests 1 + 1 = 2; fold 1 trains on t1, t2, t5,
    # t6: a 9, b 15 -> b, tests 1 + 1; fold 2 trains on t1..t4: a 14, b 4 -> a, tests 0 + 1.
    result = cross_validate(counts, HAND_FOLDS, mode=mode, total=True)
    assert result.params == ["b", "b", "a"]
    assert [fold.train_score for fold in result.folds] == [15, 15, 14]
    assert [fold.test_score for fold in result.folds] == [2, 2, 1]
    assert result.mean_test_score == 5 == sum(result.per_topic.values())
    assert isinstance(result.mean_test_score, int)
    assert report({"Rel_Ret": result})["columns"]["Rel_Ret"]["total"] is True


def test_crossvalidate_linear_sums_counts_as_evaluate_does():
    dense, base, qrels = _toy_runs()
    result = crossvalidate_linear(dense, base, qrels, ["arqmath"], k_folds=3, seed=PAPER_SEED)
    rel_ret = result["Rel_Ret"]
    assert rel_ret.total and not result["nDCG'"].total
    # The cross-validated count is the count of the per-fold-alpha run over every topic.
    assert rel_ret.mean_test_score == sum(rel_ret.per_topic.values())
    assert rel_ret.mean_test_score == sum(fold.test_score for fold in rel_ret.folds)
    for fold in rel_ret.folds:
        fused = linear(dense, base, fold.param)
        counted = evaluate(qrels, fused, ["Rel_Ret"]).per_query["Rel_Ret"]
        assert fold.test_score == sum(counted[topic] for topic in fold.topics)


def test_tune_cross_validates_each_metric_separately():
    flipped = {"a": HAND_SCORES["b"], "b": HAND_SCORES["a"]}
    tuned = tune({"m1": HAND_SCORES, "m2": flipped}, HAND_FOLDS)
    assert tuned["m1"].params == ["b", "b", "a"]
    assert tuned["m2"].params == ["a", "a", "b"]


def test_bad_inputs_are_reported():
    with pytest.raises(ValueError, match="mode"):
        cross_validate(HAND_SCORES, HAND_FOLDS, mode="fast")
    with pytest.raises(ValueError, match="no parameter"):
        cross_validate({}, HAND_FOLDS)
    with pytest.raises(ValueError, match="at least 2 folds"):
        cross_validate(HAND_SCORES, [["t1", "t2"]])
    with pytest.raises(ValueError, match="no scored topic"):
        cross_validate(HAND_SCORES, [["t1"], ["y"]])
    with pytest.raises(ValueError, match="into 4 folds"):
        assign_folds(["t1", "t2", "t3"], 4, seed=1)


# --- fold assignment ---------------------------------------------------------------------------


def test_default_folds_are_a_seeded_partition_independent_of_input_order():
    topics = [f"A.{i}" for i in range(1, 23)]
    folds = assign_folds(topics, 5, seed=7)
    assert [len(fold) for fold in folds] == [5, 5, 4, 4, 4]
    assert sorted(topic for fold in folds for topic in fold) == sorted(topics)
    assert assign_folds(reversed(topics), 5, seed=7) == folds
    assert assign_folds(topics + topics[:3], 5, seed=7) == folds
    assert assign_folds(topics, 5, seed=8) != folds


def test_fold_assignment_table():
    rows = fold_assignment_table([["t2", "t1"], ["t3"]])
    assert rows == [
        {"topic": "t2", "fold": 0},
        {"topic": "t1", "fold": 0},
        {"topic": "t3", "fold": 1},
    ]


def _write_run(path: Path, topics: list[str]) -> None:
    lines = [f"{topic} Q0 d{rank} {rank} {10 - rank} tag\n" for topic in topics for rank in (1, 2)]
    path.write_text("".join(lines))


def _split_with_pya0(pya0_cv, files: list[Path], **options) -> tuple[list[list[str]], dict]:
    """Folds as pya0 prints them (ordered) and the topics of each test file it writes."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        pya0_cv.split_run_files(*map(str, files), **options)
    printed = re.findall(r"array\(\[(.*?)\]", output.getvalue(), re.S)
    folds = [re.findall(r"'([^']*)'", fold) for fold in printed]
    written = {
        (file.name, k): {line.split()[0] for line in Path(f"{file}.fold{k}test").open()}
        for file in files
        for k in range(len(folds))
    }
    return folds, written


@pytest.mark.parametrize("seed", [PAPER_SEED, PYA0_DEFAULT_SEED, 5])
def test_legacy_folds_equal_pya0_split_run_files(tmp_path, pya0_cv, seed):
    # Topic order is first appearance: run 1's order (not sorted), then run 2's new topics.
    runs = {
        "run1": ["B.3", "A.10", "A.2", "A.1", "C.7", "A.3", "B.12", "B.1", "A.20", "C.1", "A.5"],
        "run2": ["A.2", "D.4", "A.1", "D.10", "E.2", "A.44", "E.11", "D.3", "A.9", "E.1"],
    }
    for name, topics in runs.items():
        _write_run(tmp_path / name, topics)
    options = {} if seed == PYA0_DEFAULT_SEED else {"seed": seed}
    files = [tmp_path / name for name in runs]
    pya0_folds, written = _split_with_pya0(pya0_cv, files, kfold=5, **options)
    ours = assign_folds(runs["run1"] + runs["run2"], 5, seed=seed, mode="legacy")
    assert ours == pya0_folds
    assert written == {
        (name, k): set(fold) & set(topics)
        for name, topics in runs.items()
        for k, fold in enumerate(ours)
    }


def test_legacy_folds_leave_numpy_global_state_alone():
    np.random.seed(99)
    expected = np.random.random_sample()
    np.random.seed(99)
    assign_folds([f"q{i}" for i in range(10)], 5, seed=1, mode="legacy")
    assert np.random.random_sample() == expected


# --- legacy numbers equal pya0's cross_validate_tsv --------------------------------------------


def _trec_eval_mean(per_topic: dict[str, float], topics: list[str]) -> str:
    """What trec_eval (no -c) prints on the ``all`` line for a run holding ``topics``: the mean
    over those it can score, summed in its (string-sorted) query order, 4 decimals."""
    scored = [per_topic[topic] for topic in sorted(topics) if topic in per_topic]
    total = 0.0
    for value in scored:
        total += value
    return f"{total / len(scored):.4f}"


def _pya0_cross_validate_tsv(pya0_cv, path: Path) -> tuple[dict, float]:
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        pya0_cv.cross_validate_tsv(str(path))
    text = output.getvalue()
    frequencies = ast.literal_eval(re.search(r"dict_items\((.*)\)", text).group(1))
    mean = float(re.search(r"mean test score: (\S+)", text).group(1))
    return dict(frequencies), mean


def _legacy_fixture() -> tuple[dict[str, dict[str, float]], list[list[str]]]:
    """Nine alphas' per-topic scores on 40 topics, 4 of them unjudged (absent from the table).

    ``alpha0.5`` gets a bonus that makes it win some folds, and ``alpha0.6`` is ``alpha0.5`` plus
    2e-5: after trec_eval's 4-decimal printing the two tie, so pya0 keeps ``alpha0.5`` where full
    precision would take ``alpha0.6``.
    """
    rng = np.random.default_rng(2022)
    topics = [f"Q{i}" for i in rng.permutation(40)]
    judged = topics[:36]
    scores = {}
    for alpha in ALPHAS:
        name = f"alpha{alpha}."
        bonus = 0.04 if alpha == 0.5 else 0.0
        scores[name] = {topic: float(rng.uniform(0.2, 0.8)) + bonus for topic in judged}
    scores["alpha0.6."] = {topic: value + 2e-5 for topic, value in scores["alpha0.5."].items()}
    return scores, assign_folds(topics, 5, seed=PAPER_SEED, mode="legacy")


def test_legacy_cross_validation_equals_pya0_cross_validate_tsv(tmp_path, pya0_cv):
    scores, folds = _legacy_fixture()
    lines = []
    for name, per_topic in scores.items():
        for k, test in enumerate(folds):
            train = [topic for other, fold in enumerate(folds) if other != k for topic in fold]
            lines.append(f"{name}fold{k}train\t{_trec_eval_mean(per_topic, train)}\n")
            lines.append(f"{name}fold{k}test\t{_trec_eval_mean(per_topic, test)}\n")
    tsv = tmp_path / "scores.tsv"
    tsv.write_text("".join(lines))

    ours = cross_validate(scores, folds, mode="legacy")
    assert "alpha0.5." in ours.params
    assert "alpha0.6." in cross_validate(scores, folds).params  # full precision breaks the tie
    frequencies, mean = _pya0_cross_validate_tsv(pya0_cv, tsv)
    assert list(ours.frequencies.items()) == list(frequencies.items())
    assert ours.mean_test_score == mean
    for k, fold in enumerate(ours.folds):  # pya0 prints no per-fold choice: ask it fold by fold
        one_fold = tmp_path / f"fold{k}.tsv"
        one_fold.write_text("".join(line for line in lines if f"fold{k}t" in line))
        assert _pya0_cross_validate_tsv(pya0_cv, one_fold) == ({fold.param: 1}, fold.test_score)


# --- grids ---------------------------------------------------------------------------------------


def test_grid_is_a_named_cartesian_product():
    points = grid({"k1": [0.9, 1.2], "b": [0.4, 0.75]})
    assert points == [
        (("k1", 0.9), ("b", 0.4)),
        (("k1", 0.9), ("b", 0.75)),
        (("k1", 1.2), ("b", 0.4)),
        (("k1", 1.2), ("b", 0.75)),
    ]
    assert dict(points[1]) == {"k1": 0.9, "b": 0.75}


def test_grid_search_feeds_cross_validation():
    def evaluate_param(point):
        shift = dict(point)["eta"]
        return {topic: score + shift for topic, score in HAND_SCORES["a"].items()}

    table = grid_search(evaluate_param, grid({"eta": [0.0, 0.5]}))
    assert list(table) == [(("eta", 0.0),), (("eta", 0.5),)]
    assert cross_validate(table, HAND_FOLDS).params == [(("eta", 0.5),)] * 3
    with pytest.raises(ValueError, match="listed twice"):
        grid_search(evaluate_param, [(("eta", 0.0),), (("eta", 0.0),)])


def test_by_metric_transposes_and_keeps_parameter_order():
    table = {0.2: {"m": {"t": 1.0}, "n": {"t": 2.0}}, 0.1: {"m": {"t": 3.0}, "n": {"t": 4.0}}}
    result = by_metric(table)
    assert result == {
        "m": {0.2: {"t": 1.0}, 0.1: {"t": 3.0}},
        "n": {0.2: {"t": 2.0}, 0.1: {"t": 4.0}},
    }
    assert list(result["m"]) == [0.2, 0.1]


# --- integration with fusion and evaluation ------------------------------------------------------


def _toy_runs() -> tuple[dict, dict, dict]:
    rng = np.random.default_rng(3)
    dense, base, qrels = {}, {}, {}
    for i in range(1, 13):
        topic = f"T{i:02d}"
        docs = [f"d{j}" for j in range(30)]
        dense[topic] = {doc: float(rng.uniform(0, 1)) for doc in docs[:20]}
        base[topic] = {doc: float(rng.uniform(5, 30)) for doc in docs[10:]}
        if i != 12:  # T12 is unjudged
            qrels[topic] = {doc: int(rng.integers(0, 3)) for doc in docs[::2]}
    qrels["T99"] = {"d1": 1}  # judged, never retrieved
    return dense, base, qrels


@pytest.mark.parametrize("mode", ["default", "legacy"])
def test_crossvalidate_linear_is_cross_validation_of_fused_runs(mode):
    dense, base, qrels = _toy_runs()
    measures = ["nDCG@10", "P@5"]
    result = crossvalidate_linear(
        dense, base, qrels, measures, k_folds=3, seed=PAPER_SEED, mode=mode
    )
    table = {
        alpha: evaluate(qrels, linear(dense, base, alpha), measures).per_query for alpha in ALPHAS
    }
    topics = list(qrels) if mode == "default" else list(dense)
    folds = assign_folds(topics, 3, seed=PAPER_SEED, mode=mode)
    assert result == tune(by_metric(table), folds, mode)
    assert set(result) == set(measures)
    judged_and_run = set(dense) & set(qrels)
    expected_topics = set(qrels) if mode == "default" else judged_and_run
    assert set(result["nDCG@10"].per_topic) == expected_topics


def test_crossvalidate_linear_checks_the_mode_before_fusing(monkeypatch):
    monkeypatch.setattr(crossval, "linear_sweep", None)
    with pytest.raises(ValueError, match="mode"):
        crossvalidate_linear({}, {}, {}, ["P@5"], seed=1, mode="fast")
