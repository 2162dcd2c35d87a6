"""The ``hybrid-ir`` command on tiny hand-made files: output checked by hand, one-line errors.

Qrels (4 topics) and two runs; "dense" is the first run of every fusion:

    q1: a 1, b 0         dense: q1 a 3, x 2        base: q1 b 2, a 1
    q2: c 2, d 0                q2 d 3, c 2              q2 c 5, d 1
    q3: e 1, f 1                q3 e 3, y 2, f 1         q3 f 2, e 1
    q4: g 1                     q4 z 1                   q4 g 1

Scores of dense (x, y, z are unjudged):

    R@1:   q1 1, q2 0, q3 1/2, q4 0        -> 0.375
    R@2:   q1 1, q2 1, q3 1/2, q4 0        -> 0.625
    nDCG': q1 1 (x dropped), q2 (2 / log2 3) / 2, q3 1 (y dropped); q4 keeps no judged
           document and is not averaged    -> (2 + 1 / log2 3) / 3
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import io
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hybrid_ir.cli.main import build_parser, main

QRELS = "q1 0 a 1\nq1 0 b 0\nq2 0 c 2\nq2 0 d 0\nq3 0 e 1\nq3 0 f 1\nq4 0 g 1\n"
DENSE = [("q1", "a", 3), ("q1", "x", 2), ("q2", "d", 3), ("q2", "c", 2), ("q3", "e", 3),
         ("q3", "y", 2), ("q3", "f", 1), ("q4", "z", 1)]  # fmt: skip
BASE = [("q1", "b", 2), ("q1", "a", 1), ("q2", "c", 5), ("q2", "d", 1), ("q3", "f", 2),
        ("q3", "e", 1), ("q4", "g", 1)]  # fmt: skip

NDCG_Q2 = 1 / math.log2(3)
NDCG_PRIME = (1 + NDCG_Q2 + 1) / 3


def _write_run(path: Path, lines, tag: str) -> Path:
    path.write_text(
        "".join(f"{t} Q0 {d} {r} {s} {tag}\n" for r, (t, d, s) in enumerate(lines, 1)),
        encoding="utf-8",
    )
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    qrels = tmp_path / "tiny.qrels"
    qrels.write_text(QRELS, encoding="utf-8")
    return {
        "qrels": str(qrels),
        "dense": str(_write_run(tmp_path / "dense.trec", DENSE, "dense")),
        "base": str(_write_run(tmp_path / "base.trec", BASE, "base")),
        "dir": str(tmp_path),
    }


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# evaluate --------------------------------------------------------------------------------------


def _evaluate(capsys, files, *extra: str) -> str:
    code, out, err = _run(
        capsys,
        ["evaluate", "--qrels", files["qrels"], "--run", files["dense"],
         "--measures", "recall(1,2)", "nDCG'", *extra],
    )  # fmt: skip
    assert code == 0, err
    return out


def test_evaluate_markdown(capsys, files):
    lines = _evaluate(capsys, files).splitlines()
    assert lines == [
        "| run | topic | R@1 | R@2 | nDCG' |",
        "|---|---|---|---|---|",
        f"| {files['dense']} | all | 0.3750 | 0.6250 | {NDCG_PRIME:.4f} |",
    ]
    assert f"{NDCG_PRIME:.4f}" == "0.8770"


def test_evaluate_markdown_per_query(capsys, files):
    lines = _evaluate(capsys, files, "--per-query").splitlines()
    run = files["dense"]
    assert lines[2:] == [
        f"| {run} | all | 0.3750 | 0.6250 | 0.8770 |",
        f"| {run} | q1 | 1.0000 | 1.0000 | 1.0000 |",
        f"| {run} | q2 | 0.0000 | 1.0000 | {NDCG_Q2:.4f} |",
        f"| {run} | q3 | 0.5000 | 0.5000 | 1.0000 |",
        f"| {run} | q4 | 0.0000 | 0.0000 | – |",  # no judged document: not averaged
    ]
    assert f"{NDCG_Q2:.4f}" == "0.6309"


def test_evaluate_csv_per_query(capsys, files):
    out = _evaluate(capsys, files, "--per-query", "--format", "csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["run", "topic", "R@1", "R@2", "nDCG'"]
    assert [row[1] for row in rows[1:]] == ["all", "q1", "q2", "q3", "q4"]
    assert all(row[0] == files["dense"] for row in rows[1:])
    all_row = [float(value) for value in rows[1][2:]]
    assert all_row == pytest.approx([0.375, 0.625, NDCG_PRIME])
    assert [float(value) for value in rows[3][2:]] == pytest.approx([0.0, 1.0, NDCG_Q2])
    assert rows[5][2:] == ["0.0", "0.0", ""]


def test_evaluate_json_per_query(capsys, files):
    rows = json.loads(_evaluate(capsys, files, "--per-query", "--format", "json"))
    assert [row["topic"] for row in rows] == ["all", "q1", "q2", "q3", "q4"]
    assert rows[2] == {
        "run": files["dense"], "topic": "q2", "R@1": 0.0, "R@2": 1.0,
        "nDCG'": pytest.approx(NDCG_Q2),
    }  # fmt: skip
    assert rows[4]["nDCG'"] is None  # q4 keeps no judged document
    assert rows[0]["nDCG'"] == pytest.approx(NDCG_PRIME)


def test_evaluate_json_two_runs(capsys, files):
    code, out, err = _run(
        capsys,
        ["evaluate", "--qrels", files["qrels"], "--run", files["dense"], files["base"],
         "--measures", "P@1", "--format", "json"],
    )  # fmt: skip
    assert code == 0, err
    rows = json.loads(out)
    # base ranks b (0) first in q1, c (2) in q2, f (1) in q3, g (1) in q4: P@1 = 3/4.
    assert rows == [
        {"run": files["dense"], "topic": "all", "P@1": pytest.approx(0.5)},
        {"run": files["base"], "topic": "all", "P@1": pytest.approx(0.75)},
    ]


def test_evaluate_measure_set_and_a_single_set_column(capsys, files):
    code, out, err = _run(
        capsys,
        ["evaluate", "--qrels", files["qrels"], "--run", files["dense"],
         "--measures", "arqmath", "--format", "json"],
    )  # fmt: skip
    assert code == 0, err
    (row,) = json.loads(out)
    assert list(row) == [
        "run", "topic", "nDCG'", "MAP'", "P'@10", "BPref", "Judged@10", "Judged@1000", "Rel_Ret"
    ]  # fmt: skip
    assert row["nDCG'"] == pytest.approx(NDCG_PRIME)
    # Rel_Ret counts relevance >= 2 retrieved, summed: only c in q2.
    assert row["Rel_Ret"] == 1.0
    # Judged@10: q1 1/2, q2 1, q3 2/3, q4 0.
    assert row["Judged@10"] == pytest.approx((1 / 2 + 1 + 2 / 3 + 0) / 4)
    # MAP' (relevance >= 2, unjudged dropped, judged topics q1-q3): only q2 has a relevant
    # document, at rank 2 of [d, c].
    assert row["MAP'"] == pytest.approx((0 + 1 / 2 + 0) / 3)

    code, out, _ = _run(
        capsys,
        ["evaluate", "--qrels", files["qrels"], "--run", files["dense"],
         "--measures", "nDCG'", "--format", "json"],
    )  # fmt: skip
    assert code == 0
    assert json.loads(out) == [
        {"run": files["dense"], "topic": "all", "nDCG'": pytest.approx(NDCG_PRIME)}
    ]


def test_evaluate_unknown_measure_is_one_line(capsys, files):
    code, out, err = _run(
        capsys,
        ["evaluate", "--qrels", files["qrels"], "--run", files["dense"], "--measures", "Nope@3"],
    )
    assert code == 1
    assert out == ""
    assert err.startswith("hybrid-ir error: ") and err.count("\n") == 1
    assert "Nope@3" in err


@pytest.mark.parametrize(
    ("measure", "problem"),
    [
        ("P@0", "measure 'P@0': the cut-off"),
        ("Judged@0", "measure 'Judged@0': the cut-off"),
        ("nDCG@10.5", "measure 'nDCG@10.5': the cut-off"),
        ("recall(0)", "recall(0): a cut-off is not a positive integer"),
        ("ERR@10", "measure 'ERR@10' is not one trec_eval computes"),
    ],
)
def test_a_measure_pytrec_eval_would_crash_on_is_one_line_before_it(files, measure, problem):
    """In a child process: P@0 aborted the interpreter (exit 134) inside pytrec_eval, recall(0)
    was an IndexError and ERR@10 ran gdeval's Perl script, which failed."""
    argv = ["evaluate", "--qrels", files["qrels"], "--run", files["dense"], "--measures", measure]
    program = "import sys; from hybrid_ir.cli.main import main; sys.exit(main())"
    child = subprocess.run(
        [sys.executable, "-c", program, *argv],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert child.returncode == 1
    assert child.stdout == "" and child.stderr.count("\n") == 1
    assert problem in child.stderr


# fuse ------------------------------------------------------------------------------------------


def _fuse(capsys, files, *args: str) -> tuple[list[str], str]:
    output = str(Path(files["dir"]) / "fused.trec")
    code, out, err = _run(capsys, ["fuse", *args, files["dense"], files["base"], "-o", output])
    assert code == 0, err
    return Path(output).read_text(encoding="utf-8").splitlines(), out


def test_fuse_linear(capsys, files):
    # min-max per topic, alpha on dense: q1 dense a 1 x 0, base b 1 a 0, so
    # a = 0.25, x = 0, b = 0.75; q4 is range 0 in both runs (all 0), tie by doc id descending.
    lines, out = _fuse(capsys, files, "--method", "linear", "--alpha", "0.25")
    assert lines == [
        "q1 Q0 b 1 0.75 linear",
        "q1 Q0 a 2 0.25 linear",
        "q1 Q0 x 3 0.0 linear",
        "q2 Q0 c 1 0.75 linear",
        "q2 Q0 d 2 0.25 linear",
        "q3 Q0 f 1 0.75 linear",
        "q3 Q0 e 2 0.25 linear",
        "q3 Q0 y 3 0.125 linear",
        "q4 Q0 z 1 0.0 linear",
        "q4 Q0 g 2 0.0 linear",
    ]
    assert out == f"10 lines written to {Path(files['dir']) / 'fused.trec'}\n"


def test_fuse_rrf(capsys, files):
    # 1 / (k + rank) with k = 1: rank 1 gives 1/2, rank 2 1/3, rank 3 1/4.
    lines, _ = _fuse(capsys, files, "--method", "rrf", "--rrf-k", "1", "--tag", "mine")
    assert lines == [
        "q1 Q0 a 1 0.8333333333333333 mine",  # 1/2 + 1/3
        "q1 Q0 b 2 0.5 mine",
        "q1 Q0 x 3 0.3333333333333333 mine",
        "q2 Q0 d 1 0.8333333333333333 mine",  # tie with c: doc id descending
        "q2 Q0 c 2 0.8333333333333333 mine",
        "q3 Q0 e 1 0.8333333333333333 mine",
        "q3 Q0 f 2 0.75 mine",  # 1/4 + 1/2
        "q3 Q0 y 3 0.3333333333333333 mine",
        "q4 Q0 z 1 0.5 mine",
        "q4 Q0 g 2 0.5 mine",
    ]


def test_fuse_interleave(capsys, files):
    # depth 2, eta 0.5: dense's first document, then base's first unless already taken.
    lines, out = _fuse(capsys, files, "--method", "interleave", "--eta", "0.5", "--depth", "2")
    assert lines == [
        "q1 Q0 a 1 2.0 interleave",
        "q1 Q0 b 2 1.0 interleave",
        "q2 Q0 d 1 2.0 interleave",
        "q2 Q0 c 2 1.0 interleave",
        "q3 Q0 e 1 2.0 interleave",
        "q3 Q0 f 2 1.0 interleave",
        "q4 Q0 z 1 2.0 interleave",
        "q4 Q0 g 2 1.0 interleave",
    ]
    assert out.startswith("8 lines written to ")


def test_fuse_default_output_name(capsys, files, monkeypatch):
    monkeypatch.chdir(files["dir"])
    code, out, _ = _run(capsys, ["fuse", "--method", "combsum", files["dense"], files["base"]])
    assert code == 0
    assert out == "10 lines written to combsum.trec\n"
    fused = Path(files["dir"], "combsum.trec").read_text(encoding="utf-8")
    # q1: a = 1 + 0, b = 0 + 1, x = 0 + 0; a and b tie, the larger id first.
    assert fused.startswith("q1 Q0 b 1 1.0 combsum\nq1 Q0 a 2 1.0 combsum\n")


def test_unknown_fusion_method_is_one_line(capsys, files, tmp_path):
    output = tmp_path / "never.trec"
    code, out, err = _run(
        capsys, ["fuse", "--method", "nope", files["dense"], files["base"], "-o", str(output)]
    )
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("hybrid-ir error: unknown fusion method 'nope'")
    assert not output.exists()


@pytest.mark.parametrize(
    "args, problem",
    [
        (["--method", "linear"], "needs parameter alpha"),
        (["--method", "linear", "--alpha", "1.5"], "must lie in [0, 1]"),
        (["--method", "rrf", "--alpha", "0.5"], "has no parameter alpha"),
    ],
)
def test_bad_fusion_parameters_are_one_line(capsys, files, args, problem):
    code, _, err = _run(capsys, ["fuse", *args, files["dense"], files["base"]])
    assert code == 1
    assert err.startswith("hybrid-ir error: ") and err.count("\n") == 1
    assert problem in err


# crossval --------------------------------------------------------------------------------------

# Per-topic scores of alpha * minmax(dense) + (1 - alpha) * minmax(base), by hand:
# alpha 0.2 ranks b, c, f, z first (q1..q4); alpha 0.8 ranks a, d, e, z first.
CV_SCORES = {
    "R@1": {
        0.2: {"q1": 0, "q2": 1, "q3": 0.5, "q4": 0},
        0.8: {"q1": 1, "q2": 0, "q3": 0.5, "q4": 0},
    },
    "P@1": {0.2: {"q1": 0, "q2": 1, "q3": 1, "q4": 0}, 0.8: {"q1": 1, "q2": 0, "q3": 1, "q4": 0}},
}


def _mean(scores: dict[str, float], topics: list[str]) -> float:
    return sum(scores[topic] for topic in topics) / len(topics)


def test_crossval_two_folds(capsys, files, tmp_path):
    report_path = tmp_path / "cv" / "report.json"
    report_path.parent.mkdir()
    code, out, err = _run(
        capsys,
        ["crossval", files["dense"], files["base"], "--qrels", files["qrels"],
         "--measures", "R@1", "P@1", "--folds", "2", "--alphas", "0.2", "0.8",
         "--seed", "7", "-o", str(report_path)],
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(report_path.read_text(encoding="utf-8"))
    # Seed 7 draws folds {q1, q3} and {q2, q4} (default folds depend on topic set and seed only).
    folds = report["folds"]
    assert folds == [["q1", "q3"], ["q2", "q4"]]
    # Fold 0 trains on q2, q4, where 0.2 wins (R@1 1/2 vs 0), and tests on q1, q3: (0 + 1/2) / 2.
    # Fold 1 trains on q1, q3, where 0.8 wins (3/4 vs 1/4), and tests on q2, q4: 0.
    # P@1 likewise: 0.2 then 0.8, fold scores 1/2 and 0.
    assert out.splitlines() == [
        "| metric | cross-validated | alpha per fold |",
        "|---|---|---|",
        "| R@1 | 0.1250 | 0.2 0.8 |",
        "| P@1 | 0.2500 | 0.2 0.8 |",
    ]
    assert sorted(report["columns"]) == ["P@1", "R@1"]  # the JSON keys are sorted
    for column, scores in CV_SCORES.items():
        result = report["columns"][column]
        assert result["frequencies"] == [[0.2, 1], [0.8, 1]]
        per_topic, test_scores = {}, []
        for index, (alpha, test, train) in enumerate(
            [(0.2, folds[0], folds[1]), (0.8, folds[1], folds[0])]
        ):
            other = 0.8 if alpha == 0.2 else 0.2
            assert _mean(scores[alpha], train) > _mean(scores[other], train)
            test_scores.append(_mean(scores[alpha], test))
            per_topic |= {topic: scores[alpha][topic] for topic in test}
            assert result["folds"][index] == {
                "fold": index,
                "param": alpha,
                "train_score": pytest.approx(_mean(scores[alpha], train)),
                "test_score": pytest.approx(test_scores[-1]),
            }
        assert result["per_topic"] == pytest.approx(per_topic)
        assert result["mean_test_score"] == pytest.approx(sum(test_scores) / 2)


def test_crossval_without_report(capsys, files):
    code, out, _ = _run(
        capsys,
        ["crossval", files["dense"], files["base"], "--qrels", files["qrels"],
         "--measures", "P@1", "--folds", "2", "--alphas", "0.5"],
    )  # fmt: skip
    assert code == 0
    # A single alpha is every fold's choice. At 0.5, q1 (a and b both 0.5) and q2 (c and d)
    # tie and the larger id ranks first (b, d: P@1 0); q3 ranks e or f (both 0.5, f first: 1),
    # q4 z (0); so whatever the folds, the mean of the two fold means is 1/4.
    assert out.splitlines()[2] == "| P@1 | 0.2500 | 0.5 0.5 |"


def test_crossval_more_folds_than_topics_is_one_line(capsys, files):
    code, _, err = _run(
        capsys,
        ["crossval", files["dense"], files["base"], "--qrels", files["qrels"],
         "--measures", "P@1", "--folds", "5"],
    )  # fmt: skip
    assert code == 1
    assert err.startswith("hybrid-ir error: ") and err.count("\n") == 1
    assert "4 topic(s) into 5 folds" in err


# measures chosen from the qrels -----------------------------------------------------------------


def test_evaluate_and_crossval_choose_their_measures_from_the_qrels(capsys, files, tmp_path):
    graded_note = (
        "hybrid-ir: measures: arqmath (the qrels' grades are 0-2: relevant from 2; --measures "
        "to choose)\n"
    )
    code, out, err = _run(capsys, ["evaluate", "--qrels", files["qrels"], "--run", files["dense"]])
    assert (code, err) == (0, graded_note)
    assert out.splitlines()[0] == (
        "| run | topic | nDCG' | MAP' | P'@10 | BPref | Judged@10 | Judged@1000 | Rel_Ret |"
    )
    binary = tmp_path / "binary.qrels"
    binary.write_text(QRELS.replace("c 2", "c 1"), encoding="utf-8")
    code, out, err = _run(capsys, ["evaluate", "--qrels", str(binary), "--run", files["dense"]])
    assert (code, err) == (0, "hybrid-ir: measures: beir (the qrels' grades are 0-1; --measures "
                              "to choose)\n")  # fmt: skip
    assert out.splitlines()[0] == "| run | topic | nDCG@10 | R@100 | R@1000 |"
    code, out, err = _run(
        capsys, ["crossval", files["dense"], files["base"], "--qrels", files["qrels"], "--folds",
                 "2", "--alphas", "0.5"],
    )  # fmt: skip
    assert (code, err) == (0, graded_note)
    assert [line.split(" | ")[0] for line in out.splitlines()[2:]] == [
        "| nDCG'", "| MAP'", "| P'@10", "| BPref", "| Judged@10", "| Judged@1000", "| Rel_Ret"
    ]  # fmt: skip
    code, _, err = _run(capsys, ["evaluate", "--qrels", files["qrels"], "--run", files["dense"],
                                 "--measures", "P@1"])  # fmt: skip
    assert (code, err) == (0, "")  # measures given: nothing to say


@pytest.mark.parametrize("command", ["evaluate", "crossval"])
def test_a_measure_no_qrels_grade_makes_relevant_is_one_line(capsys, files, command):
    runs = ["--run", files["dense"]] if command == "evaluate" else [files["dense"], files["base"]]
    code, out, err = _run(
        capsys, [command, *runs, "--qrels", files["qrels"], "--measures", "P@1", "P(rel=3)@5"]
    )
    assert (code, out) == (1, "")
    assert err == (
        f"hybrid-ir error: {files['qrels']}: P(rel=3)@5 counts relevance >= 3 as relevant, but "
        "the qrels' grades are 0-2: no topic has a relevant document for it (--measures to "
        "choose others)\n"
    )


# check -----------------------------------------------------------------------------------------

SUMMARY_HEADER = "collection\trun\tmetric\texpected\tactual\ttolerance\tstatus\n"


def test_check_passes_and_fails(capsys, tmp_path):
    summary = tmp_path / "summary.tsv"
    summary.write_text(
        SUMMARY_HEADER
        + "cf\tbm25-flat (all qrels)\tP@10\t0.5\t0.500000\t0.0001\tPASS\n"
        + "cf\tbm25-flat (all qrels)\tMAP\t0.3\t0.300000\t0.0001\tPASS\n",
        encoding="utf-8",
    )
    assert _run(capsys, ["check", str(summary)]) == (0, "all 2 checks passed\n", "")
    with open(summary, "a", encoding="utf-8") as out:
        out.write("cf\tbm25-flat (all qrels)\tNDCG@10\t0.4\t0.390000\t0.0001\tFAIL\n")
    code, out, err = _run(capsys, ["check", str(summary)])
    assert (code, out) == (1, "")
    assert err.startswith("hybrid-ir error: 1 of 3 checks failed") and err.count("\n") == 1
    assert "NDCG@10: expected 0.4 +- 0.0001, got 0.390000" in err


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("P@10\t0.5\t0.9\t0.01\tPASS", "P@10: expected 0.5 +- 0.01, got 0.9, outside the band, "
         "but its status says 'PASS'"),
        ("P@10\t0.5\t0.505\t0.01\tFAIL", "P@10: expected 0.5 +- 0.01, got 0.505, inside the "
         "band, but its status says 'FAIL'"),
        ("P@10\t0.5\t0.5\t0.01\tpassed", "P@10: expected 0.5 +- 0.01, got 0.5, inside the band, "
         "but its status says 'passed'"),
        ("P@10\t0.5\tn/a\t0.01\tPASS", "P@10: expected '0.5', actual 'n/a' and tolerance '0.01' "
         "are not all numbers"),
    ],
    ids=["pass outside the band", "fail inside it", "other status", "not a number"],
)  # fmt: skip
def test_check_recomputes_every_status_from_expected_actual_and_tolerance(
    capsys, tmp_path, row, problem
):
    summary = tmp_path / "summary.tsv"
    summary.write_text(
        SUMMARY_HEADER
        + "cf\tbm25-flat (all qrels)\tMAP\t0.3\t0.300000\t0.0001\tPASS\n"
        + f"cf\tbm25-flat (all qrels)\t{row}\n",
        encoding="utf-8",
    )
    code, out, err = _run(capsys, ["check", str(summary)])
    assert (code, out) == (1, "")
    assert err == (
        f"hybrid-ir error: 1 of 2 checks failed: {summary}:3: cf bm25-flat (all qrels) {problem}\n"
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (SUMMARY_HEADER, "lists no checks: nothing was compared with its band"),
        ("run\tstatus\ncf\tPASS\n", ":1: not a checks summary: the header must be collection"),
        (SUMMARY_HEADER + "cf\tbm25-flat\tP@10\t0.5\tPASS\n", ":2: 5 columns where the header"),
    ],
    ids=["empty", "other header", "short row"],
)
def test_check_refuses_a_summary_that_checked_nothing_or_is_not_one(
    capsys, tmp_path, content, problem
):
    summary = tmp_path / "summary.tsv"
    summary.write_text(content, encoding="utf-8")
    code, out, err = _run(capsys, ["check", str(summary)])
    assert (code, out) == (1, "")
    assert err.startswith("hybrid-ir error: ") and err.count("\n") == 1
    assert problem in err


