"""ColBERT (Zhong et al. 2022, "Evaluating Token-Level and Passage-Level Dense Retrieval Models
for Math IR") with colbert-ai 0.2.22: fine-tune on triplets, index, search, re-rank.

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

Backbones: any model colbert's ``class_factory`` builds by ``model_type`` (BERT, RoBERTa, ...).
A vocabulary without the two marker tokens (RoBERTa's byte-level BPE has no ``[unused*]``)
gets them as added special tokens, with the embeddings resized, in a copy of the backbone
beside the output: the checkpoint carries them, and indexing, search and re-ranking load them
from it. The backbone directory itself is never changed.

The training loop itself is ours: colbert's ``Trainer`` spawns one process per GPU, each
joining an NCCL group. The loop below follows the body of ``colbert.training.training.train``
in this process, with the model wrapped in ``DistributedDataParallel`` over a one-rank ``gloo``
group as colbert wraps it, and ``torch.optim.AdamW`` with the weight decay passed in. With one
rank the gradient all-reduce is an identity, so the wrapper changes no number.

Gradient accumulation (``micro_batch_size`` m): a step's batch of B triplets is tensorized
whole, as colbert's batcher does with ``accumsteps`` (queries padded to ``query_maxlen``,
passages to the longest of the batch), and run as B/m forward and backward passes of m
triplets, each loss (its cross-entropy mean) weighted m/B; one optimizer step follows. The
loss has no in-batch negatives (a query competes only with its own two passages), so the
summed gradients are those of the whole batch's mean, up to float rounding. Unset, the batch
is one forward pass.

Resumption: with a ``workdir``, every ``checkpoint_every`` steps the model, optimizer, gradient
scaler, step, losses and the random generators' states (torch CPU and CUDA, NumPy, Python) are
saved there, atomically, the last two kept, with the run's fingerprint: the settings, the
backbone's files, the triplet file and this module's code. colbert's BERT draws its dropout
masks from torch's global generator, so restoring the generators is what makes a run that was
killed and restarted end with the weights of one that never stopped (same device, torch build
and threads). A checkpoint made otherwise is ignored, with a log line naming what differs.

Re-ranking (paper 000, §3.4) scores a first-stage run's candidates from the index search
reads: search's query encoding, the candidates' token vectors decompressed from the index's
residuals, and the MaxSim that search scores its final candidates with, so the collection is
encoded once (by the index) and search and re-ranking agree on every document both score.

colbert-ai made to run on the job's device, with transformers 5, one rank and project-local
kernels: :mod:`hybrid_ir.neural.colbert_compat`.

Determinism: training, the pid and embedding samples of k-means (Python/NumPy/torch seeds),
faiss k-means (colbert's fixed seed 123) and search are all seeded or free of randomness, so
the same inputs, seed, torch build and thread count give identical scores. Paths are handed to
colbert as absolute paths: it first tries a relative one as a Hugging Face hub repository id.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import torch
from colbert import Indexer, Searcher
from colbert.infra import ColBERTConfig, Run
from colbert.modeling.colbert import ColBERT
from colbert.modeling.tokenization import DocTokenizer, QueryTokenizer, tensorize_triples
from colbert.utils.amp import MixedPrecisionManager
from tqdm import tqdm

from hybrid_ir.data.hub import local_checkpoint
from hybrid_ir.data.runs import Run as RunDict
from hybrid_ir.data.runs import canonicalize
from hybrid_ir.errors import ConfigError
from hybrid_ir.neural.candidates import check_query_texts, index_rows
from hybrid_ir.neural.checkpoints import (
    load_state,
    prune,
    restore_rng_states,
    rng_states,
    save_state,
    step_directories,
)
from hybrid_ir.neural.colbert_compat import (
    check_cuda_toolkit,
    colbert_chatter_to_stderr,
    encode_each_passage_list_once,
    gpus_for,
    install_shims,
    on_device,
    one_process_group,
    one_process_launch,
    one_process_run,
    use_extensions_dir,
)
from hybrid_ir.neural.devices import autocast
from hybrid_ir.neural.distributed import accumulation_steps
from hybrid_ir.neural.models import directory_size, resize_embeddings, seed_everything
from hybrid_ir.neural.triplets import read_triplets

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
CHECKPOINT_EVERY = 1000
"""Training steps between two checkpoints under a workdir (the last two are kept)."""


COLBERT_KEY = "math_models.colbert"


def check_colbert_search_bounds(
    ncells: int | None, ndocs: int | None, key: str = COLBERT_KEY
) -> None:
    """ColBERT search's candidate bounds (None: colbert's search of every cell, see
    :func:`hybrid_ir.neural.colbert.search_colbert`); ``key`` is the settings entry."""
    for name, value in (("ncells", ncells), ("ndocs", ndocs)):
        if value is not None and value < 1:
            raise ConfigError(
                f"config: {key}.{name}: must be >= 1 (or unset for colbert's unbounded "
                f"search), got {value!r}"
            )


def _absolute(path: Path) -> str:
    """colbert asks the Hugging Face hub about any path that could be a repo id (``a/b``)."""
    return str(Path(path).resolve())


def _checkpoint(name: Path) -> str:
    """A model for colbert to load: a local one as an absolute path, a hub id (a released
    checkpoint, ``owner/name``) as it is, for colbert to fetch from the hub or its cache."""
    return str(name) if local_checkpoint(str(name)) is None else _absolute(name)


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
    micro_batch_size: int | None = None,
    checkpoint_every: int = CHECKPOINT_EVERY,
    workdir: Path | None = None,
    extensions_dir: Path | None = None,
    log_every: int = 10,
    device: str = "cpu",
    precision: str = "fp32",
) -> dict:
    """Fine-tune the model in ``backbone`` as ColBERT; save a colbert-ai checkpoint at ``output``.

    Step ``i`` trains on triplets ``i*B .. i*B+B-1`` in file order, wrapping around: the
    triplet builder has already shuffled the file with the configured seed, so the order is
    reproducible and shared with the other fine-tuned models. ``backbone`` may hold extra
    pre-training heads (ignored) and added math tokens (its embeddings must already cover
    them). With ``workdir``, training checkpoints are kept there and a restarted run resumes
    from them. The checkpoint is built beside ``output`` and renamed into place only when
    complete.
    """
    install_shims()
    if steps < 1 or batch_size < 1 or log_every < 1:
        raise ConfigError(
            f"ColBERT steps, batch_size and log_every must be >= 1, "
            f"got {steps!r}, {batch_size!r}, {log_every!r}"
        )
    accumulation_steps(batch_size, 1, micro_batch_size, COLBERT_KEY)
    if checkpoint_every < 1:
        raise ConfigError(
            f"config: math_models.colbert.checkpoint_every: must be >= 1, got {checkpoint_every!r}"
        )
    examples = read_triplets(triplets)
    settings = {
        "steps": steps,
        "batch_size": batch_size,
        "micro_batch_size": micro_batch_size,
        "lr": lr,
        "weight_decay": weight_decay,
        "dim": dim,
        "query_maxlen": query_maxlen,
        "doc_maxlen": doc_maxlen,
        "seed": seed,
        "checkpoint_every": checkpoint_every,
        "precision": precision,
    }
    checkpoints = None
    if workdir is not None:
        fingerprint = _fingerprint(backbone, triplets, settings)
        checkpoints = _Checkpoints(Path(workdir), checkpoint_every, fingerprint)
    micro = micro_batch_size or batch_size
    use_extensions_dir(extensions_dir)
    seed_everything(seed)
    staging = _staging(output)
    with (
        colbert_chatter_to_stderr(),
        on_device(device, precision),
        _with_markers(backbone, Path(output)) as marked,
        one_process_group(),
    ):
        config = ColBERTConfig(
            checkpoint=_checkpoint(marked),
            dim=dim,
            query_maxlen=query_maxlen,
            doc_maxlen=doc_maxlen,
            bsize=batch_size,
            accumsteps=batch_size // micro,
            lr=lr,
            maxsteps=steps,
            nway=NWAY,
            amp=precision == "fp16",
            gpus=gpus_for(device),
        )
        tokenizers = QueryTokenizer(config, verbose=0), DocTokenizer(config)
        model = ColBERT(name=config.checkpoint, colbert_config=config)
        fit = _fit(
            model,
            tokenizers,
            config,
            examples,
            weight_decay,
            log_every,
            precision,
            micro,
            checkpoints,
        )
        model.save(str(staging))
    _replace_directory(staging, output)
    LOGGER.info("ColBERT checkpoint written to %s", output)
    trained = steps - fit.start
    return {
        "steps": steps,
        "batch_size": batch_size,
        "micro_batch_size": micro_batch_size,
        "resumed_from_step": fit.start,
        "seconds": round(fit.seconds, 3),
        "steps_per_second": round(trained / fit.seconds, 3),
        "final_loss": fit.losses[-1],
        "losses": fit.losses,
    }


MARKERS = ("[unused0]", "[unused1]")
"""colbert's ``query_token_id`` and ``doc_token_id``: the tokens its ``[Q]`` and ``[D]`` are."""


