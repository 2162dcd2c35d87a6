"""Retrievers named in configuration: a model, its parameters, canonical corpus and topics -> a run.

Models: ``tfidf_cosine`` (paper 003's VSR, paper 001's tf-idf), ``pivoted_tfidf`` and
``sparse_bm25`` (paper 002, sparse matrices; ``sparse_bm25`` can tune k1/b on a development
split first), ``dense`` (a sentence encoder, paper 003), and ``askme`` (paper 004: re-ranks a
base run). Each returns the run and a dict of facts worth logging (tuned parameters, sizes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid_ir.data.formats import read_records
from hybrid_ir.data.qrels import read_qrels
from hybrid_ir.data.runs import Run, read_run
from hybrid_ir.errors import ConfigError
from hybrid_ir.neural.dense import (
    SentenceEncoder,
    encode_corpus,
    read_embeddings,
    search_shards,
    topic_texts,
)
from hybrid_ir.neural.devices import resolve_device
from hybrid_ir.neural.shards import ENCODE_WINDOW, SHARD_SIZE
from hybrid_ir.retrieval.askme import AskMeConfig, rerank
from hybrid_ir.retrieval.lucene.stored import StoredDocuments


@dataclass(frozen=True)
class Request:
    """What a retriever needs: files, fields and parameters from its configuration entry."""

    corpus: Path
    topics: Path
    params: Mapping[str, Any] = field(default_factory=dict)
    doc_fields: Sequence[str] = ("title", "text")
    query_fields: Sequence[str] = ("title", "text")
    analyzer: Mapping[str, Any] | None = None
    depth: int = 1000
    base: Path | None = None
    index: Path | None = None
    tune: Mapping[str, Any] | None = None
    tune_topics: Path | None = None
    tune_qrels: Path | None = None
    threads: int | None = None
    languages: Sequence[str] | None = None
    scope: str = "language"


def request_from(entry: Mapping[str, Any], files: Mapping[str, Any], threads: int) -> Request:
    """The request of a configured retriever (``retrievers.<collection>.<run>``, defaults
    filled) and the job's named input files (``corpus``, ``topics``, optionally ``base``,
    ``index``, ``tune_topics``, ``tune_qrels``); torch-based models use ``threads``."""
    return Request(
        corpus=files["corpus"],
        topics=files["topics"],
        params=entry["params"],
        doc_fields=entry["doc_fields"],
        query_fields=entry["query_fields"],
        analyzer=entry.get("analyzer"),
        depth=entry["depth"],
        base=files.get("base"),
        index=files.get("index"),
        tune=entry.get("tune"),
        tune_topics=files.get("tune_topics"),
        tune_qrels=files.get("tune_qrels"),
        threads=threads,
        languages=entry.get("languages"),
        scope=entry.get("search", "language"),
    )


def _texts(path: Path, fields: Sequence[str]) -> dict[str, str]:
    from hybrid_ir.retrieval.sparse import record_texts

    return record_texts(read_records(path), fields)


def _analyzer(request: Request):
    from hybrid_ir.retrieval.analysis import Analyzer

    return Analyzer(**(request.analyzer or {}))


def _fit_and_search(model, request: Request) -> tuple[Run, dict]:
    model.fit(_texts(request.corpus, request.doc_fields))
    return model.search(_texts(request.topics, request.query_fields), request.depth), {}


def tfidf_cosine(request: Request) -> tuple[Run, dict]:
    from hybrid_ir.retrieval.sparse import TfidfCosine

    analyzer = _analyzer(request) if request.analyzer is not None else None
    return _fit_and_search(TfidfCosine(analyzer=analyzer, **request.params), request)


def _multilingual(model: str, request: Request) -> tuple[Run, dict]:
    """Paper 002 per language (:mod:`hybrid_ir.retrieval.multilingual`): a collection with
    languages."""
    from hybrid_ir.retrieval.multilingual import Tuning, search

    tuning = None
    if request.tune:
        if request.tune_topics is None or request.tune_qrels is None:
            raise ConfigError("sparse_bm25 tuning needs development topics and qrels")
        tuning = Tuning(
            list(read_records(request.tune_topics)),
            read_qrels(request.tune_qrels),
            request.tune["measure"],
            **{
                field: request.tune[key]
                for key, field in (("k1", "k1s"), ("b", "bs"), ("depth", "depth"))
                if key in request.tune
            },
        )
    return search(
        model,
        list(read_records(request.corpus)),
        list(read_records(request.topics)),
        request.doc_fields,
        request.query_fields,
        request.depth,
        params=request.params,
        analyzer=request.analyzer,
        scope=request.scope,
        tuning=tuning,
    )


def pivoted_tfidf(request: Request) -> tuple[Run, dict]:
    from hybrid_ir.retrieval.sparse import PivotedTfidf

    if request.languages:
        return _multilingual("pivoted_tfidf", request)
    return _fit_and_search(PivotedTfidf(_analyzer(request), **request.params), request)


def sparse_bm25(request: Request) -> tuple[Run, dict]:
    """BM25 as a sparse matrix; with ``tune``, k1 and b are first grid-searched on the
    development topics and qrels (paper 002's first tuning stage), then used on the topics."""
    from hybrid_ir.retrieval.sparse import BS, K1S, SparseBM25, grid_search_bm25

    if request.languages:
        return _multilingual("sparse_bm25", request)
    model = SparseBM25(_analyzer(request), **request.params)
    model.fit(_texts(request.corpus, request.doc_fields))
    facts: dict[str, Any] = {}
    if request.tune:
        if request.tune_topics is None or request.tune_qrels is None:
            raise ConfigError("sparse_bm25 tuning needs development topics and qrels")
        tuned = grid_search_bm25(
            model,
            _texts(request.tune_topics, request.query_fields),
            read_qrels(request.tune_qrels),
            request.tune["measure"],
            k1s=request.tune.get("k1", K1S),
            bs=request.tune.get("b", BS),
            k=request.tune.get("depth", request.depth),
        )
        model.set_params(*tuned.best)
        facts = {
            "tuned_on": str(request.tune_topics),
            "measure": request.tune["measure"],
            "k1": tuned.best[0],
            "b": tuned.best[1],
            "dev_score": tuned.best_score,
        }
    return model.search(_texts(request.topics, request.query_fields), request.depth), facts


def dense(request: Request) -> tuple[Run, dict]:
    """Sentence-encoder retrieval by cosine similarity (paper 003's dense side); with
    ``query_adapter`` / ``document_adapter`` params, each side is encoded with its adapter
    (paper 003's Fig. 5: SPECTER2's ad-hoc query and proximity adapters). The corpus is
    streamed into embedding shards in a temporary directory (``TMPDIR``: node-local scratch on
    a cluster), searched one shard at a time (``shard_size``, ``encode_window``); ``device`` and
    ``precision`` are where and how it encodes."""
    import tempfile

    sizes = {"shard_size": SHARD_SIZE, "encode_window": ENCODE_WINDOW}
    params = dict(request.params)
    shard_size, window = (params.pop(key, default) for key, default in sizes.items())
    key = "retrievers.<collection>.<run>.params.device"
    device = resolve_device(params.pop("device", "auto"), key)
    encoder = SentenceEncoder(**{"threads": request.threads, **params, "device": device})
    with tempfile.TemporaryDirectory(prefix="dense-embeddings-") as scratch:
        embeddings = Path(scratch, "embeddings")
        encoded = encode_corpus(
            request.corpus,
            embeddings,
            encoder,
            request.doc_fields,
            shard_size=shard_size,
            window=window,
        )
        queries = topic_texts(read_records(request.topics), request.query_fields)
        run = search_shards(read_embeddings(embeddings), queries, request.depth, encoder)
    adapters = {
        key: request.params[key]
        for key in ("query_adapter", "document_adapter")
        if key in request.params
    }
    return run, {"model": encoder.model_name, "documents": encoded["documents"], **adapters}


def askme(request: Request) -> tuple[Run, dict]:
    """Paper 004: the base (BM25) run's top documents re-ranked by AskMe's heuristics, each
    read from the Lucene index's stored documents (never the whole corpus: BioASQ has 14.9M)."""

    if request.base is None:
        raise ConfigError("askme needs a base run (the BM25 run it re-ranks)")
    if request.index is None:
        raise ConfigError("askme needs a Lucene index (the stored documents it scores)")
    topics = _texts(request.topics, request.query_fields)
    config = AskMeConfig.from_dict(request.params)
    documents = StoredDocuments(request.index)
    run = rerank(read_run(request.base), documents, topics, config)
    return run, {"depth": config.depth, "documents_read": documents.lookups}


RETRIEVERS: dict[str, Callable[[Request], tuple[Run, dict]]] = {
    "tfidf_cosine": tfidf_cosine,
    "pivoted_tfidf": pivoted_tfidf,
    "sparse_bm25": sparse_bm25,
    "dense": dense,
    "askme": askme,
}


def retrieve(model: str, request: Request) -> tuple[Run, dict]:
    if model not in RETRIEVERS:
        raise ConfigError(
            f"unknown retriever model {model!r}; choose one of {', '.join(RETRIEVERS)}"
        )
    return RETRIEVERS[model](request)