# bad arguments ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", ["-1", "4294967296", "1.5"])
def test_a_seed_no_generator_takes_is_a_usage_error(capsys, files, seed):
    """numpy's generators raise on a negative seed (a traceback before)."""
    base = ["--qrels", files["qrels"], "--seed", seed]
    for argv in (
        ["crossval", files["dense"], files["base"], *base],
        ["compare", files["dense"], files["base"], *base],
    ):
        with pytest.raises(SystemExit) as stopped:
            main(argv)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert "argument --seed: " in err and "Traceback" not in err


def test_convert_names_a_source_that_is_not_role_path_or_not_the_readers(capsys, tmp_path):
    with pytest.raises(SystemExit) as stopped:
        main(["convert", "cf", "--source", "foo", "-o", str(tmp_path)])
    assert stopped.value.code == 2
    assert "argument --source: 'foo' is not ROLE=PATH" in capsys.readouterr().err
    code, out, err = _run(
        capsys,
        ["convert", "cf", "--source", "cf74=a", "--source", "cf74=b", "-o", str(tmp_path)],
    )
    assert (code, out) == (1, "")
    assert err == "hybrid-ir error: convert: --source cf74 given more than once\n"
    code, out, err = _run(capsys, ["convert", "cf", "--source", "foo=bar", "-o", str(tmp_path)])
    assert (code, out) == (1, "")
    assert (
        err.startswith("hybrid-ir error: convert.sources: the reader needs ")
        and err.count("\n") == 1
    )