def _missing_markers(tokenizer) -> list[str]:
    """Markers the tokenizer turns into its unknown token (or into nothing, without one)."""
    ids = tokenizer.convert_tokens_to_ids(list(MARKERS))
    return [
        m for m, i in zip(MARKERS, ids, strict=True) if i is None or i == tokenizer.unk_token_id
    ]


@contextlib.contextmanager
def _with_markers(backbone: Path, output: Path) -> Iterator[Path]:
    """The backbone, or, when its vocabulary lacks ColBERT's markers (RoBERTa's has no
    ``[unused*]``, and colbert would silently make both ``[Q]`` and ``[D]`` its unknown token),
    a copy beside ``output`` with the markers added as special tokens and the embeddings grown
    to match (the new rows as pretraining's math tokens start). The encoder is copied without
    the backbone's pre-training heads, which ColBERT does not load."""
    from transformers import AddedToken, AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(_checkpoint(backbone))
    missing = _missing_markers(tokenizer)
    if not missing:
        yield backbone
        return
    tokenizer.add_tokens(
        [AddedToken(marker, special=True, normalized=False) for marker in missing],
        special_tokens=True,
    )
    if _missing_markers(tokenizer):
        raise ConfigError(
            f"config: math_models.colbert: backbone {backbone}: its tokenizer lacks ColBERT's "
            f"marker tokens {' and '.join(MARKERS)} and cannot add them"
        )
    copy = output.with_name(f"{output.name}.backbone")
    shutil.rmtree(copy, ignore_errors=True)
    try:
        model = AutoModel.from_pretrained(_checkpoint(backbone))
        resize_embeddings(model, tokenizer)
        model.save_pretrained(copy)
        tokenizer.save_pretrained(copy)
        LOGGER.info("%s: added ColBERT's marker tokens %s", backbone, ", ".join(missing))
        yield copy
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def _batch(examples: Sequence[dict], step: int, size: int) -> tuple[list[str], list[str]]:
    """Queries, and passages as colbert's batcher lays them out: each query's positive, then
    its negative, matching the ``repeat_interleave`` of the query encodings in the model."""
    chosen = [examples[(step * size + i) % len(examples)] for i in range(size)]
    queries = [example["query"] for example in chosen]
    passages = [text for example in chosen for text in (example["positive"], example["negative"])]
    return queries, passages


