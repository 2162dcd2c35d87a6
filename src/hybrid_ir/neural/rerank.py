"""Paper 001's re-ranker: cosine of mean-pooled token embeddings of a further-pretrained MLM.

Each first-stage candidate (the top ``depth`` of a base run) and each query is embedded as the
mean of its last-layer token vectors, with head truncation: the first ``max_length - 2`` word
pieces are kept (510 for BERT's 512 positions), as PSU truncated long posts. The candidates of
a topic are re-scored by cosine similarity; documents below ``depth`` are dropped, so the
result is a re-ranked candidate list that fusion (RRF) combines with the first stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from hybrid_ir.neural.models import Encoder
from hybrid_ir.runs import Run, ranked


def rerank_by_embeddings(
    model: str | Path,
    base: Run,
    documents: Mapping[str, str],
    queries: Mapping[str, str],
    depth: int,
    max_length: int = 512,
    batch_size: int = 16,
) -> Run:
    candidates = {
        topic: [doc for doc, _ in ranked(docs, depth)]
        for topic, docs in base.items()
        if topic in queries
    }
    unique = sorted({doc for docs in candidates.values() for doc in docs})
    encoder = Encoder(
        model, pooling="mean", max_length=max_length, batch_size=batch_size, normalize=True
    )
    doc_vectors = dict(
        zip(unique, encoder.encode([documents[d] for d in unique], progress=True), strict=True)
    )
    topics = list(candidates)
    query_vectors = encoder.encode([queries[t] for t in topics])
    return {
        topic: {doc: float(doc_vectors[doc] @ query_vectors[i]) for doc in candidates[topic]}
        for i, topic in enumerate(topics)
    }