def test_a_file_name_with_terminal_escapes_is_printed_escaped(capsys, tmp_path, files):
    """An escape sequence in a name (here: red text) reached the terminal raw."""
    qrels = tmp_path / "evil\x1b[31m\rname.qrels"
    qrels.write_text("q1 0 a one\n", encoding="utf-8")
    code, out, err = _run(capsys, ["evaluate", "--qrels", str(qrels), "--run", files["dense"]])
    assert (code, out) == (1, "")
    assert "\x1b" not in err and "\r" not in err and err.count("\n") == 1
    assert "evil\\x1b[31m\\rname.qrels:1:" in err


def test_a_topic_judged_only_negatively_is_one_line_not_a_crash(tmp_path, files):
    """pytrec_eval killed the process (exit 139) on the arqmath set with such a topic."""
    qrels = tmp_path / "negative.qrels"
    # q2's grade 2 gives the arqmath set's level-2 measures a relevant document to look for.
    qrels.write_text("q1 0 a -1\nq1 0 x -3\nq2 0 b 2\n", encoding="utf-8")
    program = "import sys; from hybrid_ir.cli.main import main; sys.exit(main())"
    for argv in (
        ["evaluate", "--qrels", str(qrels), "--run", files["dense"], "--measures", "arqmath"],
        ["crossval", files["dense"], files["base"], "--qrels", str(qrels), "--folds", "2"],
    ):
        child = subprocess.run(
            [sys.executable, "-c", program, *argv],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert child.returncode == 1, child.stderr
        assert child.stdout == "" and child.stderr.count("\n") == 1, child.stderr
        assert "topic 'q1' has only negative relevance grades" in child.stderr


# --help ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command, says",
    [
        ("evaluate", "evaluate runs as the official tools do"),
        ("fuse", "fuse runs: linear"),
        ("crossval", "k-fold cross-validation of alpha"),
        ("check", "fail unless every expected-score check passed"),
        ("manifest", "write raw-file manifest rows"),
        ("config", "effective training settings"),
        ("fetch", "copy raw files from the mirror"),
        ("convert", "convert a raw collection to canonical files"),
        ("index", "build a Lucene BM25 index"),
        ("search", "BM25 top-k run"),
        ("compare", "compare runs with a baseline per measure"),
    ],
)
def test_help_of_each_subcommand_says_what_it_does(capsys, command, says):
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: hybrid-ir {command}")
    assert says in " ".join(out.split())


