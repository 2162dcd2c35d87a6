"""ColBERT (Zhong et al. 2022, "Evaluating Token-Level and Passage-Level Dense Retrieval Models
for Math IR") on CPU with colbert-ai 0.2.22: fine-tune on triplets, index, search.

The paper fine-tunes ColBERT from a math-aware BERT with AdamW (lr 1e-6), 128-dimensional token
vectors and the pairwise softmax cross-entropy on (query, positive, negative) triplets. What
colbert-ai supplies here is everything that defines the model: :class:`colbert.modeling.colbert.
ColBERT` (BERT, a linear map to ``dim``, L2-normalised token vectors, MaxSim summed over query
tokens; punctuation dropped from documents), its tokenizers (``[CLS] [Q]`` / ``[CLS] [D]``
prefixes written as ``[unused0]`` / ``[unused1]``, queries padded to ``query_maxlen`` with
``[MASK]``: query augmentation), :func:`~colbert.modeling.tokenization.tensorize_triples`, the
loss exactly as colbert's trainer computes it (scores viewed as ``(B, 2)``, cross-entropy with
the positive at index 0), its gradient step (norm clipped to 2.0), its checkpoint format, and
the PLAID :class:`~colbert.Indexer` / :class:`~colbert.Searcher`.

Re-ranking (paper 000, §3.4) scores a first-stage run's candidates without an index: the
checkpoint's own encoders (``queryFromText``, ``docFromText``) and the MaxSim kernel that search
scores its final candidates with (``colbert_score_packed``), on uncompressed token vectors.

The training loop itself is ours: colbert's ``Trainer`` spawns one process per GPU, each
joining an NCCL group. The loop below follows the body of ``colbert.training.training.train``
in this process, with the model wrapped in ``DistributedDataParallel`` over a one-rank ``gloo``
group as colbert wraps it, and ``torch.optim.AdamW`` with the weight decay passed in. With one
rank the gradient all-reduce is an identity, so the wrapper changes no number.

Compatibility shims, installed when this module is imported (see :func:`_install_shims`):

* transformers 5 moved the registration of tied-weight keys into ``post_init()``; colbert's
  ``HF_ColBERT`` still calls the transformers-4 ``init_weights()``, so loading failed with
  ``'HF_ColBERT' object has no attribute 'all_tied_weights_keys'``.
* colbert writes a checkpoint's provenance with GitPython's ``active_branch``, which raises on a
  detached HEAD (a tag or CI checkout) after all training is done.
* colbert's launcher re-seeds Python, NumPy and torch with a hard-coded 12345 before indexing;
  :func:`index_colbert` routes that call to its ``seed`` argument instead (and puts back the
  ``CUDA_VISIBLE_DEVICES`` the launcher overwrites).

Kernels: colbert JIT-compiles four small C++ extensions on first use (segmented MaxSim, pid
filtering, residual decompression, segmented lookup; about 30 s each on two cores). They are
built under ``extensions_dir`` (``TORCH_EXTENSIONS_DIR``), by default
``.cache/torch_extensions`` under the working directory, so only the first run pays.

Determinism: training, the pid and embedding samples of k-means (Python/NumPy/torch seeds),
faiss k-means (colbert's fixed seed 123) and search are all seeded or free of randomness, so
the same inputs, seed, torch build and thread count give identical scores. Paths are handed to
colbert as absolute paths: it first tries a relative one as a Hugging Face hub repository id.
On a machine with CUDA, colbert moves models to the GPU by itself (``colbert.parameters.
DEVICE``); this module is written and tested for CPU only. ``precision`` bf16/fp16 autocasts
the training forward passes (fp16 with colbert's own gradient scaler, CUDA only); fp32 runs
without autocast.

One rank only: colbert-ai 0.2.22's multi-rank path needs CUDA. ``colbert/utils/distributed.py``
creates the process group only when ``torch.cuda.is_available()`` (line 22), and then with NCCL
(line 27); ``colbert/training/training.py`` line 56 wraps the model in
``DistributedDataParallel(device_ids=[config.rank])``, which without a group raises "Default
process group has not been initialized"; its ``barrier`` divides by
``torch.cuda.device_count()`` (``distributed.py`` line 37: ZeroDivisionError on the CPU).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from unittest import mock

import torch
from colbert import Indexer, Searcher
from colbert.indexing.collection_encoder import CollectionEncoder
from colbert.infra import ColBERTConfig, Run, RunConfig, launcher
from colbert.infra.config import base_config
from colbert.modeling import base_colbert, hf_colbert
from colbert.modeling.checkpoint import Checkpoint
from colbert.modeling.colbert import ColBERT, colbert_score_packed
from colbert.modeling.tokenization import DocTokenizer, QueryTokenizer, tensorize_triples
from colbert.utils.amp import MixedPrecisionManager
from tqdm import tqdm

from hybrid_ir.errors import ConfigError
from hybrid_ir.neural.candidates import unique_candidates
from hybrid_ir.neural.devices import autocast
from hybrid_ir.neural.models import directory_size, local_checkpoint, seed_everything
from hybrid_ir.neural.triplets import read_triplets
from hybrid_ir.runs import Run as RunDict
from hybrid_ir.runs import canonicalize

LOGGER = logging.getLogger(__name__)

DOC_IDS_FILE = "doc_ids.json"
"""Our document ids in colbert's pid order (pid = position), beside colbert's index files."""
KMEANS_ITERATIONS = 4
"""colbert's default, pinned so that an index does not change with colbert's defaults. Each
iteration costs about 30 s for 3,400 documents (290k token vectors, 8,192 centroids) on two
cores."""
NWAY = 2
"""Passages per query in a training example: the positive, then the hard negative."""
SEARCH_DOCS_FLOOR = 4096
"""colbert's ``ndocs`` for k > 100: ``max(4 k, 4096)`` documents pass the centroid-only
filter, a quarter of them are scored with full (decompressed) embeddings."""


def _post_init_compatible(factory):
    """Wrap colbert's ``class_factory`` so that ``HF_ColBERT`` initialises as transformers 5
    expects: its ``__init__`` calls ``init_weights()``, which in transformers 5 relies on
    ``post_init()`` having registered ``all_tied_weights_keys`` (and the ignore-key sets that
    ``from_pretrained`` reads). The first call therefore runs ``post_init()``, which registers
    them and calls ``init_weights()`` again, now the inherited one."""

    @functools.wraps(factory)
    def class_factory(name_or_path):
        model_class = factory(name_or_path)
        inherited = model_class.init_weights

        def init_weights(self) -> None:
            if "all_tied_weights_keys" in self.__dict__:
                inherited(self)
            else:
                self.post_init()

        model_class.init_weights = init_weights
        return model_class

    return class_factory


def _detached_head_tolerant(get_metadata):
    """Wrap colbert's checkpoint provenance: GitPython raises ``TypeError`` for the branch of a
    detached HEAD, which colbert does not catch, so saving the checkpoint would fail."""

    @functools.wraps(get_metadata)
    def get_metadata_only():
        try:
            return get_metadata()
        except TypeError:
            return {"hostname": socket.gethostname(), "cmd": " ".join(sys.argv)}

    return get_metadata_only


def _install_shims() -> None:
    """Only ``base_colbert`` builds models through ``class_factory``; the tokenizers use just its
    static ``raw_tokenizer_from_pretrained``, which transformers 5 does not affect."""
    base_colbert.class_factory = _post_init_compatible(hf_colbert.class_factory)
    base_config.get_metadata_only = _detached_head_tolerant(base_config.get_metadata_only)


_install_shims()


def _use_extensions_dir(extensions_dir: Path | None) -> None:
    """Build colbert's kernels under the project; torch reads the variable at each load, and
    colbert loads a kernel the first time a class needing it is built in the process."""
    path = Path(extensions_dir) if extensions_dir else Path.cwd() / ".cache" / "torch_extensions"
    path.mkdir(parents=True, exist_ok=True)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(path.resolve())


def _absolute(path: Path) -> str:
    """colbert asks the Hugging Face hub about any path that could be a repo id (``a/b``)."""
    return str(Path(path).resolve())


def _checkpoint(name: Path) -> str:
    """A model for colbert to load: a local one as an absolute path, a hub id (a released
    checkpoint, ``owner/name``) as it is, for colbert to fetch from the hub or its cache."""
    return str(name) if local_checkpoint(str(name)) is None else _absolute(name)


@contextlib.contextmanager
def _colbert_chatter_to_stderr() -> Iterator[None]:
    """colbert reports with ``print``; keep stdout for the caller, as the progress bars are."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


