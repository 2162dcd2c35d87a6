"""Time one evaluation: hybrid_ir.evaluation.measures against ranx 0.3.21 (numba kernels), same
process.

Both start from the same in-memory qrels and run (77 topics x 1,000 documents, like ARQMath-1;
graded 0-3 judgments on 120 documents per topic; scores drawn without ties, so that no tie
order can differ) and compute the measures the tables use:

* trec_eval's defaults: nDCG@10, MAP (AP), P@10, R@100, R@1000 -- ranx's ``ndcg@10``, ``map``,
  ``precision@10``, ``recall@100``, ``recall@1000``;
* ARQMath's prime measures: nDCG', MAP' and P'@10 at relevance 2 on judged documents only.
  ranx has neither a judged-only mode nor a relevance level, so it is handed the run without
  its unjudged documents and, for MAP' and P'@10, qrels with grade 1 set to 0: prepared
  outside its timing, which only favours ranx.

ranx's time includes building its ``Qrels`` and ``Run`` from the dicts, as hybrid_ir's includes
handing them to pytrec_eval; its kernel time alone (objects built beforehand) is printed beside
it. numba compiles on the first call, so each side is timed on warm calls, best of
``REPEATS``. Per-topic values must agree to 1e-9 (they differ only in summation order);
the script exits with status 1 otherwise, or when hybrid_ir is slower (ratio > 1).

Usage: python benchmarks/evaluation_vs_ranx.py (after ``pip install -r
requirements-bench.txt``, which ``make benchmark`` does; about half a minute).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable

import harness
import numpy as np
from ranx import Qrels as RanxQrels
from ranx import Run as RanxRun
from ranx import evaluate as ranx_evaluate

from hybrid_ir.evaluation.measures import evaluate

# ranx's own nDCG kernel casts its input in a way numba warns about on every compilation.
warnings.filterwarnings("ignore", message="unsafe cast from uint64 to int64")

TOPICS = 77
DEPTH = 1000
JUDGED = 120
REPEATS = 7
TOLERANCE = 1e-9
STANDARD = {
    "nDCG@10": "ndcg@10",
    "AP": "map",
    "P@10": "precision@10",
    "R@100": "recall@100",
    "R@1000": "recall@1000",
}
PRIME = {  # hybrid_ir's column -> (ranx metric, qrels it is given)
    "nDCG'": ("ndcg", "graded"),
    "MAP'": ("map", "rel2"),
    "P'@10": ("precision@10", "rel2"),
}


def generate() -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = np.random.default_rng(20210922)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for number in range(1, TOPICS + 1):
        topic = f"A.{number}"
        pool = [f"{doc}" for doc in rng.choice(100 * DEPTH, 2 * DEPTH, replace=False)]
        judged = rng.choice(2 * DEPTH, JUDGED, replace=False)
        grades = rng.choice(4, JUDGED, p=[0.5, 0.2, 0.2, 0.1])
        qrels[topic] = {pool[i]: int(g) for i, g in zip(judged, grades, strict=True)}
        retrieved = rng.choice(2 * DEPTH, DEPTH, replace=False)
        scores = rng.permutation(DEPTH) + rng.uniform(0, 0.5, DEPTH)
        bonus = {pool[i]: float(g) for i, g in zip(judged, grades, strict=True)}
        run[topic] = {
            pool[i]: float(s) + 300.0 * bonus.get(pool[i], 0.0)
            for i, s in zip(retrieved, scores, strict=True)
        }
    return qrels, run


def best_seconds(call: Callable[[], object]) -> float:
    # Warmed up: numba's compilation, pytrec_eval's first load.
    return harness.best_of(REPEATS, call, warm_up=True)


def ranx_per_topic(qrels, run, metrics: list[str]) -> dict[str, dict[str, float]]:
    ranx_run = RanxRun.from_dict(run)
    ranx_evaluate(RanxQrels.from_dict(qrels), ranx_run, metrics)
    return {metric: dict(ranx_run.scores[metric]) for metric in metrics}


def largest_difference(ours: dict[str, dict[str, float]], theirs: dict[str, dict[str, float]]):
    worst = 0.0
    for column, per_topic in ours.items():
        other = theirs[column]
        if per_topic.keys() != other.keys():
            return float("inf")
        worst = max(worst, max(abs(per_topic[t] - other[t]) for t in per_topic))
    return worst


def compare(label: str, ours_call, ranx_call, ranx_kernel_call, ours_values, ranx_values) -> bool:
    ours_s = best_seconds(ours_call)
    ranx_s = best_seconds(ranx_call)
    kernel_s = best_seconds(ranx_kernel_call)
    difference = largest_difference(ours_values, ranx_values)
    ratio = ours_s / ranx_s
    same = difference <= TOLERANCE
    print(
        f"{label:<24} hybrid_ir {ours_s * 1000:7.1f} ms   ranx {ranx_s * 1000:7.1f} ms "
        f"(kernels alone {kernel_s * 1000:6.1f} ms)   ratio {ratio:4.2f} (goal <= 1.0: "
        f"{'met' if ratio <= 1.0 else 'NOT met'})   largest per-topic difference {difference:.1e}"
        f" ({'same' if same else 'DIFFERENT'})"
    )
    return same and ratio <= 1.0


def main() -> int:
    qrels, run = generate()
    print(f"input: {TOPICS} topics x {DEPTH} documents, {JUDGED} graded judgments per topic")

    standard = list(STANDARD)
    ranx_standard = list(STANDARD.values())
    ranx_qrels, ranx_run = RanxQrels.from_dict(qrels), RanxRun.from_dict(run)
    ours = evaluate(qrels, run, standard).per_query
    theirs = ranx_per_topic(qrels, run, ranx_standard)
    ok = compare(
        "trec_eval defaults (5)",
        lambda: evaluate(qrels, run, standard),
        lambda: ranx_evaluate(
            RanxQrels.from_dict(qrels), RanxRun.from_dict(run), ranx_standard, make_comparable=True
        ),
        lambda: ranx_evaluate(ranx_qrels, ranx_run, ranx_standard),
        ours,
        {column: theirs[metric] for column, metric in STANDARD.items()},
    )

    judged_run = {t: {d: s for d, s in docs.items() if d in qrels[t]} for t, docs in run.items()}
    rel2 = {t: {d: (g if g >= 2 else 0) for d, g in docs.items()} for t, docs in qrels.items()}
    prime_qrels = {"graded": qrels, "rel2": rel2}
    prime = list(PRIME)
    ours = evaluate(qrels, run, prime).per_query
    theirs = {
        column: ranx_per_topic(prime_qrels[kind], judged_run, [metric])[metric]
        for column, (metric, kind) in PRIME.items()
    }
    prepared = {kind: RanxQrels.from_dict(q) for kind, q in prime_qrels.items()}
    prepared_run = RanxRun.from_dict(judged_run)

    def ranx_prime() -> None:
        built = {kind: RanxQrels.from_dict(q) for kind, q in prime_qrels.items()}
        for metric, kind in PRIME.values():
            ranx_evaluate(built[kind], RanxRun.from_dict(judged_run), metric)

    def ranx_prime_kernels() -> None:
        for metric, kind in PRIME.values():
            ranx_evaluate(prepared[kind], prepared_run, metric)

    ok &= compare(
        "ARQMath prime (3)",
        lambda: evaluate(qrels, run, prime),
        ranx_prime,
        ranx_prime_kernels,
        ours,
        theirs,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
