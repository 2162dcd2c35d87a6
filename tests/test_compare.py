"""hybrid-ir compare: scipy's t-test and permutation test on the same per-topic scores, exact
enumeration of sign flips, Holm by hand, topic-set mismatches, the three formats, determinism.

The fixture has 12 topics T.1 ... T.12 with 20 graded documents each; the baseline and run
"alpha" answer every topic, "beta" only T.1 ... T.10, and two runs named "alpha" live in other
folders. Every file is written here in TREC format.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import permutation_test, ttest_rel

from hybrid_ir.cli.main import main
from hybrid_ir.data.qrels import read_qrels
from hybrid_ir.data.runs import read_run
from hybrid_ir.errors import EvaluationError, ParameterError
from hybrid_ir.evaluation.measures import evaluate
from hybrid_ir.evaluation.significance import holm, randomization_test
from hybrid_ir.reports.compare import compare_runs, render_csv, render_latex, short_names

TOPICS = [f"T.{i}" for i in range(1, 13)]
MEASURES = ["P@5", "nDCG@10", "Rel_Ret"]


def _write_run(path: Path, rng: np.random.Generator, topics: list[str], tag: str) -> str:
    lines = []
    for topic in topics:
        docs = [f"{topic}-d{j}" for j in rng.permutation(20)[:15]] + [f"{topic}-unjudged"]
        for rank, doc in enumerate(docs, start=1):
            lines.append(f"{topic} Q0 {doc} {rank} {100 - rank} {tag}\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    rng = np.random.default_rng(7)
    qrels = tmp_path / "tiny.qrels"
    qrels.write_text(
        "".join(
            f"{topic} 0 {topic}-d{j} {int(rng.integers(0, 4))}\n"
            for topic in TOPICS
            for j in range(20)
        ),
        encoding="utf-8",
    )
    return {
        "qrels": str(qrels),
        "baseline": _write_run(tmp_path / "base_line.trec", rng, TOPICS, "base"),
        "alpha": _write_run(tmp_path / "alpha.trec", rng, TOPICS, "alpha"),
        "beta": _write_run(tmp_path / "beta.trec", rng, TOPICS[:10], "b"),
        "alpha_x": _write_run(tmp_path / "x" / "alpha.trec", rng, TOPICS, "ax"),
        "alpha_y": _write_run(tmp_path / "y" / "alpha.trec", rng, TOPICS, "ay"),
    }


def _table(files: dict[str, str], *names: str, **options):
    qrels = read_qrels(files["qrels"])
    runs = [(files[name], read_run(files[name])) for name in names]
    settings = {"permutations": 2000, "seed": 5, **options}
    baseline = (files["baseline"], read_run(files["baseline"]))
    return compare_runs((files["qrels"], qrels), baseline, runs, MEASURES, **settings)


def _per_topic(files: dict[str, str], name: str, measure: str) -> dict[str, float]:
    qrels = read_qrels(files["qrels"])
    return evaluate(qrels, read_run(files[name]), [measure]).per_query[measure]


# t-test and scores against scipy and evaluate ---------------------------------------------------


def test_ttest_and_scores_equal_scipy_on_the_shared_topics(files):
    table = _table(files, "alpha", "beta")
    assert [(row.measure, row.run) for row in table.rows] == [
        (measure, run) for measure in MEASURES for run in ("alpha", "beta")
    ]
    for row in table.rows:
        shared = TOPICS if row.run == "alpha" else TOPICS[:10]
        mine = _per_topic(files, row.run, row.measure)
        theirs = _per_topic(files, "baseline", row.measure)
        x, y = [mine[t] for t in shared], [theirs[t] for t in shared]
        expected = ttest_rel(x, y)
        assert row.ttest.n == len(shared)
        assert row.ttest.pvalue == pytest.approx(float(expected.pvalue), rel=1e-12)
        assert row.ttest.statistic == pytest.approx(float(expected.statistic), rel=1e-12)
        if row.measure == "Rel_Ret":  # a count: summed, as evaluate's Rel_Ret
            assert (row.score, row.baseline) == (sum(x), sum(y))
        else:
            assert row.score == pytest.approx(np.mean(x), rel=1e-12)
            assert row.baseline == pytest.approx(np.mean(y), rel=1e-12)
        assert row.difference == row.score - row.baseline
        assert 0 < row.randomization.pvalue <= 1


def test_csv_carries_scipy_p_values_unrounded(files, capsys):
    code = main(
        ["compare", "--qrels", files["qrels"], "--baseline", files["baseline"], files["alpha"],
         "--measures", "P@5", "--format", "csv", "--permutations", "500"]
    )  # fmt: skip
    assert code == 0
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    x = [_per_topic(files, "alpha", "P@5")[t] for t in TOPICS]
    y = [_per_topic(files, "baseline", "P@5")[t] for t in TOPICS]
    assert float(row["ttest_p"]) == pytest.approx(float(ttest_rel(x, y).pvalue), rel=1e-12)
    expected = randomization_test(
        dict(zip(TOPICS, x, strict=True)), dict(zip(TOPICS, y, strict=True)), 500, 1234
    )
    assert float(row["randomization_p"]) == expected.pvalue
    assert (row["run"], row["baseline"], row["topics"], row["dropped_topics"]) == (
        "alpha", "base_line", "12", "0"
    )  # fmt: skip
    assert (row["permutations"], row["exact"], row["seed"]) == ("500", "False", "1234")


# randomization test ----------------------------------------------------------------------------


def _sample(n: int, seed: int, shift: float) -> tuple[dict[str, float], dict[str, float]]:
    rng = np.random.default_rng(seed)
    run = {f"q{i}": float(rng.uniform(0, 1)) for i in range(n)}
    reference = {topic: value - shift + float(rng.normal(0, 0.3)) for topic, value in run.items()}
    return run, reference


def _enumerated(run: dict[str, float], reference: dict[str, float]) -> float:
    differences = [run[t] - reference[t] for t in run]
    observed = abs(sum(differences))
    extreme = sum(
        abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed - 1e-12
        for signs in itertools.product((1, -1), repeat=len(differences))
    )
    return extreme / 2 ** len(differences)


def test_exact_when_permutations_cover_every_sign_flip():
    run, reference = _sample(8, 1, 0.15)
    expected = _enumerated(run, reference)
    assert 0.01 < expected < 0.5  # a p-value the test can get wrong
    for permutations in (256, 10_000):
        result = randomization_test(run, reference, permutations, seed=99)
        assert result.exact and result.permutations == 256 and result.n == 8
        assert result.pvalue == expected
        assert result.statistic == pytest.approx(np.mean([run[t] - reference[t] for t in run]))


def test_exact_equals_scipy_permutation_test():
    run, reference = _sample(10, 2, 0.1)
    topics = sorted(run)
    scipy_result = permutation_test(
        ([run[t] for t in topics], [reference[t] for t in topics]),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=2**10,
        vectorized=True,
    )
    assert randomization_test(run, reference, 2**10).pvalue == pytest.approx(
        scipy_result.pvalue, rel=1e-12
    )


def test_monte_carlo_close_to_exact_enumeration():
    run, reference = _sample(12, 3, 0.1)
    exact = randomization_test(run, reference, 2**12).pvalue
    sampled = randomization_test(run, reference, 3000, seed=11)
    assert not sampled.exact and sampled.permutations == 3000
    assert 0.02 < exact < 0.5
    error = 4 * math.sqrt(exact * (1 - exact) / 3000) + 1 / 3001
    assert abs(sampled.pvalue - exact) < error


def test_monte_carlo_close_to_scipy_permutation_test():
    run, reference = _sample(30, 4, 0.08)
    topics = sorted(run)
    scipy_result = permutation_test(
        ([run[t] for t in topics], [reference[t] for t in topics]),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        n_resamples=20_000,
        vectorized=True,
        random_state=0,
    )
    ours = randomization_test(run, reference, 20_000).pvalue
    assert 0.02 < scipy_result.pvalue < 0.5
    # Both are Monte-Carlo estimates: 4 standard errors of their difference.
    p = scipy_result.pvalue
    assert abs(ours - p) < 4 * math.sqrt(2 * p * (1 - p) / 20_000) + 2 / 20_001


def test_ties_in_exact_arithmetic_count_as_extreme():
    """P@10-like scores: sign flips whose sums equal the observed one in exact arithmetic
    differ from it by rounding in floating point, and must count."""
    run_tenths, reference_tenths = [3, 8, 7, 0, 4, 9, 6, 0, 8, 8], [9, 1, 0, 9, 0, 5, 0, 3, 5, 4]
    run = {f"q{i}": t / 10 for i, t in enumerate(run_tenths)}
    reference = {f"q{i}": t / 10 for i, t in enumerate(reference_tenths)}
    exact = [Fraction(a - b, 10) for a, b in zip(run_tenths, reference_tenths, strict=True)]
    signs = np.array(list(itertools.product((1, -1), repeat=10)))
    extreme = sum(abs(sum(s * d for s, d in zip(v, exact, strict=True))) >= abs(sum(exact))
                  for v in signs)  # fmt: skip
    assert randomization_test(run, reference, 2**10).pvalue == extreme / 2**10
    # The case is one where comparing floating-point sums as they come miscounts the ties.
    differences = np.array([run[t] - reference[t] for t in run])
    assert np.count_nonzero(np.abs(signs @ differences) >= abs(differences.sum())) != extreme


def test_randomization_degenerate_inputs():
    assert randomization_test({"a": 1.0}, {"a": 0.0}).pvalue == 1.0
    same = {f"q{i}": 0.5 for i in range(6)}
    assert randomization_test(same, dict(same)).pvalue == 1.0  # no difference: every flip ties
    with pytest.raises(ParameterError, match="permutations must be from 1 to 1,000,000, got 0"):
        randomization_test(same, same, permutations=0)


def test_seed_fixes_the_monte_carlo_p_value():
    run, reference = _sample(40, 5, 0.05)
    first, again = (randomization_test(run, reference, 1000, seed=3) for _ in range(2))
    assert first == again
    others = {randomization_test(run, reference, 1000, seed=s).pvalue for s in range(4, 10)}
    assert len(others | {first.pvalue}) > 1


# Holm ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pvalues, adjusted",
    [
        # sorted 0.005, 0.01, 0.03, 0.04: x4, x3, x2, x1, then never below the one before
        ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
        ([0.02, 0.5, 0.9], [0.06, 1.0, 1.0]),  # capped at 1
        ([0.01, 0.01], [0.02, 0.02]),
        ([0.3], [0.3]),
        ([], []),
    ],
)
def test_holm_by_hand(pvalues, adjusted):
    assert holm(pvalues) == pytest.approx(adjusted, abs=1e-15)


def test_holm_adjusts_across_the_runs_of_each_measure(files):
    plain = _table(files, "alpha", "beta", "alpha_x")
    adjusted = _table(files, "alpha", "beta", "alpha_x", adjust=True)
    for measure in MEASURES:
        rows = [row for row in plain.rows if row.measure == measure]
        holm_rows = [row for row in adjusted.rows if row.measure == measure]
        assert [r.ttest_holm for r in holm_rows] == holm([r.ttest.pvalue for r in rows])
        assert [r.randomization_holm for r in holm_rows] == holm(
            [r.randomization.pvalue for r in rows]
        )
        assert all(r.ttest_holm is None for r in rows)


# topic sets ------------------------------------------------------------------------------------


def test_different_topic_sets_are_compared_on_the_shared_topics(files, capsys):
    code = main(
        ["compare", "--qrels", files["qrels"], "--baseline", files["baseline"], files["alpha"],
         files["beta"], "--measures", "P@5", "--permutations", "100"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0 and err == ""  # evaluate's unanswered-topic warning does not apply
    lines = out.splitlines()
    assert lines[5].startswith("|  | beta | 10 | ")
    assert (
        "- Topics compared with the baseline, of the 12 qrels topics (a topic is dropped unless "
        "both runs answer it): alpha 12 (0 dropped), beta 10 (2 dropped)." in lines
    )


def test_fewer_than_two_shared_topics_is_one_line_naming_the_runs(files, tmp_path, capsys):
    lone = tmp_path / "lone.trec"
    lone.write_text("T.3 Q0 T.3-d1 1 2.0 lone\nT.99 Q0 x 1 1.0 lone\n", encoding="utf-8")
    code = main(
        ["compare", "--qrels", files["qrels"], "--baseline", files["baseline"], files["alpha"],
         str(lone)]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err == (
        f"hybrid-ir error: lone ({lone}) and the baseline base_line ({files['baseline']}) share "
        f"1 topic(s) with {files['qrels']}: at least 2 are needed\n"
    )


def test_a_run_given_twice_is_an_error(files):
    with pytest.raises(ParameterError, match="is given twice"):
        _table(files, "alpha", "alpha")
    with pytest.raises(EvaluationError):
        qrels = (files["qrels"], read_qrels(files["qrels"]))
        baseline = (files["baseline"], read_run(files["baseline"]))
        compare_runs(qrels, baseline, [("lone", {"T.1": {"x": 1.0}})], ["P@5"], 10, 1)


# names -----------------------------------------------------------------------------------------


def test_short_names_are_stems_told_apart_by_their_folders(tmp_path):
    paths = [tmp_path / "a" / "run.tsv.gz", tmp_path / "b" / "run.trec", tmp_path / "other.txt"]
    assert short_names(paths) == ["a/run", "b/run", "other"]
    deep = [tmp_path / "x" / "s" / "run.trec", tmp_path / "y" / "s" / "run.trec"]
    assert short_names(deep) == ["x/s/run", "y/s/run"]
    suffixes = [tmp_path / "run.trec", tmp_path / "run.tsv"]
    assert short_names(suffixes) == [str(path.resolve()) for path in suffixes]
    with pytest.raises(ParameterError, match="given twice"):
        short_names([tmp_path / "run.trec", tmp_path / "." / "run.trec"])


def test_run_column_shows_short_names(files):
    table = _table(files, "alpha", "alpha_x", "alpha_y")
    names = list(dict.fromkeys(row.run for row in table.rows))
    folder = Path(files["alpha"]).parent.name
    assert names == [f"{folder}/alpha", "x/alpha", "y/alpha"]
    assert table.baseline == "base_line"


# formats and determinism -----------------------------------------------------------------------


def _cli(capsys, files, *extra: str) -> str:
    code = main(
        ["compare", "--qrels", files["qrels"], "--baseline", files["baseline"], files["alpha"],
         files["beta"], "--measures", *MEASURES, "--permutations", "300", *extra]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


@pytest.mark.parametrize("style", ["md", "csv", "latex", "json"])
def test_output_is_byte_identical_for_a_fixed_seed(capsys, files, style):
    first = _cli(capsys, files, "--format", style, "--seed", "8", "--holm")
    assert first == _cli(capsys, files, "--format", style, "--seed", "8", "--holm")
    other_seed = _cli(capsys, files, "--format", style, "--seed", "9", "--holm")
    assert first != other_seed  # the randomization p-values move with the seed


def test_markdown_table(capsys, files):
    table = _table(files, "alpha", "beta", permutations=300, seed=1234)
    lines = _cli(capsys, files).splitlines()
    assert lines[0] == "# Runs against the baseline base_line (qrels tiny.qrels)"
    assert lines[2] == "| measure | run | topics | score | base_line | Δ | t-test p | rand. p |"
    first = table.rows[0]
    star = "**" if first.ttest.pvalue < 0.01 else "*" if first.ttest.pvalue < 0.05 else ""
    assert lines[4] == (
        f"| P@5 | alpha | 12 | {first.score:.4f}{star} | {first.baseline:.4f} | "
        f"{first.difference:+.4f} | {first.ttest.pvalue:.4f} | {first.randomization.pvalue:.4f} |"
    )
    rel_ret = next(row for row in table.rows if row.measure == "Rel_Ret")
    count_line = next(line for line in lines if line.startswith("| Rel_Ret | alpha | 12 | "))
    assert f" | {rel_ret.baseline} | {rel_ret.difference:+d} | " in count_line  # integers
    assert "- rand. p: two-tailed paired randomization test of the mean difference, 300 random " \
        "sign flips of the per-topic differences, seed 1234; p = (1 + flips at least as " \
        "extreme) / (1 + flips), or exact over all 2^n flips when 2^n <= 300." in lines  # fmt: skip
    assert lines[-1].startswith(f"- Files: base_line = {files['baseline']}; alpha = ")


def test_holm_columns_and_markers_follow_the_adjusted_p(files):
    table = _table(files, "alpha", "beta", adjust=True)
    text = render_csv(table)
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 2 * len(MEASURES)
    for row, computed in zip(rows, table.rows, strict=True):
        assert float(row["ttest_p_holm"]) == computed.ttest_holm
        assert float(row["randomization_p_holm"]) == computed.randomization_holm
        assert computed.ttest_holm >= computed.ttest.pvalue
        if computed.measure == "Rel_Ret":  # a diagnostic count: never marked
            assert computed.marker == ""
            continue
        assert computed.marker == ("**" if computed.ttest_holm < 0.01 else
                                   "*" if computed.ttest_holm < 0.05 else "")  # fmt: skip


def test_latex_table(files):
    table = _table(files, "alpha", "beta", adjust=True)
    text = render_latex(table)
    lines = text.splitlines()
    assert lines[:4] == [
        r"\begin{table}[t]", r"\centering", r"\begin{tabular}{llrrrrrrrr}", r"\toprule"
    ]  # fmt: skip
    assert lines[4] == (
        r"measure & run & topics & score & base\_line & $\Delta$ & t-test p & rand. p & "
        r"t-test p (Holm) & rand. p (Holm) \\"
    )
    body = [line for line in lines if line.endswith(r"\\")][1:]
    assert len(body) == 2 * len(MEASURES)
    assert all(line.count(" & ") == 9 for line in body)
    assert body[4].startswith(r"Rel\_Ret & alpha & 12 & ")
    assert lines[-5:-3] == [r"\bottomrule", r"\end{tabular}"]
    assert lines[-2:] == [r"\label{tab:compare}", r"\end{table}"]
    caption = lines[-3]
    assert caption.startswith(r"\caption{Runs against the baseline base\_line (qrels tiny.qrels).")
    assert "Holm--Bonferroni" in caption and r"all $2^n$ flips when $2^n$ $\le$ 2000." in caption
    assert "`" not in caption and "<" not in caption.replace("$<$", "")
    assert text.count(r"\midrule") == len(MEASURES)


# the mirror's ARQMath-1 runs -------------------------------------------------------------------

ARQMATH1_RUNS = (
    "final_runs/prim_psu-task1-auto-both-P.tsv.gz",
    "final_runs/prim_psu-task1-auto-both-A2.tsv.gz",
    "notebooks/final_runs/Linked_MSE.tsv",
    "notebooks/final_runs/prim_Approach0.tsv.gz",
    "notebooks/final_runs/prim_MIRMU-task1-Ensemble-auto-both-A.tsv.gz",
    "notebooks/final_runs/prim_MathDowsers-task1-alpha05noReRank-auto-both-A.tsv.gz",
)


@pytest.mark.mirror
def test_arqmath1_runs_against_psu1(mirror):
    runs = mirror / "arqmath" / "runs" / "arqmath1-psu"
    qrels = mirror / "arqmath" / "pya0-topics-and-qrels" / "qrels.arqmath-2020-task1.txt"
    baseline = runs / "final_runs" / "psu-task1-auto-both-A.tsv.gz"
    table = compare_runs(
        (str(qrels), read_qrels(qrels)), (str(baseline), read_run(baseline)),
        [(str(runs / path), read_run(runs / path)) for path in ARQMATH1_RUNS],
        ["arqmath"], permutations=1000, seed=1234,
    )  # fmt: skip
    assert len(table.rows) == 7 * len(ARQMATH1_RUNS)  # the 7 arqmath columns
    assert {c.run: c.dropped for c in table.coverage} == {
        "prim_psu-task1-auto-both-P": 0, "prim_psu-task1-auto-both-A2": 0, "Linked_MSE": 6,
        "prim_Approach0": 1, "prim_MIRMU-task1-Ensemble-auto-both-A": 0,
        "prim_MathDowsers-task1-alpha05noReRank-auto-both-A": 0,
    }  # fmt: skip
    assert all(0 < r.ttest.pvalue <= 1 and 0 < r.randomization.pvalue <= 1 for r in table.rows)
    rel_ret = {row.run: row.score for row in table.rows if row.measure == "Rel_Ret"}
    # Paper 001's Table 1: MathDowsers 804 and PSU1 761 relevant retrieved (relevance >= 2).
    assert rel_ret["prim_MathDowsers-task1-alpha05noReRank-auto-both-A"] == 804
    assert {
        row.baseline for row in table.rows if row.measure == "Rel_Ret" and row.ttest.n == 77
    } == {761}


def test_json_carries_the_csv_numbers_unrounded_under_documented_keys(capsys, files):
    rows = list(csv.DictReader(io.StringIO(_cli(capsys, files, "--format", "csv", "--holm"))))
    document = json.loads(_cli(capsys, files, "--format", "json", "--holm"))
    assert set(document) == {"baseline", "baseline_file", "qrels", "permutations", "seed", "holm",
                             "coverage", "comparisons"}  # fmt: skip
    assert document["holm"] is True and document["baseline"] == "base_line"
    dropped = {row["run"]: int(row["dropped_topics"]) for row in rows}
    assert {c["run"]: c["dropped_topics"] for c in document["coverage"]} == dropped
    assert len(document["comparisons"]) == len(rows) == 2 * len(MEASURES)
    for row, item in zip(rows, document["comparisons"], strict=True):
        assert (item["measure"], item["run"], item["topics"]) == (
            row["measure"], row["run"], int(row["topics"])
        )  # fmt: skip
        for key in ("score", "baseline_score", "difference", "ttest_p", "randomization_p",
                    "ttest_p_holm", "randomization_p_holm"):  # fmt: skip
            assert item[key] == float(row[key]), key


def test_json_writes_a_number_that_is_not_finite_as_null():
    from hybrid_ir.evaluation.significance import RandomizationTest, TTest
    from hybrid_ir.reports.compare import CompareTable, Comparison, Coverage, render_json

    nan = float("nan")
    row = Comparison("P@5", "same", "same.trec", 6, 0.5, 0.5, False, TTest(nan, nan, 6),
                     RandomizationTest(0.0, 1.0, 6, 64, True))  # fmt: skip
    table = CompareTable("base", "base.trec", "q.qrels", (row,), (Coverage("same", 6, 6),), 64, 1,
                         False)  # fmt: skip
    (item,) = json.loads(render_json(table))["comparisons"]
    assert (item["t_statistic"], item["ttest_p"], item["randomization_p"]) == (None, None, 1.0)
    assert item["difference"] == 0.0 and "ttest_p_holm" not in item


def test_json_for_a_run_that_fails_to_parse_is_one_line_naming_it_and_no_document(
    capsys, files, tmp_path
):
    broken = tmp_path / "broken.trec"
    broken.write_text("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 two 1.0 r\n")
    code = main(
        ["compare", "--qrels", files["qrels"], "--baseline", files["baseline"], str(broken),
         "--measures", "P@5", "--format", "json"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code != 0 and out == ""
    (line,) = err.strip().splitlines()
    assert line == f"hybrid-ir error: {broken}:2: rank 'two' is not an integer"


# measures that fit the qrels, undefined scores, diagnostic columns -----------------------------

SURE = [f"T.{i}" for i in range(1, 9)]


@pytest.fixture
def judged(tmp_path: Path) -> dict[str, str]:
    """Graded qrels (three documents each at grades 2, 1 and 0 per topic, and a grade-3 document
    only in T.99, which no run answers); "good" ranks 1 to 3 of a topic's grade-2 documents
    first, "blind" only unjudged documents."""
    qrels = tmp_path / "graded.qrels"
    qrels.write_text(
        "".join(
            f"{topic} 0 {topic}-{kind}{j} {grade}\n"
            for topic in SURE
            for kind, grade in (("r", 2), ("p", 1), ("n", 0))
            for j in range(3)
        )
        + "T.99 0 T.99-best 3\n",
        encoding="utf-8",
    )
    good, blind = [], []
    for index, topic in enumerate(SURE):
        docs = [f"{topic}-r{j}" for j in range(index % 3 + 1)] + [f"{topic}-n0", f"{topic}-p0"]
        good += [f"{topic} Q0 {doc} {rank} {10 - rank} good\n" for rank, doc in enumerate(docs, 1)]
        blind += [f"{topic} Q0 {topic}-u{j} {j + 1} {10 - j} blind\n" for j in range(5)]
    (tmp_path / "good.trec").write_text("".join(good), encoding="utf-8")
    (tmp_path / "blind.trec").write_text("".join(blind), encoding="utf-8")
    files = {"qrels": "graded.qrels", "good": "good.trec", "blind": "blind.trec"}
    return {name: str(tmp_path / file) for name, file in files.items()}


def _compare(capsys, judged, *extra: str) -> tuple[int, str, str]:
    code = main(["compare", "--qrels", judged["qrels"], "--baseline", judged["blind"],
                 judged["good"], "--permutations", "200", *extra])  # fmt: skip
    out, err = capsys.readouterr()
    return code, out, err


def _md_row(out: str, measure: str) -> list[str]:
    line = next(line for line in out.splitlines() if line.startswith(f"| {measure} | good |"))
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_a_measure_without_paired_topics_or_relevant_documents_is_undefined(capsys, judged):
    measures = ["nDCG'", "P(rel=3)@5", "P@5"]
    code, out, err = _compare(capsys, judged, "--measures", *measures)
    assert code == 0, err
    # The blind baseline keeps no judged document: nDCG' pairs no topic. No answered topic has
    # a grade-3 document: P(rel=3)@5 has nothing relevant to find. Neither is 0 against 0, p 1.
    assert _md_row(out, "nDCG'") == ["nDCG'", "good", "0", "–", "–", "–", "–", "–"]
    assert _md_row(out, r"P(rel=3)@5") == ["P(rel=3)@5", "good", "8", "–", "–", "–", "–", "–"]
    precision = _md_row(out, "P@5")
    assert precision[2:5] == ["8", "0.5750**", "0.0000"]  # (15 grade-2 + 8 grade-1) / 40
    assert any(line.startswith("- –: undefined") for line in out.splitlines())
    code, out, err = _compare(capsys, judged, "--measures", *measures, "--format", "json")
    undefined = {item["measure"]: item for item in json.loads(out)["comparisons"]}
    keys = ("score", "baseline_score", "difference", "t_statistic", "ttest_p", "randomization_p",
            "permutations", "exact")  # fmt: skip
    for measure in ("nDCG'", "P(rel=3)@5"):
        assert [undefined[measure][key] for key in keys] == [None] * len(keys), measure
    assert undefined["P@5"]["score"] == pytest.approx(0.575)
    code, out, err = _compare(capsys, judged, "--measures", *measures, "--format", "latex")
    assert r"nDCG' & good & 0 & -- & -- & -- & -- & -- \\" in out.splitlines()
    code, out, err = _compare(capsys, judged, "--measures", *measures, "--format", "csv")
    row = next(r for r in csv.DictReader(io.StringIO(out)) if r["measure"] == "nDCG'")
    assert (row["score"], row["baseline_score"], row["ttest_p"], row["randomization_p"]) == (
        "", "", "", ""
    )  # fmt: skip


def test_diagnostic_columns_get_no_significance_marker(capsys, judged):
    code, out, err = _compare(capsys, judged, "--measures", "P@5", "Judged@10", "Rel_Ret")
    assert code == 0, err
    # Every column differs in every topic, p < 0.01 for each; only P@5 is effectiveness.
    assert _md_row(out, "P@5")[3] == "0.5750**"
    judged_row, rel_ret = _md_row(out, "Judged@10"), _md_row(out, "Rel_Ret")
    assert judged_row[3:5] == ["1.0000", "0.0000"] and judged_row[6] == "<0.0001"
    assert rel_ret[3:5] == ["15", "0"] and float(rel_ret[6]) < 0.01
    assert "- Judged@10, Rel_Ret: diagnostics of the runs and their judgments, not " \
        "effectiveness: never marked." in out.splitlines()  # fmt: skip


def test_default_measures_follow_the_qrels_and_say_so(capsys, judged, tmp_path):
    code, out, err = _compare(capsys, judged)
    assert code == 0, err
    assert err == (
        "hybrid-ir: measures: arqmath (the qrels' grades are 0-3: relevant from 2; --measures "
        "to choose)\n"
    )
    measures = [line.split(" | ")[0].lstrip("| ") for line in out.splitlines()
                if " | good | " in line]  # fmt: skip
    assert measures == ["nDCG'", "MAP'", "P'@10", "BPref", "Judged@10", "Judged@1000", "Rel_Ret"]
    # Binary qrels, SciFact's kind: every grade 1. arqmath's MAP' (relevant from 2) would print
    # 0 against 0 with p = 1; the default is beir.
    binary = tmp_path / "binary.qrels"
    binary.write_text(
        "".join(f"{t} 0 {t}-r{j} 1\n" for t in SURE for j in range(3)), encoding="utf-8"
    )
    code, out, err = _compare(capsys, {**judged, "qrels": str(binary)})
    assert code == 0, err
    assert err == "hybrid-ir: measures: beir (the qrels' grades are 1; --measures to choose)\n"
    measures = [line.split(" | ")[0].lstrip("| ") for line in out.splitlines()
                if " | good | " in line]  # fmt: skip
    assert measures == ["nDCG@10", "R@100", "R@1000"]


def test_a_measure_no_grade_makes_relevant_is_one_line_naming_it(capsys, judged, tmp_path):
    binary = tmp_path / "binary.qrels"
    binary.write_text("".join(f"{t} 0 {t}-r0 {j % 2}\n" for j, t in enumerate(SURE)))
    code, out, err = _compare(capsys, {**judged, "qrels": str(binary)}, "--measures", "arqmath")
    assert (code, out) == (1, "")
    assert err == (
        f"hybrid-ir error: {binary}: MAP' counts relevance >= 2 as relevant, but the qrels' "
        "grades are 0-1: no topic has a relevant document for it (--measures to choose others)\n"
    )
