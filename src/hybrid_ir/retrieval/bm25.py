"""The settings of a Lucene BM25 search, and their defaults, stated once.

Every BM25 run over a Lucene index is searched by
:func:`hybrid_ir.retrieval.lucene.search.bm25_search` with one :class:`BM25Settings`: the
workflow's ``bm25_search`` rule builds it from the configuration (``bm25.k1``, ``bm25.b``,
``run_depth``, the experiment's ``remove_query`` and ``query_fields``), ``hybrid-ir search``
from its options, whose defaults are these, and :func:`hybrid_ir.interfaces.api.bm25_search`
from its arguments. This module imports no Lucene: the API and the command's parser read the
defaults without starting a JVM.

Paper 002's BM25 as sparse matrices (:class:`hybrid_ir.retrieval.sparse.SparseBM25`, the
``sparse_bm25`` retriever) is another model, with its own analyzer, idf and defaults.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hybrid_ir.data.runs import DEFAULT_K
from hybrid_ir.errors import ConfigError
from hybrid_ir.retrieval.lucene.index import check_layout

JAVA_INT_MAX = 2**31 - 1
"""The largest depth and thread count Anserini's searcher and indexer take: a Java ``int``
(3,000,000,000 was a JavaException naming no option)."""


@dataclass(frozen=True)
class BM25Settings:
    """How one BM25 run is searched; every field has the default every caller shares."""

    layout: str = "flat"
    """The index's layout, as built (:data:`hybrid_ir.retrieval.lucene.index.LAYOUTS`): ``flat``
    searches title and text as one field, ``multifield`` each field, weighted equally as
    pyserini's multifield BEIR regressions weigh them."""
    k1: float = 0.9
    """BM25's term-frequency saturation: Anserini's (and pyserini's) default, with ``b``."""
    b: float = 0.4
    """BM25's document-length normalization, from 0 (none) to 1."""
    depth: int = DEFAULT_K
    """Documents retrieved per topic."""
    query_fields: tuple[str, ...] = ("title", "text")
    """The topic fields whose non-empty values, space-joined in this order, are the query."""
    remove_query: bool = False
    """Drop a hit whose id is the topic's own id, after retrieving ``depth`` documents (as
    pyserini's ``--remove-query``): for a collection that holds its queries, such a topic keeps
    ``depth - 1`` results."""
    tag: str = "bm25"
    """The run tag, the last column of each line."""
    threads: int = 1
    """Search threads (the run is the same for any number)."""
    batch_size: int = 64
    """Topics searched per batch (the run is the same for any size)."""

    def __post_init__(self) -> None:
        check_layout(self.layout)
        object.__setattr__(self, "query_fields", tuple(self.query_fields))
        if not self.query_fields:
            raise ConfigError("BM25 query_fields: name at least one topic field")
        if not (math.isfinite(self.k1) and self.k1 >= 0):
            raise ConfigError(f"BM25 k1 must be a finite number of at least 0, got {self.k1}")
        if not 0 <= self.b <= 1:
            raise ConfigError(f"BM25 b must be from 0 to 1, got {self.b}")
        for name in ("depth", "threads", "batch_size"):
            value = getattr(self, name)
            if not 1 <= value <= JAVA_INT_MAX:
                raise ConfigError(
                    f"BM25 {name} must be from 1 to {JAVA_INT_MAX:,} (a Java int), got {value}"
                )


DEFAULTS = BM25Settings()
"""The defaults, for a command line's options."""