class _Fit(NamedTuple):
    losses: list[float]
    """Every step's loss, those before a resumption included."""
    seconds: float
    start: int
    """The step this run started from: 0, or the resumed checkpoint's."""


def _fit(
    model: ColBERT,
    tokenizers: tuple[QueryTokenizer, DocTokenizer],
    config: ColBERTConfig,
    examples: Sequence[dict],
    weight_decay: float,
    log_every: int,
    precision: str,
    micro_batch_size: int,
    checkpoints: _Checkpoints | None,
) -> _Fit:
    """``config.maxsteps`` optimizer steps, from the last checkpoint that matches if any: the
    per-step losses, the seconds taken and the step this run started from."""
    state = checkpoints.resume() if checkpoints else None
    if state is not None:
        model.load_state_dict(state["model"])
    network = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=True)
    trainable = [parameter for parameter in model.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=config.lr, eps=1e-8, weight_decay=weight_decay)
    stepper = MixedPrecisionManager(precision == "fp16")
    labels = torch.zeros(config.bsize, dtype=torch.long, device=model.device)
    losses: list[float] = []
    start = 0
    if state is not None:
        optimizer.load_state_dict(state["optimizer"])
        if stepper.activated:
            stepper.scaler.load_state_dict(state["scaler"])
        losses, start = list(state["losses"]), int(state["step"])
        restore_rng_states(state["rng"])
    model.train()
    began = time.perf_counter()
    for step in tqdm(range(start, config.maxsteps), desc="ColBERT training", mininterval=5):
        queries, passages = _batch(examples, step, config.bsize)
        pieces = tensorize_triples(
            *tokenizers, queries, passages, [], micro_batch_size, config.nway
        )
        loss = 0.0
        for position, (query_batch, passage_batch, _) in enumerate(pieces):
            # One rank has nothing to all-reduce before the last piece's backward pass.
            last = position == len(pieces) - 1
            with contextlib.nullcontext() if last else network.no_sync():
                with autocast(model.device.type, precision):
                    scores = network(query_batch, passage_batch).view(-1, config.nway)
                    # The piece's share of the batch mean: exactly 1 for the whole batch.
                    share = len(scores) / config.bsize
                    piece = torch.nn.functional.cross_entropy(scores, labels[: len(scores)])
                    piece = piece * share
                stepper.backward(piece)
            loss += piece.item()
        stepper.step(network, optimizer)
        losses.append(loss)
        done = step + 1
        if done % log_every == 0 or done == config.maxsteps:
            recent = losses[-log_every:]
            LOGGER.info(
                "ColBERT step %d/%d: mean loss %.4f over the last %d steps",
                done,
                config.maxsteps,
                sum(recent) / len(recent),
                len(recent),
            )
        if checkpoints and done % checkpoints.every == 0 and done < config.maxsteps:
            checkpoints.save(
                done,
                {
                    "step": done,
                    "losses": losses,
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "scaler": stepper.scaler.state_dict() if stepper.activated else {},
                    "rng": rng_states(),
                },
            )
    return _Fit(losses, time.perf_counter() - began, start)


