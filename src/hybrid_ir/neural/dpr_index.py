"""A DPR model's flat inner-product index and what reads it (paper 000, §3.3): the collection's
[CLS] vectors encoded once into faiss ``IndexFlatIP`` shards, exact top-k search with ties
broken by document id, and re-ranking of a first-stage run from the stored vectors. Training is
:mod:`hybrid_ir.neural.dpr`'s."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from hybrid_ir.data.formats import atomic_directory
from hybrid_ir.data.runs import Run, canonicalize
from hybrid_ir.errors import InputFormatError
from hybrid_ir.neural.candidates import check_query_texts, index_rows
from hybrid_ir.neural.models import (
    Encoder,
    Pooling,
    directory_size,
)
from hybrid_ir.neural.shards import (
    ENCODE_WINDOW,
    SHARD_SIZE,
    ShardWriter,
    encode_to_shards,
    read_shards,
)

INDEX_SUFFIX = ".faiss"
"""Each shard of an index is a faiss ``IndexFlatIP`` file (:mod:`hybrid_ir.neural.shards`)."""


def save_flat_index(vectors: np.ndarray, path: Path) -> None:
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    faiss.write_index(index, str(path))


def index_dpr(
    model: Path | str,
    documents: Mapping[str, str] | Iterable[tuple[str, str]],
    index_dir: Path,
    max_length: int,
    batch_size: int = 32,
    pooling: Pooling = "cls",
    *,
    device: str = "cpu",
    precision: str = "fp32",
    shard_size: int = SHARD_SIZE,
    window: int = ENCODE_WINDOW,
) -> dict:
    """Encode ``documents`` (``(doc id, text)`` pairs, read as they come: a stream of the
    corpus) with [CLS] (or, for pya0's released models, BERT's pooler over it), ``window`` at a
    time on ``device`` in ``precision``, into flat inner-product shards of at most
    ``shard_size`` vectors (:mod:`hybrid_ir.neural.shards`). Returns the index's facts,
    throughput included (``documents_per_second``: what the scale benchmark reads)."""
    began = time.perf_counter()
    encoder = Encoder(
        model,
        pooling=pooling,
        max_length=max_length,
        batch_size=batch_size,
        device=device,
        precision=precision,
    )
    with atomic_directory(index_dir) as staging:
        writer = ShardWriter(staging, shard_size, INDEX_SUFFIX, save_flat_index)
        manifest = encode_to_shards(
            documents, lambda texts: encoder.encode(texts, progress=True), writer, window
        )
    seconds = time.perf_counter() - began
    return {
        "documents": manifest["documents"],
        "dimension": manifest["dimension"],
        "shards": len(manifest["shards"]),
        "size_bytes": directory_size(index_dir),
        "seconds": round(seconds, 1),
        "documents_per_second": round(manifest["documents"] / seconds, 1),
    }


def search_dpr(
    model: Path,
    index_dir: Path,
    queries: Mapping[str, str],
    k: int,
    max_length: int,
    pooling: Pooling = "cls",
    *,
    device: str = "cpu",
    precision: str = "fp32",
) -> Run:
    """Top-``k`` passages per query by dot product with the query's vector (pooled as the
    index's passages), in canonical run order.

    Shards are searched one at a time, each giving its top ``k`` and every passage tied with
    its ``k``-th score; the canonical top ``k`` of those is the canonical top ``k`` of the
    whole collection (faiss scores a vector the same in any shard), so the run does not depend
    on the shard size. Documents tied at the cut-off are chosen by the canonical rule (doc id
    descending), as everywhere else in the workflow.
    """
    encoder = Encoder(
        model, pooling=pooling, max_length=max_length, device=device, precision=precision
    )
    topic_ids = list(queries)
    return search_index(index_dir, topic_ids, encoder.encode([queries[t] for t in topic_ids]), k)


def search_index(index_dir: Path, topic_ids: Sequence[str], vectors: np.ndarray, k: int) -> Run:
    """:func:`search_dpr` for query vectors already encoded (row ``i`` is ``topic_ids[i]``'s)."""
    import faiss

    run: Run = {topic: {} for topic in topic_ids}
    for shard in read_shards(index_dir, INDEX_SUFFIX):
        index = faiss.read_index(str(shard.path))
        if index.ntotal != len(shard.ids):
            raise InputFormatError(
                shard.path, None, f"{index.ntotal} vectors for {len(shard.ids)} doc ids"
            )
        found = _top_with_ties(index, vectors, k)
        for topic, (scores, rows) in zip(topic_ids, found, strict=True):
            run[topic].update(
                (shard.ids[row], float(score)) for row, score in zip(rows, scores, strict=True)
            )
        # Cut after each shard: memory stays at k documents per query, not k per shard.
        run = canonicalize(run, k)
    return run


def _top_with_ties(index, vectors: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each query's top ``k`` (scores, rows) of ``index`` and every row tied with its ``k``-th:
    faiss keeps an arbitrary few of the rows tied at the cut-off."""
    total = index.ntotal
    depth = min(k, total)
    if depth == 0:
        return [(np.zeros(0, np.float32), np.zeros(0, np.int64)) for _ in vectors]
    all_scores, all_rows = index.search(vectors, depth)
    found = []
    for position, (scores, rows) in enumerate(zip(all_scores, all_rows, strict=True)):
        kth = scores[depth - 1]
        while len(scores) < total and scores[-1] == kth:
            wider = index.search(vectors[position : position + 1], min(2 * len(scores), total))
            scores, rows = wider[0][0], wider[1][0]
        keep = scores >= kth
        found.append((scores[keep], rows[keep]))
    return found


def rerank_dpr(
    model: Path,
    index_dir: Path,
    candidates: Mapping[str, Sequence[str]],
    queries: Mapping[str, str],
    query_max_length: int,
    pooling: Pooling = "cls",
    *,
    device: str = "cpu",
    precision: str = "fp32",
) -> Run:
    """Score each topic's candidate documents (``topic -> doc ids``) as :func:`search_dpr`
    scores them: the queries encoded as search encodes them (all of ``queries``), each
    candidate's passage vector read back from the index :func:`index_dpr` built (a flat index
    stores the vectors themselves), and the dot product. The collection is thus encoded once,
    by the index, and a document search also returns gets its search score (up to the float
    rounding of faiss's product against numpy's).

    Topics keep the order of ``candidates``; each topic's documents come in canonical run order
    (score descending). A topic without query text, or a candidate the index does not hold, is
    an error naming it.
    """
    check_query_texts(candidates, queries)
    if not any(candidates.values()):
        return {topic: {} for topic in candidates}
    encoder = Encoder(
        model, pooling=pooling, max_length=query_max_length, device=device, precision=precision
    )
    topic_ids = list(queries)
    vectors = dict(zip(topic_ids, encoder.encode([queries[t] for t in topic_ids]), strict=True))
    passages = stored_vectors(index_dir, candidates)
    run: Run = {}
    for topic, listed in candidates.items():
        docs = sorted(set(listed))  # id order: the order candidates are listed in changes nothing
        scores = np.stack([passages[doc] for doc in docs]) @ vectors[topic] if docs else []
        run[topic] = dict(zip(docs, map(float, scores), strict=True))
    return canonicalize(run)


def stored_vectors(
    index_dir: Path, candidates: Mapping[str, Sequence[str]]
) -> dict[str, np.ndarray]:
    """Each candidate's passage vector, read from the index's shards one shard at a time."""
    import faiss

    shards = list(read_shards(index_dir, INDEX_SUFFIX))
    rows = index_rows([doc for shard in shards for doc in shard.ids], candidates, index_dir)
    vectors: dict[str, np.ndarray] = {}
    for shard in shards:
        end = shard.offset + len(shard.ids)
        mine = {doc: row - shard.offset for doc, row in rows.items() if shard.offset <= row < end}
        if not mine:
            continue
        index = faiss.read_index(str(shard.path))
        if index.ntotal != len(shard.ids):
            raise InputFormatError(
                shard.path, None, f"{index.ntotal} vectors for {len(shard.ids)} doc ids"
            )
        stored = index.reconstruct_n(0, index.ntotal)
        vectors |= {doc: stored[row] for doc, row in mine.items()}
    return vectors
