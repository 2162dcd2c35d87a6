"""Approach0 structure search against pyserini BM25 on the same ARQMath documents.

Both engines index the canonical ARQMath sample (results/collections/arqmath/corpus.jsonl,
3,395 answers) in a temporary directory and search the 100 ARQMath-2 topics at depth 1,000:

* Approach0 (pya0 0.3.7, :mod:`hybrid_ir.retrieval.approach0`): each answer rendered as the
  workflow's ``approach0-pya0`` system does
  (``{title}\\n\\n{question}\\n\\n__ANSWER__\\n\\n{text}``, Porter stemming), queried with pya0's
  refined ARQMath-2 keyword file. Figures: index wall seconds (the corpus read and rendered, as
  in the workflow), documents and formulas per second, index bytes and files, the indexer's peak
  RSS; per-query search latency p50/p95/max and the search worker's peak RSS.
* pyserini BM25 (k1 0.9, b 0.4, one indexing thread): the ``flat`` layout of the workflow's
  ``bm25-flat`` (contents = title + question + answer), queries = topic title + text. Figures:
  index seconds (JVM start-up reported apart), documents per second, index bytes, the indexer's
  peak RSS; per-query latency p50/p95/max, each query timed alone with ``searcher.search``.

Each step runs in a child process of this script (``--stage``), so that its peak RSS is its
own: ``os.wait4`` gives the child's ``ru_maxrss`` (KiB on Linux); the Approach0 search step
reads ``getrusage(RUSAGE_CHILDREN)`` for the pya0 worker it starts. p95 is the nearest-rank
95th percentile, as :mod:`hybrid_ir.retrieval.approach0` computes it.

A linear projection to the full ARQMath collection (~1.4M answers, ~28M formulas) and to
NTCIR-12 Wiki-Formula (~591K formula-only documents) follows; Approach0's search latency grows
with posting-list length, so the sample's latency is a lower bound for larger collections.

Approach0's index is a directory of many small files (one per formula path: ~170K for the
sample), so its index time depends mostly on the file system holding the temporary directory
(--scratch; the output names it): on this machine's ext4 disk it took about 8 times its time
on tmpfs (/dev/shm). The workflow builds it in RAM or the job's tmpdir and then moves it into
results/, on disk (``structure_scratch``, :func:`hybrid_ir.retrieval.approach0.build_index`):
--approach0-scratch DIR builds it there and then moves it to the temporary directory, as the
workflow does (copied when DIR is another file system), the move timed apart.

Targets (exit status 1 if one fails): Approach0 search p95 < 1 s per ARQMath topic; Approach0
index peak memory < 4 GB on the sample.

Usage: python benchmarks/structure.py [--limit N] [--scratch DIR] [--approach0-scratch DIR]
(after the workflow has made the ARQMath corpus; the full sample takes about 5-10 minutes on 2
cores, on disk)
"""

from __future__ import annotations

import itertools
import math
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import harness
import yaml
from harness import (
    ARQMATH_ANSWERS,
    ARQMATH_FORMULAS,
    BM25_B,
    BM25_K1,
    DEPTH,
    NTCIR12_FORMULAS,
    RESULTS,
    STEMMER,
    duration,
    file_system,
    load,
    p95,
)

CORPUS = RESULTS / "collections/arqmath/corpus.jsonl"
TOPICS = RESULTS / "collections/arqmath/topics/arqmath2.jsonl"
KEYWORD_FILE = "arqmath/pya0-topics-and-qrels/topics.arqmath-2021-task1-refined.txt"
BOOSTS = {"term": 1.0, "tex": 1.0}
BM25_QUERY_FIELDS = ("title", "text")
# Targets from the issue.
SEARCH_P95_TARGET_S = 1.0
INDEX_MEMORY_TARGET_BYTES = 4_000_000_000


# Child steps: each writes <workdir>/<stage>.json ------------------------------------------------


def stage_approach0_index(workdir: Path) -> dict:
    scratch = os.environ["STRUCTURE_BENCH_A0_SCRATCH"]
    return harness.approach0_index(workdir / "corpus.jsonl", workdir / "approach0", scratch)


def stage_approach0_search(workdir: Path) -> dict:
    from hybrid_ir.data.formats import read_records
    from hybrid_ir.retrieval import approach0
    from hybrid_ir.retrieval.structure import QueryRule, Terms, read_keyword_file, topic_queries

    terms = Terms(STEMMER)
    keyword_file = read_keyword_file(os.environ["STRUCTURE_BENCH_KEYWORDS"], terms, BOOSTS)
    queries = topic_queries(
        read_records(TOPICS), keyword_file, QueryRule(), terms, BOOSTS, where=str(TOPICS)
    )
    # search() returns only summary facts; keep the worker's per-query records for the maximum.
    per_query: list[dict] = []
    summarize = approach0._run_and_facts

    def keeping(results, depth):
        per_query.extend(results)
        return summarize(results, depth)

    approach0._run_and_facts = keeping
    started = time.perf_counter()
    run, facts = approach0.search(workdir / "approach0", queries, DEPTH)
    wall = time.perf_counter() - started
    return {
        "queries": len(queries),
        "origins": sorted({query["origin"] for query in queries}),
        "facts": facts,
        "seconds": [r["seconds"] for r in per_query if "seconds" in r],
        "wall_s": wall,
        "worker_peak_rss": harness.peak_rss(resource.RUSAGE_CHILDREN),
        "own_peak_rss": harness.peak_rss(),
        "hits": sum(len(docs) for docs in run.values()),
    }