def _file_sha256(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _backbone_identity(backbone: Path) -> str:
    """A hub id as it is; a local backbone by its files, since a directory this workflow
    pretrains is rewritten in place when its settings change."""
    local = local_checkpoint(str(backbone))
    if local is None:
        return str(backbone)
    digest = hashlib.sha256()
    for file in sorted(path for path in local.rglob("*") if path.is_file()):
        digest.update(f"{file.relative_to(local).as_posix()}\0{_file_sha256(file)}\n".encode())
    return digest.hexdigest()


def _fingerprint(backbone: Path, triplets: Path, settings: Mapping[str, Any]) -> dict:
    """What a checkpoint must have been made with to be resumed."""
    return {
        "settings": dict(settings),
        "backbone": _backbone_identity(backbone),
        "triplets": {"bytes": Path(triplets).stat().st_size, "sha256": _file_sha256(triplets)},
        "code": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
    }


_ABSENT = object()


def _differences(saved: Any, current: Mapping[str, Any]) -> list[str]:
    """The settings keys, and ``backbone``, ``triplets`` or ``code``, that differ."""
    if not isinstance(saved, Mapping):
        saved = {}
    settings = saved.get("settings")
    if not isinstance(settings, Mapping):
        settings = {}
    ours = current["settings"]
    names = [*ours, *(key for key in settings if key not in ours)]
    keys = [key for key in names if settings.get(key, _ABSENT) != ours.get(key, _ABSENT)]
    return keys + [
        key for key in ("backbone", "triplets", "code") if saved.get(key) != current[key]
    ]


class _Checkpoints:
    """Training checkpoints under ``workdir``: ``step-NNNNNNN/state.pt``, the last two kept."""

    def __init__(self, workdir: Path, every: int, fingerprint: dict) -> None:
        self.workdir, self.every, self.fingerprint = workdir, every, fingerprint

    def save(self, step: int, state: dict) -> None:
        save_state(self.workdir, step, {"fingerprint": self.fingerprint, **state})
        prune(self.workdir)

    def resume(self) -> dict | None:
        """The newest checkpoint made with this run's fingerprint."""
        for step, path in reversed(step_directories(self.workdir)):
            state = load_state(path, "ColBERT training")
            differing = _differences(state.get("fingerprint"), self.fingerprint)
            if not differing:
                LOGGER.info("ColBERT training resumes from %s (step %d)", path, step)
                return state
            LOGGER.info("ignoring %s: made with other %s", path, ", ".join(differing))
        return None


def index_colbert(
    checkpoint: Path,
    documents: Mapping[str, str],
    index_dir: Path,
    *,
    nbits: int = 2,
    doc_maxlen: int = 180,
    extensions_dir: Path | None = None,
    seed: int = 12345,
    device: str = "cpu",
    precision: str = "fp32",
) -> dict:
    """Build colbert's PLAID index of ``documents`` (doc id -> text) in ``index_dir``.

    colbert numbers passages by position, so the doc ids are stored in that order beside the
    index (:data:`DOC_IDS_FILE`) for :func:`search_colbert` to map pids back. The index is
    built beside ``index_dir`` and renamed into place only when complete. k-means needs at
    least as many sampled token vectors as centroids, which rules out collections of only a
    few hundred tokens.
    """
    install_shims()
    if not documents:
        raise ConfigError("ColBERT index: no documents to index")
    if torch.device(device).type == "cuda":
        check_cuda_toolkit()
    use_extensions_dir(extensions_dir)
    doc_ids = list(documents)
    staging = _staging(index_dir)
    config = ColBERTConfig(
        doc_maxlen=doc_maxlen,
        nbits=nbits,
        kmeans_niters=KMEANS_ITERATIONS,
        index_path=_absolute(staging),
    )
    began = time.perf_counter()
    with colbert_chatter_to_stderr(), on_device(device, precision), one_process_launch(seed):
        with Run().context(one_process_run(device)), encode_each_passage_list_once():
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
    query_maxlen: int,
    doc_maxlen: int,
    ncells: int | None = None,
    centroid_score_threshold: float | None = None,
    ndocs: int | None = None,
    extensions_dir: Path | None = None,
    device: str = "cpu",
    precision: str = "fp32",
) -> RunDict:
    """Each query's top ``k`` documents by ColBERT score, in canonical run order.

    Candidate generation (PLAID) is bounded by three settings. ``ncells``: the centroid cells
    each query token visits (unset: every cell, so every document of the collection is a
    candidate; more than the index has means all). ``centroid_score_threshold``: centroids
    whose best score against the query tokens falls below it are left out of the first,
    centroid-only scoring (unset: none). ``ndocs``: the documents that pass that scoring; the
    best quarter of them by centroid scores alone are scored with their full (decompressed)
    embeddings, which bounds what is returned to ``ndocs // 4`` (unset: colbert's rule for
    k > 100, ``max(4 k, 4096)``). A collection smaller than ``k`` gives every document it
    passes.

    Queries are encoded with ``query_maxlen`` tokens, not with the checkpoint's own setting: a
    released checkpoint without colbert's metadata would otherwise be searched with 32-token
    queries, and search and re-ranking (:func:`rerank_colbert`) would disagree.
    """
    install_shims()
    if k < 1:
        raise ConfigError(f"ColBERT search depth k must be >= 1, got {k!r}")
    check_colbert_search_bounds(ncells, ndocs)
    _ready(device, extensions_dir)
    if not queries:
        return {}
    metadata = json.loads((Path(index_dir) / "metadata.json").read_text(encoding="utf-8"))
    cells = int(metadata["num_partitions"])
    passed = max(4 * k, SEARCH_DOCS_FLOOR) if ndocs is None else ndocs
    if passed // 4 < k:
        LOGGER.warning(
            "ColBERT search: ndocs %d scores at most %d documents per query in full, fewer than "
            "the %d asked for",
            passed,
            passed // 4,
            k,
        )
    threshold = centroid_score_threshold
    config = ColBERTConfig(
        ncells=cells if ncells is None else min(ncells, cells),
        centroid_score_threshold=float("-inf") if threshold is None else threshold,
        ndocs=passed,
        query_maxlen=query_maxlen,
        doc_maxlen=doc_maxlen,
    )
    run: RunDict = {}
    opened = _opened_index(checkpoint, index_dir, config, extensions_dir, device, precision)
    with opened as (searcher, doc_ids):
        # Encoding all queries in one batch (as colbert's search_all does) beats one by one.
        encoded = searcher.encode(list(queries.values()))
        progress = tqdm(queries, desc="ColBERT search", mininterval=5)
        for position, query_id in enumerate(progress):
            pids, _, scores = searcher.dense_search(encoded[position : position + 1], k=k)
            run[query_id] = {
                doc_ids[pid]: float(score) for pid, score in zip(pids, scores, strict=True)
            }
    return canonicalize(run)


