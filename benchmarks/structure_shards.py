"""How much a sharded Approach0 index changes the ARQMath sample's runs: N shards against one.

Reads the workflow's two runs of each ARQMath topic set, ``approach0-pya0`` (one index) and
``approach0-pya0-4shards`` (configs/structure-shards.yaml: the same documents dealt out to 4
shards, each indexed and searched alone, the hits merged), and prints per topic set:

* the ARQMath measures of both (nDCG', MAP', P'@10: judged-only, as the tables report them)
  against the set's qrels, and their difference;
* rank agreement over the topics both answer: the mean overlap of the top k (k = 10, 100, 1000:
  shared documents / k), the share of topics whose first document is the same, and the share of
  (topic, document) pairs in both runs that keep exactly their score.

The shards' scores differ from the one index's because two parts of Approach0's score use
collection statistics, and a shard's are its own (pya0 0.3.7's ``search`` has no way to pass
global ones): BM25's idf and average document length for the words, and each formula path's
inverse path frequency, log(N / pf), for the structure score. The symbol similarity, the
document-length penalty of the math score and the proximity score depend on the document
alone.

Usage: python benchmarks/structure_shards.py [--results results] [--sharded NAME]
(after ``snakemake --configfile config.yaml configs/structure-shards.yaml <the two runs>``)
"""

from __future__ import annotations

import statistics
from pathlib import Path

import harness

from hybrid_ir.data.qrels import read_qrels as load_qrels
from hybrid_ir.data.runs import read_run
from hybrid_ir.evaluation.measures import evaluate

WHOLE = "approach0-pya0"
TOPIC_SETS = ("arqmath1", "arqmath2")
COLUMNS = ("nDCG'", "MAP'", "P'@10")
CUTOFFS = (10, 100, 1000)


def overlap(first: list[str], second: list[str], k: int) -> float:
    return len(set(first[:k]) & set(second[:k])) / k


def compare(results: Path, topics: str, sharded: str) -> list[str]:
    runs = results / "runs" / "arqmath" / topics
    whole, split = read_run(runs / f"{WHOLE}.trec"), read_run(runs / f"{sharded}.trec")
    qrels = load_qrels(results / "collections" / "arqmath" / "qrels" / f"{topics}.qrels")
    scores = {name: evaluate(qrels, run, ["arqmath"]).aggregate
              for name, run in ((WHOLE, whole), (sharded, split))}  # fmt: skip
    lines = [f"{topics}: {len(whole)} topics answered by one index, {len(split)} by the shards"]
    for column in COLUMNS:
        one, many = scores[WHOLE][column], scores[sharded][column]
        lines.append(f"  {column:<6} one index {one:.4f}  {sharded} {many:.4f}  "
                     f"difference {many - one:+.4f}")  # fmt: skip
    common = sorted(set(whole) & set(split))
    ranked = {topic: (list(whole[topic]), list(split[topic])) for topic in common}
    for k in CUTOFFS:
        mean = statistics.mean(overlap(a, b, k) for a, b in ranked.values())
        lines.append(f"  top-{k} overlap: {mean:.3f} (mean over {len(common)} topics)")
    same_first = sum(a[0] == b[0] for a, b in ranked.values()) / len(common)
    lines.append(f"  same first document: {same_first:.1%} of topics")
    pairs = [(topic, doc) for topic in common for doc in whole[topic] if doc in split[topic]]
    same_score = sum(whole[t][d] == split[t][d] for t, d in pairs) / len(pairs) if pairs else 0.0
    lines.append(f"  score unchanged: {same_score:.1%} of the {len(pairs):,} shared "
                 f"(topic, document) pairs")  # fmt: skip
    return lines


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--results", type=Path, default=harness.RESULTS)
    parser.add_argument("--sharded", default=f"{WHOLE}-4shards")
    args = parser.parse_args()
    for topics in TOPIC_SETS:
        print("\n".join(compare(args.results, topics, args.sharded)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