def stage_bm25_search(workdir: Path) -> dict:
    from hybrid_ir.data.formats import read_records
    from hybrid_ir.retrieval.lucene.search import query_text

    queries = [query_text(topic, BM25_QUERY_FIELDS) for topic in read_records(TOPICS)]
    return harness.bm25_search(workdir / "bm25", queries)


STAGES = {
    "approach0-index": stage_approach0_index,
    "approach0-search": stage_approach0_search,
    "bm25-index": harness.bm25_index,
    "bm25-search": stage_bm25_search,
}


def run_stage(name: str, workdir: Path, keywords: Path, a0_scratch: Path) -> dict:
    """One step in a child process: what it wrote, its peak RSS and CPU seconds."""
    environment = {
        "STRUCTURE_BENCH_KEYWORDS": str(keywords),
        "STRUCTURE_BENCH_A0_SCRATCH": str(a0_scratch),
    }
    return harness.run_stage(__file__, name, workdir, environment=environment)


# Figures -------------------------------------------------------------------------------------


def latency(values: list[float]) -> str:
    return (
        f"p50 {statistics.median(values) * 1000:8.1f} ms  p95 {p95(values) * 1000:8.1f} ms  "
        f"max {max(values) * 1000:8.1f} ms  ({len(values)} queries)"
    )


def mib(count: float) -> str:
    return f"{harness.mib(count, 1)} MiB"


def size(count: float) -> str:
    return f"{count / 2**30:,.2f} GiB" if count >= 2**30 else mib(count)


def keyword_file() -> Path | None:
    fetched = RESULTS / "raw" / KEYWORD_FILE
    if fetched.is_file():
        return fetched
    from hybrid_ir.data.fetch import mirror_root

    configured = yaml.safe_load(Path("config.yaml").read_text(encoding="utf-8")).get("mirror")
    mirror = mirror_root(configured)
    if mirror is not None and (mirror / KEYWORD_FILE).is_file():
        return mirror / KEYWORD_FILE
    return None


