"""Time tuning alpha by 5-fold cross-validation: hybrid_ir against pya0 0.3.7's file pipeline.

Both sides start from the same files (two runs, 100 topics x 1,000 documents with overlapping
document sets, and graded qrels, generated with a fixed seed in a temporary directory) and
cross-validate alpha in {0.1, ..., 0.9} for nDCG@10 with pya0's fold rule (``mode="legacy"``,
seed 1234):

* hybrid_ir: read the runs and qrels once, then per alpha ``fusion.linear`` and ``evaluate``
  (ir_measures, pytrec_eval backend) in memory, then
  :func:`hybrid_ir.fusion.crossval.cross_validate` on the per-topic table;
* pya0: per alpha ``mergerun.merge_run_files`` writes the fused run; ``split_run_files``
  writes each fused run's fold train/test files; each of those 90 files is evaluated, the
  means go to a TSV, and ``cross_validate_tsv`` picks the alphas. pya0 ran the trec_eval binary
  per file; it is not installed here, so pytrec_eval evaluates each file in process with one
  evaluator built once, and its mean is printed as trec_eval prints it. That only favours pya0.

nDCG@10 is ``ndcg_cut.10`` on both sides, the same C code on the same run, so the two must choose
the same alpha for every fold and report the same mean test score; the script checks that by
asking pya0 for each fold separately, and exits with status 1 if anything differs.

Usage: python benchmarks/crossval_vs_pya0.py (about a minute on 2 cores).
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import sys
import tempfile
import types
from pathlib import Path

import harness
import numpy as np
import pytrec_eval

from hybrid_ir.data.qrels import read_qrels as load_qrels
from hybrid_ir.data.runs import read_run, write_run
from hybrid_ir.fusion.crossval import ALPHAS, PAPER_SEED, crossvalidate_linear
from hybrid_ir.retrieval.pya0_modules import load_crossvalidate

TOPICS = 100
DEPTH = 1000
POOL = 1500  # each topic's candidate documents; each run takes 1,000 of them, ~667 shared
JUDGED = 80  # judged documents per topic
K_FOLDS = 5
METRIC = "nDCG@10"
TREC_EVAL_METRIC = "ndcg_cut_10"
TARGET_SPEEDUP = 20.0  # the performance issue's goal


def generate(folder: Path) -> tuple[Path, Path, Path]:
    """Two runs and graded qrels, deterministic; the runs are written in canonical TREC form.

    Topic ids are zero-padded so that pya0's topic order (``merge_run_files`` writes topics
    sorted as strings) equals the dense run's file order, which ``fusion.linear`` keeps. Four
    retrieved topics have no judgments and two judged topics are never retrieved, so the
    fold means must skip unjudged topics, as trec_eval without ``-c`` does.
    """
    rng = np.random.default_rng(20220522)
    dense: dict[str, dict[str, float]] = {}
    base: dict[str, dict[str, float]] = {}
    qrels_lines = []
    for number in range(1, TOPICS + 1):
        topic = f"Q{number:03d}"
        pool = [f"doc{j}" for j in rng.choice(50 * POOL, POOL, replace=False)]
        grades = dict.fromkeys(pool, 0)
        judged = rng.choice(POOL, JUDGED, replace=False)
        for index, grade in zip(
            judged, rng.choice(4, JUDGED, p=[0.55, 0.25, 0.12, 0.08]), strict=True
        ):
            grades[pool[index]] = int(grade)
            if number <= TOPICS - 4:
                qrels_lines.append(f"{topic} 0 {pool[index]} {grade}\n")
        for run, scale, noise, shift in ((dense, 0.04, 0.075, 0.6), (base, 2.0, 3.0, 12.0)):
            picked = rng.choice(POOL, DEPTH, replace=False)
            # Each run is better on some topics than on others, so folds disagree on alpha.
            noises = rng.normal(0, noise * rng.uniform(0.2, 3.0), DEPTH)
            run[topic] = {
                pool[i]: shift + scale * grades[pool[i]] + float(error)
                for i, error in zip(picked, noises, strict=True)
            }
    qrels_lines += ["Q998 0 doc1 1\n", "Q999 0 doc2 2\n"]
    paths = folder / "dense.trec", folder / "base.trec", folder / "qrels.txt"
    write_run(dense, paths[0], "dense")
    write_run(base, paths[1], "base")
    paths[2].write_text("".join(qrels_lines))
    return paths


def run_hybrid_ir(dense_path: Path, base_path: Path, qrels_path: Path):
    dense, base = read_run(dense_path), read_run(base_path)
    qrels = load_qrels(qrels_path)
    results = crossvalidate_linear(
        dense, base, qrels, [METRIC], ALPHAS, K_FOLDS, seed=PAPER_SEED, mode="legacy"
    )
    return results[METRIC]


def trec_eval_mean(per_query: dict[str, dict[str, float]]) -> str:
    """The ``all`` line trec_eval prints: queries summed in sorted order, 4 decimals."""
    total = 0.0
    for query in sorted(per_query):
        total += per_query[query][TREC_EVAL_METRIC]
    return f"{total / len(per_query):.4f}"


def cross_validate_tsv(crossvalidate: types.ModuleType, tsv: Path) -> tuple[dict, float]:
    """pya0's choice frequencies and mean test score, parsed from what it prints."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        crossvalidate.cross_validate_tsv(str(tsv))
    text = output.getvalue()
    pairs = re.findall(r"\('alpha([0-9.]+?)\.', (\d+)\)", text)
    mean = float(re.search(r"mean test score: (\S+)", text).group(1))
    return {float(alpha): int(count) for alpha, count in pairs}, mean