def test_top_level_help_lists_the_subcommands(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for command in ("evaluate", "fuse", "crossval", "check", "compare"):
        assert command in out


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """The top-level parser and every subcommand's, nested ones included."""
    found = [("hybrid-ir", build_parser())]
    for name, parser in found:  # grows while iterating: breadth-first
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found += [(f"{name} {sub}", child) for sub, child in action.choices.items()]
    return found


def test_every_subcommand_is_walked():
    names = {name for name, _ in _parsers()}
    assert {
        "hybrid-ir compare",
        "hybrid-ir manifest add",
        "hybrid-ir hub pin",
        "hybrid-ir data",
        "hybrid-ir targets",
    } <= names
    assert len(names) == 24  # completion, explore and status included


@pytest.mark.parametrize("name, parser", _parsers(), ids=lambda v: v if isinstance(v, str) else "")
def test_help_has_no_restructuredtext_markup(name, parser):
    text = parser.format_help()
    assert text.startswith(f"usage: {name}")
    assert "``" not in text
    assert re.search(r":(func|class|mod|meth|attr|data|ref):", text) is None


@pytest.mark.parametrize("name, parser", _parsers(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_option_states_its_default(name, parser):
    """An option that takes a value and may be left out says what it is when left out."""
    help_text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if not action.option_strings or isinstance(
            action, argparse._HelpAction | argparse._VersionAction
        ):
            continue
        assert action.help, f"{name} {action.option_strings} has no help"
        if action.required or action.nargs == 0:  # required, or a flag
            continue
        assert "default" in parser._get_formatter()._get_help_string(action), (
            f"{name} {action.option_strings[-1]} does not state its default"
        )
    assert "%(default)" not in help_text


def test_measures_defaults_are_stated(capsys):
    texts = {}
    for command in ("evaluate", "crossval", "compare"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        texts[command] = " ".join(capsys.readouterr().out.split())
    for command in ("evaluate", "crossval", "compare"):
        assert "(default: chosen from the qrels and said on stderr: arqmath, relevant from grade " \
            "2, when a grade is 2 or more, else beir, i.e. nDCG@10 R@100 R@1000)" \
            in texts[command], command  # fmt: skip
    assert "--format {md,csv,json} output: a Markdown table, CSV" in texts["evaluate"]
    assert "random sign flips of the randomization test" in texts["compare"]
    assert "(default: 10000)" in texts["compare"] and "(default: 1234)" in texts["compare"]


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"hybrid-ir {importlib.metadata.version('hybrid-ir')}\n"


def test_missing_subcommand_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    assert "usage: hybrid-ir" in capsys.readouterr().err


# error paths -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_line, problem",
    [
        ("q2 Q0 d 1\n", "got 4 field(s)"),
        ("q2 Q0 d 1 high dense\n", "score 'high' is not a number"),
    ],
)
@pytest.mark.parametrize("command", ["evaluate", "fuse"])
def test_malformed_run_line_is_one_line_naming_file_and_line(
    capsys, files, tmp_path, bad_line, problem, command
):
    bad = tmp_path / "bad.trec"
    bad.write_text("q1 Q0 a 1 3.0 dense\n\n" + bad_line, encoding="utf-8")  # line 3
    if command == "evaluate":
        argv = ["evaluate", "--qrels", files["qrels"], "--run", str(bad), "--measures", "P@1"]
    else:
        argv = ["fuse", "--method", "rrf", files["dense"], str(bad), "-o", str(tmp_path / "o")]
    code, out, err = _run(capsys, argv)
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1 and err.endswith("\n")
    assert err.startswith(f"hybrid-ir error: {bad}:3: ")
    assert problem in err


def test_malformed_qrels_line_is_one_line(capsys, files, tmp_path):
    qrels = tmp_path / "bad.qrels"
    qrels.write_text("q1 0 a 1\nq1 0 b\n", encoding="utf-8")
    code, _, err = _run(capsys, ["evaluate", "--qrels", str(qrels), "--run", files["dense"]])
    assert code == 1
    assert err.startswith(f"hybrid-ir error: {qrels}:2: expected 4 fields")
    assert err.count("\n") == 1


def test_missing_file_is_one_line(capsys, files, tmp_path):
    missing = tmp_path / "missing.trec"
    code, _, err = _run(
        capsys, ["evaluate", "--qrels", files["qrels"], "--run", str(missing), "--measures", "P@1"]
    )
    assert code == 1
    assert err.startswith("hybrid-ir error: ") and err.count("\n") == 1
    assert str(missing) in err


def test_counts_print_as_integers(capsys, files):
    code, out, err = _run(
        capsys,
        ["evaluate", "--qrels", files["qrels"], "--run", files["dense"],
         "--measures", "Rel_Ret", "NumRet", "NumRel", "P@1", "--per-query"],
    )  # fmt: skip
    assert code == 0, err
    run = files["dense"]
    # Every count is summed over the 4 topics, as trec_eval sums it (NumRet 2 + 2 + 3 + 1,
    # NumRel 1 + 1 + 2 + 1); P@1 of 1 stays a fraction of 1.
    assert out.splitlines()[2:] == [
        f"| {run} | all | 1 | 8 | 5 | 0.5000 |",
        f"| {run} | q1 | 0 | 2 | 1 | 1.0000 |",
        f"| {run} | q2 | 1 | 2 | 1 | 0.0000 |",
        f"| {run} | q3 | 0 | 3 | 2 | 1.0000 |",
        f"| {run} | q4 | 0 | 1 | 1 | 0.0000 |",
    ]
    code, out, err = _run(
        capsys,
        ["evaluate", "--qrels", files["qrels"], "--run", files["dense"], "--measures", "Rel_Ret",
         "NumRet", "--format", "csv"],
    )  # fmt: skip
    assert out.splitlines()[1].endswith(",1,8")


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """`hybrid-ir … | head -1`: the closed pipe is no error message, and the status is the one
    a shell gives a command killed by SIGPIPE."""
    command = [str(Path(sys.executable).with_name("hybrid-ir")), "completion", "bash"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # before the command, still importing, writes a byte
    assert process.wait(timeout=60) == 141
    assert process.stderr.read() == b""
