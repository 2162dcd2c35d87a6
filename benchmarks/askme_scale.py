"""AskMe at corpus scale: time and peak memory of indexing and re-ranking, at each corpus size.

For each size N, a synthetic BEIR-style corpus of N documents is generated with a fixed seed:
titles of about 12 tokens and abstracts of about 200 (log-normal lengths, sentences of 8 to 35
tokens), as in BEIR's biomedical sets (TREC-COVID, NFCorpus, BioASQ average 160 to 230 words),
drawn from a 100,000-word vocabulary with Zipf frequencies (s = 1.07) whose 40 most frequent
words are English stop words. It goes through the workflow's own code:

1. index: :func:`hybrid_ir.retrieval.lucene.index.build_bm25_index` (flat layout, one thread, the
   documents' raw JSON stored, as the ``bm25_index`` rule builds an index an askme retriever reads);
2. search: :func:`hybrid_ir.retrieval.lucene.search.bm25_search`, top 1,000 for each of 50
   queries of 3 to 8 non-stop words;
3. rerank: the ``askme`` retriever (:func:`hybrid_ir.retrieval.retrievers.retrieve`, as the
   ``retrieve`` rule), the top 100 of each query read one by one from the index's stored documents.

Each stage runs in its own process, so that its peak resident set (``ru_maxrss``; the JVM that
pyserini starts in the process counts in it) is its own, and its resident set at the end is
split into anonymous memory and mapped index files. Its seconds leave out the start-up
(imports and starting the JVM, reported apart), and the re-ranking stage also reports the peak
of the Python heap allocated after start-up (tracemalloc). For N up to ``--in-memory-up-to``,
the former in-memory re-ranking (the whole corpus in a dict) runs as well, for its memory, and
its run must be identical to the streaming one (exit status 1 otherwise).

Usage: python benchmarks/askme_scale.py [--documents 100000 1000000] [--workdir DIR]
(1,000,000 documents: 1.4 GB of corpus and a 2.1 GB index, 5 GB on disk while indexing; on 2
shared cores 100,000 and 1,000,000 together took 10 to 17 minutes, nearly all of it generating
and indexing the larger corpus.)
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import harness
import numpy as np

STOP_WORDS = (
    "the of and in to a with for is that by on as are from was were be this or at an which "
    "these we not have has been their it its than between but also can all both after more"
).split()
VOCABULARY = 100_000
ZIPF_S = 1.07
TITLE_TOKENS = (12.0, 4.0, 3, 30)  # normal mean, sd, clipped to [min, max]
ABSTRACT_TOKENS = (5.2, 0.45, 20, 1000)  # log-normal mu, sigma (median ~180, mean ~200)
SENTENCE_TOKENS = (8, 35)
QUERY_TERMS = (3, 8)
CHUNK = 10_000
SEARCH_DEPTH = 1000
RERANK_DEPTH = 100


def vocabulary(rng: np.random.Generator) -> list[str]:
    """Stop words first (the most frequent ranks), then distinct pronounceable pseudo-words."""
    onsets = "b c d f g h k l m n p r s t v z br cr gl pl st tr".split()
    nuclei = "a e i o u ae io ou".split()
    words = dict.fromkeys(STOP_WORDS)
    while len(words) < VOCABULARY:
        syllables = rng.integers(2, 5)
        word = "".join(
            onsets[rng.integers(len(onsets))] + nuclei[rng.integers(len(nuclei))]
            for _ in range(syllables)
        )
        words.setdefault(word)
    return list(words)


def zipf_cdf() -> np.ndarray:
    weights = 1.0 / np.arange(1, VOCABULARY + 1) ** ZIPF_S
    return np.cumsum(weights / weights.sum())


def sentences(
    tokens: list[str], capitalized: list[str], ids: np.ndarray, rng: np.random.Generator
) -> str:
    """Token ids as sentences: each capitalized and ended by a full stop (AskMe splits there)."""
    parts, start = [], 0
    while start < len(ids):
        end = min(len(ids), start + int(rng.integers(*SENTENCE_TOKENS, endpoint=True)))
        words = [tokens[i] for i in ids[start + 1 : end]]
        parts.append(" ".join([capitalized[ids[start]], *words]) + ".")
        start = end
    return " ".join(parts)


def corpus_records(documents: int, seed: int) -> Iterator[dict]:
    rng = np.random.default_rng(seed)
    tokens = vocabulary(rng)
    capitalized = [token.capitalize() for token in tokens]
    cdf = zipf_cdf()
    for first in range(0, documents, CHUNK):
        size = min(CHUNK, documents - first)
        mean, sd, low, high = TITLE_TOKENS
        titles = np.clip(rng.normal(mean, sd, size).round(), low, high).astype(int)
        mu, sigma, low, high = ABSTRACT_TOKENS
        abstracts = np.clip(rng.lognormal(mu, sigma, size).round(), low, high).astype(int)
        ids = np.searchsorted(cdf, rng.random(int(titles.sum() + abstracts.sum())))
        ids = np.minimum(ids, VOCABULARY - 1)
        at = 0
        for offset in range(size):
            title = ids[at : at + titles[offset]]
            at += titles[offset]
            abstract = ids[at : at + abstracts[offset]]
            at += abstracts[offset]
            yield {
                "id": f"doc{first + offset}",
                "title": " ".join([capitalized[title[0]], *(tokens[i] for i in title[1:])]),
                "text": sentences(tokens, capitalized, abstract, rng),
            }


def query_records(queries: int, seed: int) -> list[dict]:
    """Queries of non-stop words, more frequent words more likely, as in real questions."""
    rng = np.random.default_rng(seed + 1)
    tokens = vocabulary(np.random.default_rng(seed))
    cdf = zipf_cdf()
    records = []
    for number in range(queries):
        length = int(rng.integers(*QUERY_TERMS, endpoint=True))
        ids = np.searchsorted(cdf, rng.uniform(cdf[len(STOP_WORDS) - 1], 1.0, length))
        text = " ".join(tokens[min(i, VOCABULARY - 1)] for i in ids)
        records.append({"id": f"q{number + 1}", "title": "", "text": text})
    return records


# stages, each in its own process ---------------------------------------------------------------


def stage_generate(folder: Path, documents: int, seed: int, queries: int) -> dict:
    from hybrid_ir.data.formats import write_records

    written = write_records(folder / "corpus.jsonl", corpus_records(documents, seed))
    write_records(folder / "topics.jsonl", query_records(queries, seed))
    return {"documents": written, "corpus_mb": (folder / "corpus.jsonl").stat().st_size / 2**20}


def stage_index(folder: Path) -> dict:
    from hybrid_ir.retrieval.lucene.index import build_bm25_index

    stats = build_bm25_index(folder / "corpus.jsonl", folder / "bm25-flat", "flat", store_raw=True)
    size, _ = harness.directory_bytes(folder / "bm25-flat")
    return {"indexed": stats["documents"], "index_mb": size / harness.MIB}


def stage_search(folder: Path) -> dict:
    from hybrid_ir.retrieval.lucene.search import bm25_search

    lines = bm25_search(
        folder / "bm25-flat",
        folder / "topics.jsonl",
        folder / "bm25-flat.trec",
        layout="flat",
        k1=0.9,
        b=0.4,
        depth=SEARCH_DEPTH,
        remove_query=False,
        query_fields=["text"],
        tag="bm25-flat",
    )
    return {"lines": lines}


def stage_rerank(folder: Path, in_memory: bool) -> dict:
    from hybrid_ir.data.runs import write_run
    from hybrid_ir.retrieval.retrievers import Request, retrieve

    request = Request(
        corpus=folder / "corpus.jsonl",
        topics=folder / "topics.jsonl",
        params={"depth": RERANK_DEPTH},
        query_fields=("text",),
        base=folder / "bm25-flat.trec",
        index=folder / "bm25-flat",
    )
    if in_memory:
        from hybrid_ir.data.formats import read_records
        from hybrid_ir.data.runs import read_run
        from hybrid_ir.retrieval.askme import AskMeConfig, rerank

        corpus = {record["id"]: record for record in read_records(request.corpus)}
        topics = {str(topic["id"]): str(topic["text"]) for topic in read_records(request.topics)}
        config = AskMeConfig(depth=RERANK_DEPTH)
        run = rerank(read_run(folder / "bm25-flat.trec"), corpus, topics, config)
        facts: dict = {}
        name = "askme-in-memory.trec"
    else:
        run, facts = retrieve("askme", request)
        name = "askme.trec"
    write_run(run, folder / name, tag="bm25-askme", k=SEARCH_DEPTH)
    _, python_peak = tracemalloc.get_traced_memory()
    return {"python_heap_peak_mb": python_peak / 2**20, **facts}


def start_up(stage: str) -> None:
    """Import what the stage needs and start the JVM, before anything is measured but RSS: the
    imports (pyserini brings torch) take the same seconds and heap at every corpus size."""
    from hybrid_ir.retrieval.askme import stop_words

    stop_words()
    if stage != "rerank-in-memory":
        from hybrid_ir.retrieval.lucene.jvm import pyserini_modules

        pyserini_modules()


def child(arguments: argparse.Namespace) -> None:
    folder = Path(arguments.folder)
    start = time.perf_counter()
    if arguments.stage != "generate":
        start_up(arguments.stage)
    startup = time.perf_counter() - start
    if arguments.stage.startswith("rerank"):
        tracemalloc.start()
    start = time.perf_counter()
    if arguments.stage == "generate":
        facts = stage_generate(folder, arguments.documents, arguments.seed, arguments.queries)
    elif arguments.stage == "index":
        facts = stage_index(folder)
    elif arguments.stage == "search":
        facts = stage_search(folder)
    else:
        facts = stage_rerank(folder, arguments.stage == "rerank-in-memory")
    facts["seconds"] = time.perf_counter() - start
    facts["startup_seconds"] = startup
    facts["peak_rss_mb"] = harness.peak_rss() / harness.MIB
    # The resident set at the end of the stage, split: anonymous memory (Python and JVM heaps,
    # which the JVM does not hand back, so near their peak) and pages of mapped files (Lucene
    # reads its index through mmap; the kernel can drop these clean pages at any time).
    facts |= {f"rss_{key}_mb": size / harness.MIB for key, size in harness.resident().items()}
    print("RESULT " + json.dumps(facts), flush=True)


def measure(stage: str, folder: Path, arguments: argparse.Namespace) -> dict:
    command = ["--stage", stage, "--folder", str(folder), "--documents", str(arguments.documents),
               "--seed", str(arguments.seed), "--queries", str(arguments.queries)]  # fmt: skip
    return harness.child_json(__file__, command, label=f"stage {stage}", prefix="RESULT ")


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--documents", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--in-memory-up-to", type=int, default=100_000)
    parser.add_argument("--workdir", help="where corpora and indexes go (default: a temp dir)")
    parser.add_argument("--stage", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.stage:
        arguments.documents = arguments.documents[0]
        child(arguments)
        return
    sizes = arguments.documents
    differ = False
    with tempfile.TemporaryDirectory(dir=arguments.workdir) as workdir:
        for documents in sizes:
            folder = Path(workdir) / str(documents)
            folder.mkdir()
            arguments.documents = documents
            stages = ["generate", "index", "search", "rerank"]
            if documents <= arguments.in_memory_up_to:
                stages.append("rerank-in-memory")
            for stage in stages:
                facts = harness.key_values(measure(stage, folder, arguments))
                print(f"{documents:>9,} documents  {stage:<16} {facts}", flush=True)
            if "rerank-in-memory" in stages:
                same = (folder / "askme.trec").read_bytes() == (
                    folder / "askme-in-memory.trec"
                ).read_bytes()
                print(f"{documents:>9,} documents  streamed run identical to in-memory: {same}")
                differ |= not same
            shutil.rmtree(folder)  # before the next size: a 1M corpus and index take ~4 GB
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