def run_pya0(crossvalidate, mergerun, dense_path: Path, base_path: Path, qrels_path: Path):
    """pya0's pipeline; returns the TSV lines and what ``cross_validate_tsv`` reports."""
    folder = dense_path.parent
    with qrels_path.open() as handle:
        evaluator = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(handle), {"ndcg_cut.10"})
    fused = [
        mergerun.merge_run_files(
            f"{dense_path}:{alpha}",
            f"{base_path}:-1",  # pya0's way of saying 1 - alpha
            topk=DEPTH,
            out_prefix=str(folder),
            out_name=f"alpha{alpha}",
        )
        for alpha in ALPHAS
    ]
    with contextlib.redirect_stdout(io.StringIO()):
        crossvalidate.split_run_files(*fused, kfold=K_FOLDS, seed=PAPER_SEED)
    lines = []
    for path in fused:
        for k in range(K_FOLDS):
            for kind in ("train", "test"):
                fold_file = f"{path}.fold{k}{kind}"
                with open(fold_file) as handle:
                    per_query = evaluator.evaluate(pytrec_eval.parse_run(handle))
                lines.append(f"{Path(fold_file).name}\t{trec_eval_mean(per_query)}\n")
    tsv = folder / "pya0-scores.tsv"
    tsv.write_text("".join(lines))
    return lines, cross_validate_tsv(crossvalidate, tsv)


def pya0_fold_choices(crossvalidate, lines: list[str], folder: Path) -> list[tuple[float, float]]:
    """Per fold, pya0's chosen alpha and test score: ``cross_validate_tsv`` prints only the
    frequencies, so it is asked again with one fold's lines at a time (outside the timing)."""
    choices = []
    for k in range(K_FOLDS):
        tsv = folder / f"pya0-fold{k}.tsv"
        tsv.write_text("".join(line for line in lines if f".fold{k}t" in line))
        frequencies, test_score = cross_validate_tsv(crossvalidate, tsv)
        choices.append((next(iter(frequencies)), test_score))
    return choices


def main() -> int:
    # Two judged topics are never retrieved on purpose; evaluate() warns about each fused run.
    logging.getLogger("hybrid_ir.evaluation.measures").setLevel(logging.ERROR)
    crossvalidate, mergerun = load_crossvalidate()
    with tempfile.TemporaryDirectory(prefix="crossval-vs-pya0-") as tmp:
        folder = Path(tmp)
        paths = generate(folder)
        lines = sum(1 for path in paths[:2] for _ in path.open())
        print(f"input: {TOPICS} topics x {DEPTH} docs x 2 runs ({lines} lines), graded qrels")
        print(f"task: {K_FOLDS}-fold cross-validation of alpha in {list(ALPHAS)} on {METRIC},")
        print(f"      pya0's fold rule (legacy mode), seed {PAPER_SEED}")

        with harness.stopwatch() as ours_time:
            ours = run_hybrid_ir(*paths)
        with harness.stopwatch() as pya0_time:
            pya0_lines, (pya0_frequencies, pya0_mean) = run_pya0(crossvalidate, mergerun, *paths)
        ours_seconds, pya0_seconds = ours_time.seconds, pya0_time.seconds

        pya0_folds = pya0_fold_choices(crossvalidate, pya0_lines, folder)

    our_folds = [(fold.param, fold.test_score) for fold in ours.folds]
    print(f"hybrid_ir: {ours_seconds:7.2f} s  (read, fuse, evaluate in memory, cross-validate)")
    print(
        f"pya0:      {pya0_seconds:7.2f} s  (merge_run_files, split_run_files, "
        "pytrec_eval per fold file, cross_validate_tsv)"
    )
    speedup = pya0_seconds / ours_seconds
    verdict = "met" if speedup >= TARGET_SPEEDUP else "NOT met"
    print(f"speed-up: {speedup:.1f}x (target >= {TARGET_SPEEDUP:.0f}x: {verdict})")
    print("note: pya0 ran the trec_eval binary per fold file; pytrec_eval in process, with one")
    print("      evaluator for all 90 files, only makes the pya0 side faster.")
    print(f"hybrid_ir per fold (alpha, test {METRIC}): {our_folds}")
    print(f"pya0      per fold (alpha, test {METRIC}): {pya0_folds}")
    print(f"hybrid_ir frequencies {ours.frequencies}, mean test score {ours.mean_test_score}")
    print(f"pya0      frequencies {pya0_frequencies}, mean test score {pya0_mean}")
    identical = (
        our_folds == pya0_folds
        and list(ours.frequencies.items()) == list(pya0_frequencies.items())
        and ours.mean_test_score == pya0_mean
    )
    print(f"chosen alphas and mean test score identical: {'yes' if identical else 'NO'}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
