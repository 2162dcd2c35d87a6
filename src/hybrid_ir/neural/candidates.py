"""Candidates of a re-ranker: the top documents of a base run, checked against the queries
and the index that holds their vectors.

Paper 000 §3.4 re-scores a first-stage run's candidates with a fine-tuned encoder; the
encoders' ``rerank`` entries (:mod:`hybrid_ir.neural.encoders`) take the candidates as
``topic -> doc ids`` and read their vectors from the index the encoder's search reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from hybrid_ir.data.runs import Run, ranked
from hybrid_ir.errors import HybridIRError, InputFormatError, ParameterError

Candidates = Mapping[str, Sequence[str]]


def top_candidates(base: Run, topics: Iterable[str], depth: int) -> dict[str, list[str]]:
    """Each listed topic's top ``depth`` documents of ``base`` in canonical run order (score
    descending, then doc id descending), topics in the order given; a topic the base run
    does not hold has no candidates and is left out."""
    if depth < 1:
        raise ParameterError(f"re-ranking depth must be >= 1, got {depth!r}")
    return {
        topic: [doc for doc, _ in ranked(base[topic], depth)] for topic in topics if topic in base
    }


def check_query_texts(candidates: Candidates, queries: Mapping[str, str]) -> None:
    """A topic with candidates but without query text is an error naming it."""
    for topic in candidates:
        if topic not in queries:
            raise HybridIRError(f"re-ranking: topic {topic!r} has no query text")


def index_rows(doc_ids: Sequence[str], candidates: Candidates, index: str | Path) -> dict[str, int]:
    """Each candidate's row in an index whose rows hold ``doc_ids`` in order; a candidate the
    index does not hold is an error naming it and the index (built from another corpus)."""
    rows = {doc: row for row, doc in enumerate(doc_ids)}
    for topic, docs in candidates.items():
        for doc in docs:
            if doc not in rows:
                raise InputFormatError(
                    index,
                    None,
                    f"re-ranking: document {doc!r} (a candidate of topic {topic!r}) is not in "
                    "the index: the base run and the index come from different corpora",
                )
    return {doc: rows[doc] for docs in candidates.values() for doc in docs}


def unique_candidates(
    candidates: Candidates, documents: Mapping[str, str], queries: Mapping[str, str]
) -> list[str]:
    """Every candidate document once, sorted by id (so encoding order does not depend on the
    topics); a topic without query text or a candidate without document text is an error
    naming it."""
    check_query_texts(candidates, queries)
    for topic, docs in candidates.items():
        for doc in docs:
            if doc not in documents:
                raise HybridIRError(
                    f"re-ranking: document {doc!r} (a candidate of topic {topic!r}) is not in "
                    "the corpus"
                )
    return sorted({doc for docs in candidates.values() for doc in docs})
