"""BM25 top-k runs over a Lucene index, with pyserini's semantics."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from tqdm import tqdm

from hybrid_ir.formats import RunEntry, read_records
from hybrid_ir.lucene.jvm import pyserini_modules
from hybrid_ir.runs import write_entries

JAVA_INT_MAX = 2**31 - 1
"""The largest depth and thread count Anserini's searcher and indexer take: a Java ``int``
(3,000,000,000 was a JavaException naming no option)."""

# Pyserini's multifield BEIR regressions weigh both fields equally.
MULTIFIELD_WEIGHTS = {"contents": 1.0, "title": 1.0}


def query_text(topic: dict, fields: Sequence[str]) -> str:
    """The query string: the non-empty topic fields, in the configured order, space-joined."""
    return " ".join(str(topic[field]) for field in fields if topic.get(field))


def bm25_search(
    index_dir: str | Path,
    topics_path: str | Path,
    run_path: str | Path,
    *,
    layout: str,
    k1: float,
    b: float,
    depth: int,
    remove_query: bool,
    query_fields: Sequence[str],
    tag: str,
    threads: int = 1,
    batch_size: int = 64,
) -> int:
    """Search every topic and write a TREC run; return the number of lines written.

    As pyserini's ``--remove-query`` does, a document whose id equals the query id is dropped
    after retrieving ``depth`` documents, so such a topic keeps ``depth - 1`` results.
    """
    searcher = pyserini_modules().LuceneSearcher(str(index_dir))
    searcher.set_bm25(k1, b)
    fields = MULTIFIELD_WEIGHTS if layout == "multifield" else {}
    topics = list(read_records(topics_path))

    def entries() -> Iterator[RunEntry]:
        progress = tqdm(total=len(topics), desc="BM25", unit="topic", mininterval=5)
        for start in range(0, len(topics), batch_size):
            batch = topics[start : start + batch_size]
            query_ids = [str(topic["id"]) for topic in batch]
            queries = [query_text(topic, query_fields) for topic in batch]
            results = searcher.batch_search(queries, query_ids, depth, threads, fields=fields)
            for query_id in query_ids:
                kept = [
                    hit for hit in results[query_id] if not (remove_query and hit.docid == query_id)
                ]
                for rank, hit in enumerate(kept, start=1):
                    yield RunEntry(query_id, hit.docid, rank, hit.score, tag)
            progress.update(len(batch))
        progress.close()

    return write_entries(run_path, entries())
