"""BM25 top-k runs over a Lucene index, with pyserini's semantics: :func:`bm25_search`, the one
function every BM25 run is searched with, on :class:`~hybrid_ir.retrieval.bm25.BM25Settings`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from hybrid_ir.data.formats import RunEntry, read_records
from hybrid_ir.data.runs import write_entries
from hybrid_ir.retrieval.bm25 import BM25Settings
from hybrid_ir.retrieval.lucene.jvm import pyserini_modules

# Pyserini's multifield BEIR regressions weigh both fields equally.
MULTIFIELD_WEIGHTS = {"contents": 1.0, "title": 1.0}


def query_text(topic: dict, fields: Sequence[str]) -> str:
    """The query string: the non-empty topic fields, in the configured order, space-joined."""
    return " ".join(str(topic[field]) for field in fields if topic.get(field))


def bm25_search(
    index_dir: str | Path,
    topics_path: str | Path,
    run_path: str | Path,
    settings: BM25Settings | None = None,
    **changes: Any,
) -> int:
    """Search every topic and write a TREC run; return the number of lines written.

    ``settings`` (:class:`~hybrid_ir.retrieval.bm25.BM25Settings`, whose defaults are every
    caller's) with ``changes`` to its fields applied on top (``k1=1.2, depth=100``).
    """
    settings = replace(settings or BM25Settings(), **changes)
    searcher = pyserini_modules().LuceneSearcher(str(index_dir))
    searcher.set_bm25(settings.k1, settings.b)
    fields = MULTIFIELD_WEIGHTS if settings.layout == "multifield" else {}
    topics = list(read_records(topics_path))

    def entries(run: BM25Settings) -> Iterator[RunEntry]:
        progress = tqdm(total=len(topics), desc="BM25", unit="topic", mininterval=5)
        for start in range(0, len(topics), run.batch_size):
            batch = topics[start : start + run.batch_size]
            query_ids = [str(topic["id"]) for topic in batch]
            queries = [query_text(topic, run.query_fields) for topic in batch]
            results = searcher.batch_search(
                queries, query_ids, run.depth, run.threads, fields=fields
            )
            for query_id in query_ids:
                kept = [
                    hit
                    for hit in results[query_id]
                    if not (run.remove_query and hit.docid == query_id)
                ]
                for rank, hit in enumerate(kept, start=1):
                    yield RunEntry(query_id, hit.docid, rank, hit.score, run.tag)
            progress.update(len(batch))
        progress.close()

    return write_entries(run_path, entries(settings))
