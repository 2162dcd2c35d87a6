"""Documents by id from a Lucene index's stored fields, one lookup at a time.

:func:`hybrid_ir.retrieval.lucene.index.build_bm25_index` with ``store_raw`` (the workflow sets it
for the indexes an ``askme`` retriever names) indexes with ``-storeRaw``, so every document keeps
the BEIR JSON line it was built from (``_id``, ``title``, ``text``; Anserini re-serializes it,
which changes whitespace between keys but no value). Reading a document is one id lookup in
the index, so a re-ranker that reads its candidates this way needs memory for its candidates only,
however large the corpus. ``text`` is the indexed text: the canonical ``text`` unless the
collection's BM25 experiment joins several ``text_fields`` into it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hybrid_ir.errors import HybridIRError
from hybrid_ir.retrieval.lucene.jvm import pyserini_modules


class StoredDocuments:
    """A Lucene index's documents as canonical records (``id``, ``title``, ``text``).

    ``get`` mirrors ``dict.get``, so code written against an in-memory corpus (a dict of
    records) reads an index unchanged; ``lookups`` counts the index reads.
    """

    def __init__(self, index_dir: str | Path):
        self.index_dir = Path(index_dir)
        self._searcher = pyserini_modules().LuceneSearcher(str(self.index_dir))
        self.lookups = 0

    def get(self, doc_id: str) -> dict[str, Any] | None:
        """The record of ``doc_id``, or None when the index has no such document."""
        self.lookups += 1
        document = self._searcher.doc(doc_id)
        if document is None:
            return None
        raw = document.raw()
        if raw is None:
            raise HybridIRError(
                f"{self.index_dir}: document {doc_id!r} has no stored raw JSON "
                "(index built without -storeRaw: the workflow stores it only in an index an askme "
                "retriever names)"
            )
        stored = json.loads(raw)
        return {"id": stored["_id"], "title": stored.get("title"), "text": stored.get("text")}