@contextlib.contextmanager
def _one_process_group() -> Iterator[None]:
    """A one-rank ``gloo`` group for ``DistributedDataParallel`` on CPU (colbert's NCCL group
    needs CUDA); a file store in a private directory needs no free port."""
    with tempfile.TemporaryDirectory(prefix="colbert-gloo-") as store:
        torch.distributed.init_process_group(
            "gloo", init_method=Path(store, "store").as_uri(), rank=0, world_size=1
        )
        try:
            yield
        finally:
            torch.distributed.destroy_process_group()


def _one_process_run() -> RunConfig:
    """colbert's run settings for this process alone: one rank, no GPU, no forked workers."""
    return RunConfig(nranks=1, rank=0, gpus=0, avoid_fork_if_possible=True)


def _replace_directory(staging: Path, final: Path) -> None:
    shutil.rmtree(final, ignore_errors=True)
    os.replace(staging, final)


def _staging(final: Path) -> Path:
    staging = Path(final).with_suffix(".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.parent.mkdir(parents=True, exist_ok=True)
    return staging


def train_colbert(
    backbone: Path,
    triplets: Path,
    output: Path,
    *,
    steps: int,
    batch_size: int,
    lr: float,
    weight_decay: float = 0.01,
    dim: int = 128,
    query_maxlen: int = 32,
    doc_maxlen: int = 180,
    seed: int = 12345,
    extensions_dir: Path | None = None,
    log_every: int = 10,
    precision: str = "fp32",
) -> dict:
    """Fine-tune the BERT in ``backbone`` as ColBERT; save a colbert-ai checkpoint at ``output``.

    Step ``i`` trains on triplets ``i*B .. i*B+B-1`` in file order, wrapping around: the
    triplet builder has already shuffled the file with the configured seed, so the order is
    reproducible and shared with the other fine-tuned models. ``backbone`` may hold extra
    pre-training heads (ignored) and added math tokens (its embeddings must already cover
    them). The checkpoint is built beside ``output`` and renamed into place only when complete.
    """
    if steps < 1 or batch_size < 1 or log_every < 1:
        raise ConfigError(
            f"ColBERT steps, batch_size and log_every must be >= 1, "
            f"got {steps!r}, {batch_size!r}, {log_every!r}"
        )
    examples = read_triplets(triplets)
    _use_extensions_dir(extensions_dir)
    seed_everything(seed)
    config = ColBERTConfig(
        checkpoint=_checkpoint(backbone),
        dim=dim,
        query_maxlen=query_maxlen,
        doc_maxlen=doc_maxlen,
        bsize=batch_size,
        accumsteps=1,
        lr=lr,
        maxsteps=steps,
        nway=NWAY,
        amp=False,
        gpus=0,
    )
    staging = _staging(output)
    with _colbert_chatter_to_stderr(), _one_process_group():
        tokenizers = _tokenizers(config, backbone)
        model = ColBERT(name=config.checkpoint, colbert_config=config)
        losses, seconds = _fit(
            model, tokenizers, config, examples, weight_decay, log_every, precision
        )
        model.save(str(staging))
    _replace_directory(staging, output)
    LOGGER.info("ColBERT checkpoint written to %s", output)
    return {
        "steps": steps,
        "batch_size": batch_size,
        "seconds": round(seconds, 3),
        "steps_per_second": round(steps / seconds, 3),
        "final_loss": losses[-1],
        "losses": losses,
    }


def _tokenizers(config: ColBERTConfig, backbone: Path) -> tuple[QueryTokenizer, DocTokenizer]:
    """colbert's tokenizers, checked for the markers: a vocabulary without ``[unused0]`` and
    ``[unused1]`` would silently turn both ``[Q]`` and ``[D]`` into ``[UNK]``."""
    queries, documents = QueryTokenizer(config, verbose=0), DocTokenizer(config)
    unknown = queries.tok.unk_token_id
    if unknown in (queries.Q_marker_token_id, documents.D_marker_token_id):
        raise ConfigError(
            f"{backbone}: the tokenizer lacks ColBERT's marker tokens "
            f"{config.query_token_id} and {config.doc_token_id}"
        )
    return queries, documents


def _batch(examples: Sequence[dict], step: int, size: int) -> tuple[list[str], list[str]]:
    """Queries, and passages as colbert's batcher lays them out: each query's positive, then
    its negative, matching the ``repeat_interleave`` of the query encodings in the model."""
    chosen = [examples[(step * size + i) % len(examples)] for i in range(size)]
    queries = [example["query"] for example in chosen]
    passages = [text for example in chosen for text in (example["positive"], example["negative"])]
    return queries, passages


def _fit(
    model: ColBERT,
    tokenizers: tuple[QueryTokenizer, DocTokenizer],
    config: ColBERTConfig,
    examples: Sequence[dict],
    weight_decay: float,
    log_every: int,
    precision: str,
) -> tuple[list[float], float]:
    """``config.maxsteps`` optimizer steps; returns the per-step losses and the seconds taken."""
    network = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    trainable = [parameter for parameter in model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=config.lr, eps=1e-8, weight_decay=weight_decay)
    stepper = MixedPrecisionManager(precision == "fp16")
    labels = torch.zeros(config.bsize, dtype=torch.long, device=model.device)
    model.train()
    losses: list[float] = []
    began = time.perf_counter()
    for step in tqdm(range(config.maxsteps), desc="ColBERT training", mininterval=5):
        queries, passages = _batch(examples, step, config.bsize)
        [(query_batch, passage_batch, _)] = tensorize_triples(
            *tokenizers, queries, passages, [], config.bsize, config.nway
        )
        with autocast(model.device.type, precision):
            scores = network(query_batch, passage_batch).view(-1, config.nway)
            loss = torch.nn.functional.cross_entropy(scores, labels)
        stepper.backward(loss)
        stepper.step(network, optimizer)
        losses.append(loss.item())
        if (step + 1) % log_every == 0 or step + 1 == config.maxsteps:
            recent = losses[-log_every:]
            LOGGER.info(
                "ColBERT step %d/%d: mean loss %.4f over the last %d steps",
                step + 1,
                config.maxsteps,
                sum(recent) / len(recent),
                len(recent),
            )
    return losses, time.perf_counter() - began


@contextlib.contextmanager
def _one_process_launch(seed: int) -> Iterator[None]:
    """colbert's one-process launcher calls ``set_seed(12345)`` before indexing; seed with
    ``seed`` there instead, so the pid sample and the k-means sample follow the argument. It
    also sets ``CUDA_VISIBLE_DEVICES`` to the run's (empty) GPU list for good, so the
    environment is put back afterwards."""
    with (
        mock.patch.dict(os.environ),
        mock.patch.object(launcher, "set_seed", lambda _: seed_everything(seed)),
    ):
        yield


@contextlib.contextmanager
def _encode_each_passage_list_once() -> Iterator[None]:
    """colbert encodes its k-means sample, then every chunk of the collection. A collection of
    at most 25,000 passages is sampled whole and forms a single chunk, so both calls
    get the same passages and the second one (a minute for 3,400 documents on two cores) would
    recompute exactly the first one's result: hand that result back instead. Larger collections
    are encoded as before."""
    encode_passages = CollectionEncoder.encode_passages
    last: dict = {}

    def encode_passages_once(self, passages):
        if last.get("passages") != passages:
            last.update(passages=list(passages), encoded=encode_passages(self, passages))
        return last["encoded"]

    with mock.patch.object(CollectionEncoder, "encode_passages", encode_passages_once):
        yield


def index_colbert(
    checkpoint: Path,
    documents: Mapping[str, str],
    index_dir: Path,
    *,
    nbits: int = 2,
    doc_maxlen: int = 180,
    extensions_dir: Path | None = None,
    seed: int = 12345,
) -> dict:
    """Build colbert's PLAID index of ``documents`` (doc id -> text) in ``index_dir``.

    colbert numbers passages by position, so the doc ids are stored in that order beside the
    index (:data:`DOC_IDS_FILE`) for :func:`search_colbert` to map pids back. The index is
    built beside ``index_dir`` and renamed into place only when complete. k-means needs at
    least as many sampled token vectors as centroids, which rules out collections of only a
    few hundred tokens.
    """
    if not documents:
        raise ConfigError("ColBERT index: no documents to index")
    _use_extensions_dir(extensions_dir)
    doc_ids = list(documents)
    staging = _staging(index_dir)
    config = ColBERTConfig(
        doc_maxlen=doc_maxlen,
        nbits=nbits,
        kmeans_niters=KMEANS_ITERATIONS,
        index_path=_absolute(staging),
    )
    began = time.perf_counter()
    with _colbert_chatter_to_stderr(), _one_process_launch(seed):
        with Run().context(_one_process_run()), _encode_each_passage_list_once():
            indexer = Indexer(checkpoint=_checkpoint(checkpoint), config=config, verbose=1)
            indexer.index(name=staging.name, collection=[documents[doc] for doc in doc_ids])
    seconds = time.perf_counter() - began
    (staging / DOC_IDS_FILE).write_text(json.dumps(doc_ids) + "\n", encoding="utf-8")
    metadata = json.loads((staging / "metadata.json").read_text(encoding="utf-8"))
    facts = {
        "documents": len(doc_ids),
        "embeddings": int(metadata["num_embeddings"]),
        "size_bytes": directory_size(staging),
        "seconds": round(seconds, 3),
    }
    _replace_directory(staging, index_dir)
    LOGGER.info("ColBERT index of %d documents written to %s", len(doc_ids), index_dir)
    return facts


def search_colbert(
    checkpoint: Path,
    index_dir: Path,
    queries: Mapping[str, str],
    *,
    k: int = 1000,
    extensions_dir: Path | None = None,
) -> RunDict:
    """Each query's top ``k`` documents by ColBERT score, in canonical run order.

    Candidate generation visits every centroid cell and prunes no centroid, so every document
    of the collection is a candidate (the collections here hold thousands of documents, not
    millions); ``ndocs`` follows colbert's own rule for k > 100, so the final ranking scores
    ``max(k, 1024)`` documents with their full decompressed embeddings. A collection smaller
    than ``k`` gives every document.
    """
    if k < 1:
        raise ConfigError(f"ColBERT search depth k must be >= 1, got {k!r}")
    if not queries:
        return {}
    _use_extensions_dir(extensions_dir)
    index_dir = Path(index_dir)
    doc_ids = json.loads((index_dir / DOC_IDS_FILE).read_text(encoding="utf-8"))
    metadata = json.loads((index_dir / "metadata.json").read_text(encoding="utf-8"))
    config = ColBERTConfig(
        ncells=int(metadata["num_partitions"]),
        centroid_score_threshold=float("-inf"),
        ndocs=max(4 * k, SEARCH_DOCS_FLOOR),
    )
    run: RunDict = {}
    with _colbert_chatter_to_stderr(), Run().context(_one_process_run()):
        searcher = Searcher(
            index=_absolute(index_dir),
            checkpoint=_checkpoint(checkpoint),
            collection=doc_ids,
            config=config,
            verbose=1,
        )
        # Encoding all queries in one batch (as colbert's search_all does) beats one by one.
        encoded = searcher.encode(list(queries.values()))
        for position, query_id in enumerate(tqdm(queries, desc="ColBERT search", mininterval=5)):
            pids, _, scores = searcher.dense_search(encoded[position : position + 1], k=k)
            run[query_id] = {
                doc_ids[pid]: float(score) for pid, score in zip(pids, scores, strict=True)
            }
    return canonicalize(run)


def rerank_colbert(
    checkpoint: Path,
    candidates: Mapping[str, Sequence[str]],
    documents: Mapping[str, str],
    queries: Mapping[str, str],
    *,
    query_maxlen: int,
    doc_maxlen: int,
    extensions_dir: Path | None = None,
) -> RunDict:
    """Score each topic's candidate documents (``topic -> doc ids``) by ColBERT's late
    interaction, as :func:`search_colbert` scores the documents it returns: query vectors
    (``query_maxlen`` tokens, ``[MASK]``-augmented) against each document's token vectors
    (``doc_maxlen``, punctuation dropped), maximum per query token (floored at 0, as in
    colbert's CPU kernel, which both use), summed. Search reads the token vectors back from
    the index's residual compression (``nbits``); here they are the encoder's own, so the two
    scores agree up to that compression. Each candidate is encoded once, in doc id order, in
    batches of colbert's indexing batch size. Topics keep the order of ``candidates``; each
    topic's documents come in canonical run order (score descending).
    """
    unique = unique_candidates(candidates, documents, queries)
    if not unique:
        return {topic: {} for topic in candidates}
    _use_extensions_dir(extensions_dir)
    path = _checkpoint(checkpoint)
    run: RunDict = {}
    with _colbert_chatter_to_stderr(), Run().context(_one_process_run()):
        # A checkpoint without colbert's metadata (pya0's released ColBERT) leaves the config's
        # checkpoint unset, and the tokenizers would load from the hub id "None".
        config = ColBERTConfig.from_existing(
            ColBERTConfig.load_from_checkpoint(path),
            ColBERTConfig(checkpoint=path, query_maxlen=query_maxlen, doc_maxlen=doc_maxlen),
            Run().config,
        )
        model = Checkpoint(path, colbert_config=config, verbose=0)
        vectors, lengths = _encode_documents(model, [documents[doc] for doc in unique], config)
        per_document = dict(zip(unique, vectors.split(lengths), strict=True))
        doc_lengths = dict(zip(unique, lengths, strict=True))
        topic_ids = sorted(candidates)  # encoded in id order, so topic order changes no number
        texts = [queries[topic] for topic in topic_ids]
        # As colbert's Searcher.encode: one batch, unless there are more than 128 queries.
        encoded = model.queryFromText(texts, bsize=128 if len(texts) > 128 else None, to_cpu=True)
        query_vectors = dict(zip(topic_ids, encoded.split(1), strict=True))
        for topic in tqdm(candidates, desc="ColBERT re-rank: topics", mininterval=5):
            docs = sorted(set(candidates[topic]))  # listing order changes no number
            packed = torch.cat([per_document[doc] for doc in docs]).contiguous()
            sizes = torch.tensor([doc_lengths[doc] for doc in docs], dtype=torch.int64)
            scores = colbert_score_packed(query_vectors[topic], packed, sizes, config)
            run[topic] = dict(zip(docs, scores.tolist(), strict=True))
    return canonicalize(run)


def _encode_documents(
    model: Checkpoint, texts: Sequence[str], config: ColBERTConfig
) -> tuple[torch.Tensor, list[int]]:
    """Token vectors of ``texts`` packed end to end, as colbert's CollectionEncoder packs them
    for an index, and each text's number of vectors."""
    size = config.index_bsize
    packed, lengths = [], []
    for start in tqdm(range(0, len(texts), size), desc="ColBERT re-rank: documents", mininterval=5):
        vectors, counts = model.docFromText(
            list(texts[start : start + size]), bsize=size, keep_dims="flatten"
        )
        packed.append(vectors)
        lengths += counts
    return torch.cat(packed).float(), lengths