def _ready(device: str, extensions_dir: Path | None) -> None:
    """What reading an index needs first: on CUDA a matching nvcc, and the extensions' home."""
    if torch.device(device).type == "cuda":
        check_cuda_toolkit()
    use_extensions_dir(extensions_dir)


@contextlib.contextmanager
def _opened_index(
    checkpoint: Path,
    index_dir: Path,
    config: ColBERTConfig,
    extensions_dir: Path | None,
    device: str,
    precision: str,
) -> Iterator[tuple[Searcher, list[str]]]:
    """colbert's searcher of an index built by :func:`index_colbert`, and its doc ids by pid
    (after :func:`_ready`)."""
    index_dir = Path(index_dir)
    doc_ids = json.loads((index_dir / DOC_IDS_FILE).read_text(encoding="utf-8"))
    with colbert_chatter_to_stderr(), on_device(device, precision):
        with Run().context(one_process_run(device)):
            searcher = Searcher(
                index=_absolute(index_dir),
                checkpoint=_checkpoint(checkpoint),
                collection=doc_ids,
                config=config,
                verbose=1,
            )
            yield searcher, doc_ids


def rerank_colbert(
    checkpoint: Path,
    index_dir: Path,
    candidates: Mapping[str, Sequence[str]],
    queries: Mapping[str, str],
    *,
    query_maxlen: int,
    doc_maxlen: int,
    extensions_dir: Path | None = None,
    device: str = "cpu",
    precision: str = "fp32",
) -> RunDict:
    """Score each topic's candidate documents (``topic -> doc ids``) as :func:`search_colbert`
    scores the documents it returns, from the index that search reads: the queries encoded as
    search encodes them (all of ``queries`` in one batch), each candidate's token vectors
    decompressed from the index's residuals (``nbits``), and colbert's MaxSim (the best
    document token per query token, floored at 0 by colbert's CPU kernel, summed). Only
    PLAID's candidate generation is left out, so a document both return gets the same score,
    and the collection is encoded once, by the index.

    Topics keep the order of ``candidates``; each topic's documents come in canonical run order
    (score descending). A topic without query text, or a candidate the index does not hold, is
    an error naming it.
    """
    install_shims()
    check_query_texts(candidates, queries)
    _ready(device, extensions_dir)
    run: RunDict = {topic: {} for topic in candidates}
    if not any(candidates.values()):
        return run
    config = ColBERTConfig(query_maxlen=query_maxlen, doc_maxlen=doc_maxlen)
    opened = _opened_index(checkpoint, index_dir, config, extensions_dir, device, precision)
    with opened as (searcher, doc_ids):
        pids = index_rows(doc_ids, candidates, index_dir)
        encoded = searcher.encode(list(queries.values()))
        position = {topic: row for row, topic in enumerate(queries)}
        for topic, listed in tqdm(candidates.items(), desc="ColBERT re-rank", mininterval=5):
            docs = sorted(
                set(listed)
            )  # id order: the order candidates are listed in changes nothing
            if not docs:
                continue
            row = position[topic]
            found, _, scores = searcher.dense_search(
                encoded[row : row + 1], k=len(docs), pids=[pids[doc] for doc in docs]
            )
            run[topic] = {
                doc_ids[pid]: float(score) for pid, score in zip(found, scores, strict=True)
            }
    return canonicalize(run)