def main() -> int:
    parser = harness.parser(__doc__)
    parser.add_argument("--limit", type=int, help="index only the first N documents")
    parser.add_argument(
        "--scratch", type=Path, help="where the temporary directory goes (default: $TMPDIR)"
    )
    parser.add_argument(
        "--approach0-scratch",
        type=Path,
        help="where Approach0's index is built before it is moved beside the others (default: "
        "the temporary directory itself, so that it is only renamed)",
    )
    harness.stage_arguments(parser, STAGES)
    args = parser.parse_args()
    if args.stage:
        harness.write_stage(args.workdir, args.stage, STAGES[args.stage](args.workdir))
        return 0

    for needed in (CORPUS, TOPICS):
        if not needed.is_file():
            print(f"{needed} is missing; make it first with:\n  snakemake --cores 2 {needed}")
            return 2
    keywords = keyword_file()
    if keywords is None:
        fetched = RESULTS / "raw" / KEYWORD_FILE
        print(f"pya0's keyword file {KEYWORD_FILE} is neither under {RESULTS / 'raw'} nor in "
              f"the mirror; fetch it with:\n  snakemake --cores 2 {fetched}")  # fmt: skip
        return 2

    print(f"machine: {load()} at the start")
    with tempfile.TemporaryDirectory(prefix="structure-benchmark-", dir=args.scratch) as scratch:
        workdir = Path(scratch)
        with open(CORPUS, encoding="utf-8") as source:
            lines = list(itertools.islice(source, args.limit))
        (workdir / "corpus.jsonl").write_text("".join(lines), encoding="utf-8")
        documents = len(lines)
        a0_scratch = args.approach0_scratch or workdir
        print(f"ARQMath sample: {documents:,} answers from {CORPUS}\nARQMath-2 topics from "
              f"{TOPICS}, keywords from {keywords}; depth {DEPTH}\nindexes written to "
              f"{workdir} ({file_system(workdir)}); Approach0's built in {a0_scratch} "
              f"({file_system(a0_scratch)}) and moved there")  # fmt: skip

        stage = {"workdir": workdir, "keywords": keywords, "a0_scratch": a0_scratch}
        a0_index = run_stage("approach0-index", **stage)
        a0_search = run_stage("approach0-search", **stage)
        bm_index = run_stage("bm25-index", **stage)
        bm_search = run_stage("bm25-search", **stage)
        bm_bytes, bm_files = harness.directory_bytes(workdir / "bm25")
    print(f"machine: {load()} at the end")

    a0_seconds = a0_index["wall_s"]
    formulas = a0_index["formulas"]
    print("\nApproach0 (pya0 0.3.7), Porter stemming, pya0's ARQMath-2 document layout:")
    print(f"  index: {a0_index['documents']:,} docs, {formulas:,} formulas "
          f"({a0_index['unparsed_formulas']:,} unparsed, {a0_index['rejected_documents']} docs "
          f"rejected)")  # fmt: skip
    print(f"  index time: {a0_seconds:,.1f} s wall ({a0_index['cpu_s']:,.1f} s CPU): "
          f"{a0_index['documents'] / a0_seconds:,.1f} docs/s, "
          f"{formulas / a0_seconds:,.0f} formulas/s; of which moving it into place "
          f"{a0_seconds - a0_index['seconds']:,.1f} s")  # fmt: skip
    print(f"  index size: {mib(a0_index['size_bytes'])} ({a0_index['size_bytes']:,} bytes) "
          f"in {a0_index['index_files']:,} files")  # fmt: skip
    print(f"  index peak RSS (indexing process): {mib(a0_index['peak_rss'])}")
    facts = a0_search["facts"]
    times = a0_search["seconds"]
    print(f"  search: {a0_search['queries']} topics ({', '.join(a0_search['origins'])}), "
          f"{facts['with_hits']} with hits, {len(facts['without_hits'])} without, "
          f"{len(facts['failed'])} failed; {a0_search['wall_s']:,.1f} s in all")  # fmt: skip
    print(f"  search latency per topic: {latency(times)}")
    if "latency_p95_s" in facts:
        print(f"    (the search facts say p50 {facts['latency_p50_s']} s, "
              f"p95 {facts['latency_p95_s']} s)")  # fmt: skip
    print(f"  search worker peak RSS: {mib(a0_search['worker_peak_rss'])} "
          f"(the process driving it: {mib(a0_search['own_peak_rss'])})")  # fmt: skip

    bm_seconds = bm_index["wall_s"]
    print(f"\npyserini BM25 (k1 {BM25_K1}, b {BM25_B}), flat layout (title + question + "
          f"answer), 1 indexing thread:")  # fmt: skip
    print(f"  index: {bm_index['documents']:,} docs in {bm_seconds:,.1f} s wall "
          f"({bm_index['documents'] / bm_seconds:,.1f} docs/s); JVM start "
          f"{bm_index['jvm_s']:.1f} s wall not counted; process CPU {bm_index['cpu_s']:,.1f} s "
          f"with the JVM start")  # fmt: skip
    print(f"  index size: {mib(bm_bytes)} ({bm_bytes:,} bytes) in {bm_files} files "
          f"(positions, doc vectors, raw docs stored)")  # fmt: skip
    print(f"  index peak RSS (indexing process, JVM included): {mib(bm_index['peak_rss'])}")
    print(f"  search latency per topic (title + text, one query at a time, after one "
          f"warm-up query): {latency(bm_search['seconds'])}")  # fmt: skip
    print(f"  search peak RSS (JVM included): {mib(bm_search['peak_rss'])}")

    print("\nProjection: LINEAR extrapolation of index time (wall) and size from this sample,"
          "\na rough guide, not a measurement. Approach0's search latency grows with posting-"
          "list length,\nso the sample's latency is a lower bound for larger collections, "
          "not an estimate.")  # fmt: skip
    a0_documents, bm_documents = a0_index["documents"], bm_index["documents"]
    rows = [
        ("Approach0, ARQMath full (by formulas)", ARQMATH_FORMULAS / formulas, "28M formulas"),
        ("Approach0, ARQMath full (by documents)", ARQMATH_ANSWERS / a0_documents, "1.4M answers"),
        ("Approach0, NTCIR-12 Wiki-Formula", NTCIR12_FORMULAS / formulas, "591K formulas"),
        ("BM25, ARQMath full (by documents)", ARQMATH_ANSWERS / bm_documents, "1.4M answers"),
    ]
    print(f"  {'engine, collection (scaled by)':40s} {'factor':>8s} {'index time':>11s} "
          f"{'index size':>11s}")  # fmt: skip
    for name, factor, scale in rows:
        seconds, size_bytes = (
            (bm_seconds, bm_bytes) if name.startswith("BM25") else
            (a0_seconds, a0_index["size_bytes"])
        )  # fmt: skip
        print(f"  {name:40s} {factor:8,.0f} {duration(seconds * factor, 0):>11s} "
              f"{size(size_bytes * factor):>11s}  ({scale})")  # fmt: skip

    print("\nTargets:")
    a0_p95 = p95(times) if times else math.inf
    peak = a0_index["peak_rss"]
    checks = [
        (a0_p95 < SEARCH_P95_TARGET_S,
         f"Approach0 search p95 {a0_p95:.3f} s < {SEARCH_P95_TARGET_S:.0f} s per ARQMath topic"),
        (peak < INDEX_MEMORY_TARGET_BYTES,
         f"Approach0 index peak memory {peak / 1e9:.2f} GB < 4 GB on the sample"),
    ]  # fmt: skip
    for passed, line in checks:
        print(f"  {'PASS' if passed else 'FAIL'}: {line}")
    if len(times) < a0_search["queries"]:
        print(f"  note: {a0_search['queries'] - len(times)} topics have no latency (failed)")
    return 0 if all(passed for passed, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
