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

Devices: colbert-ai picks its CPU or GPU path from values fixed when it is imported
(``colbert.parameters.DEVICE``, copied into several modules, and ``RunSettings.
total_visible_gpus``), so on a machine with CUDA it would take the GPU whatever the job asked.
Every function here takes ``device`` (``cpu``, ``cuda``, ``cuda:N``) and ``precision`` and
sets colbert's choice for the duration of the call (:func:`_on_device`); ``cpu`` is the CPU
path even where CUDA is visible. ``precision`` bf16/fp16 autocasts the training forward passes
(fp16 with colbert's own gradient scaler, CUDA only) and the encoders of indexing, search and
re-ranking (colbert's inference checkpoint would always ask for CUDA fp16); fp32 runs without
autocast. On CUDA colbert keeps document vectors and the index in fp16 whatever the precision.
Its residual codec then JIT-compiles CUDA kernels (bit packing and residual decompression have
no torch path on the GPU: the torch decompression in ``residual.py`` is the CPU branch), so
indexing, search and re-ranking (which reads the index) first check for an ``nvcc`` matching
torch's CUDA (training compiles nothing on the GPU). The CUDA paths are written from
colbert-ai's source and have not been run here; the tests cover what the CPU can: the CPU
forced where colbert would take the GPU, the toolkit check, and the globals a CUDA call sets.

Re-ranking (paper 000, §3.4) scores a first-stage run's candidates from the index search
reads: search's query encoding, the candidates' token vectors decompressed from the index's
residuals, and the MaxSim that search scores its final candidates with, so the collection is
encoded once (by the index) and search and re-ranking agree on every document both score.

Compatibility shims, installed when a ColBERT step (training, indexing, search, re-ranking)
first starts in a process, not when this module is imported (:func:`_install_shims`); the
settings colbert fixes at import (its device, GPU count, mixed precision, k-means, launcher) are
replaced for the duration of a step only (:func:`_replaced`):

* transformers 5 moved the registration of tied-weight keys into ``post_init()``; colbert's
  ``HF_ColBERT`` still calls the transformers-4 ``init_weights()``, so loading failed with
  ``'HF_ColBERT' object has no attribute 'all_tied_weights_keys'``.
* colbert writes a checkpoint's provenance with GitPython's ``active_branch``, which raises on a
  detached HEAD (a tag or CI checkout) after all training is done.
* colbert's one-process launcher re-seeds Python, NumPy and torch with a hard-coded 12345
  before indexing and points ``CUDA_VISIBLE_DEVICES`` at the first GPUs of its own list;
  :func:`index_colbert` runs the indexer seeded with its ``seed`` argument instead, on the
  devices this process was given.

Kernels: on the CPU colbert JIT-compiles four small C++ extensions on first use (segmented
MaxSim, pid filtering, residual decompression, segmented lookup; about 30 s each on two cores).
They are built under ``extensions_dir`` (``TORCH_EXTENSIONS_DIR``), by default
``.cache/torch_extensions`` under the working directory, so only the first run pays.

Determinism: training, the pid and embedding samples of k-means (Python/NumPy/torch seeds),
faiss k-means (colbert's fixed seed 123) and search are all seeded or free of randomness, so
the same inputs, seed, torch build and thread count give identical scores. Paths are handed to
colbert as absolute paths: it first tries a relative one as a Hugging Face hub repository id.

One rank only: colbert-ai 0.2.22's multi-rank path needs CUDA. ``colbert/utils/distributed.py``
creates the process group only when ``torch.cuda.is_available()`` (line 22), and then with NCCL
(line 27); ``colbert/training/training.py`` line 56 wraps the model in
``DistributedDataParallel(device_ids=[config.rank])``, which without a group raises "Default
process group has not been initialized"; its ``barrier`` divides by
``torch.cuda.device_count()`` (``distributed.py`` line 37: ZeroDivisionError on the CPU).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import hashlib
import json
import logging
import multiprocessing
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import faiss
import torch
from colbert import Indexer, Searcher
from colbert.indexing import collection_indexer
from colbert.indexing.collection_encoder import CollectionEncoder
from colbert.infra import ColBERTConfig, Run, RunConfig, launcher
from colbert.infra.config import base_config
from colbert.infra.config.settings import RunSettings
from colbert.modeling import base_colbert, hf_colbert
from colbert.modeling import checkpoint as colbert_checkpoint
from colbert.modeling.colbert import ColBERT
from colbert.modeling.tokenization import DocTokenizer, QueryTokenizer, tensorize_triples
from colbert.search.index_storage import IndexScorer
from colbert.search.strided_tensor import StridedTensor
from colbert.utils.amp import MixedPrecisionManager
from tqdm import tqdm

from hybrid_ir.errors import ConfigError
from hybrid_ir.hub import local_checkpoint
from hybrid_ir.neural.candidates import check_query_texts, index_rows
from hybrid_ir.neural.checkpoints import (
    load_state,
    prune,
    restore_rng_states,
    rng_states,
    save_state,
    step_directories,
)
from hybrid_ir.neural.devices import autocast, check_precision
from hybrid_ir.neural.distributed import accumulation_steps
from hybrid_ir.neural.encoders import COLBERT_KEY, check_colbert_search_bounds
from hybrid_ir.neural.models import directory_size, resize_embeddings, seed_everything
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
CHECKPOINT_EVERY = 1000
"""Training steps between two checkpoints under a workdir (the last two are kept)."""


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


@functools.cache
def _install_shims() -> None:
    """Patch colbert-ai once per process, when a ColBERT step (training, indexing, search,
    re-ranking) first starts, not when this module is imported: importing it changes nothing.
    Only ``base_colbert`` builds models through ``class_factory``; the tokenizers use just its
    static ``raw_tokenizer_from_pretrained``, which transformers 5 does not affect."""
    base_colbert.class_factory = _post_init_compatible(hf_colbert.class_factory)
    base_config.get_metadata_only = _detached_head_tolerant(base_config.get_metadata_only)


@contextlib.contextmanager
def _replaced(owner: object, name: str, value: object) -> Iterator[None]:
    """``owner.name`` is ``value`` for the duration of the block, then what it was before."""
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _use_extensions_dir(extensions_dir: Path | None) -> None:
    """Build colbert's kernels under the project; torch reads the variable at each load, and
    colbert loads a kernel the first time a class needing it is built in the process."""
    path = Path(extensions_dir) if extensions_dir else Path.cwd() / ".cache" / "torch_extensions"
    path.mkdir(parents=True, exist_ok=True)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(path.resolve())


_CPU_KERNELS = (IndexScorer, ColBERT, StridedTensor)  # the one compiling two kernels first
"""The colbert classes whose ``try_load_torch_extensions`` compiles its four CPU kernels."""


def _build_kernels(position: int, extensions_dir: Path | None) -> None:
    _use_extensions_dir(extensions_dir)
    _CPU_KERNELS[position].try_load_torch_extensions(use_gpu=False)


def build_cpu_kernels(extensions_dir: Path | None = None) -> None:
    """Compile colbert's four CPU kernels into the extensions' home now (about 35 s each the
    first time, nothing once built), one process per class as the cores allow: each is one
    compiler run. `make setup` does it, so that no workflow job compiles them, nor waits with
    its core idle on the lock of another job compiling them."""
    workers = min(len(_CPU_KERNELS), os.cpu_count() or 1)
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        builds = [
            pool.submit(_build_kernels, position, extensions_dir)
            for position in range(len(_CPU_KERNELS))
        ]
        for build in builds:
            build.result()


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


class _Autocast:
    """Stands in for the ``MixedPrecisionManager(True)`` of colbert's inference ``Checkpoint``,
    which always asks for CUDA fp16 autocast: the job's precision instead."""

    def __init__(self, device_type: str, precision: str) -> None:
        self.device_type, self.precision = device_type, precision

    def context(self) -> contextlib.AbstractContextManager[Any]:
        return autocast(self.device_type, self.precision)


def _faiss_kmeans(gpu: bool) -> Callable[..., torch.Tensor]:
    """colbert's ``compute_faiss_kmeans`` (fixed seed 123), which asks faiss for the GPU
    whenever torch sees one: that fails with a faiss built without GPU support, and ignores a
    job that runs on the CPU."""

    def compute_faiss_kmeans(dim, num_partitions, kmeans_niters, shared_lists) -> torch.Tensor:
        kmeans = faiss.Kmeans(
            dim, num_partitions, niter=kmeans_niters, gpu=gpu, verbose=True, seed=123
        )
        kmeans.train(shared_lists[0][0].float().numpy())
        return torch.from_numpy(kmeans.centroids)

    return compute_faiss_kmeans


@contextlib.contextmanager
def _on_device(device: str, precision: str) -> Iterator[None]:
    """Run colbert on ``device`` with ``precision`` for the duration of the block: colbert
    fixed its device (``DEVICE``, imported by value into several modules) and whether it uses
    GPUs (``total_visible_gpus``, which each of its ``use_gpu`` decisions reads) when it was
    imported."""
    target = torch.device(device)
    check_precision(precision, target.type)
    cuda = target.type == "cuda"
    colbert_modules = [
        module
        for name, module in list(sys.modules.items())
        if name == "colbert" or name.startswith("colbert.")
    ]
    with contextlib.ExitStack() as stack:
        for module in colbert_modules:
            if isinstance(getattr(module, "DEVICE", None), torch.device):
                stack.enter_context(_replaced(module, "DEVICE", target))
        gpus = torch.cuda.device_count() if cuda else 0
        stack.enter_context(_replaced(RunSettings, "total_visible_gpus", gpus))
        inference = _Autocast(target.type, precision)
        stack.enter_context(
            _replaced(colbert_checkpoint, "MixedPrecisionManager", lambda _: inference)
        )
        kmeans = _faiss_kmeans(cuda and faiss.get_num_gpus() > 0)
        stack.enter_context(_replaced(collection_indexer, "compute_faiss_kmeans", kmeans))
        if cuda and target.index is not None:
            # colbert moves tensors with a bare .cuda(): to the current device.
            stack.enter_context(torch.cuda.device(target))
        yield


def _nvcc_release(nvcc: Path) -> str | None:
    """``12.4`` from ``nvcc --version``, or None when it does not run."""
    try:
        shown = subprocess.run(
            [str(nvcc), "--version"], capture_output=True, text=True, check=False, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"release (\d+\.\d+)", shown)
    return found.group(1) if found else None


def _check_cuda_toolkit() -> None:
    """On a GPU, colbert's residual codec compiles its CUDA kernels with nvcc when an index is
    built or loaded; without a matching toolkit that fails deep inside colbert, after the
    collection has been encoded. torch rejects an nvcc of another major version."""
    from torch.utils import cpp_extension

    wanted = str(torch.version.cuda)
    home = cpp_extension.CUDA_HOME
    nvcc = Path(home, "bin", "nvcc") if home else None
    found = _nvcc_release(nvcc) if nvcc is not None and nvcc.is_file() else None
    if found is not None and found.split(".")[0] == wanted.split(".")[0]:
        return
    seen = f"nvcc {found}" if found else "no nvcc"
    where = f"{seen} under CUDA_HOME {home}" if home else "no CUDA_HOME and no nvcc on PATH"
    raise ConfigError(
        f"config: math_models.device: ColBERT indexing and search on CUDA compile colbert-ai's "
        f"residual codec with nvcc for torch's CUDA {wanted}, but found {where}; install the "
        f"CUDA toolkit {wanted}, set CUDA_HOME to it, or run ColBERT indexing and search with "
        "device: cpu"
    )


@contextlib.contextmanager
def _one_process_group() -> Iterator[None]:
    """A one-rank ``gloo`` group for ``DistributedDataParallel`` (colbert's NCCL group needs
    its multi-process launcher; gloo all-reduces CPU and CUDA tensors); a file store in a
    private directory needs no free port."""
    with tempfile.TemporaryDirectory(prefix="colbert-gloo-") as store:
        torch.distributed.init_process_group(
            "gloo", init_method=Path(store, "store").as_uri(), rank=0, world_size=1
        )
        try:
            yield
        finally:
            torch.distributed.destroy_process_group()


def _gpus(device: str) -> int:
    return 0 if torch.device(device).type == "cpu" else 1


def _one_process_run(device: str) -> RunConfig:
    """colbert's run settings for this process alone: one rank, no forked workers."""
    return RunConfig(nranks=1, rank=0, gpus=_gpus(device), avoid_fork_if_possible=True)


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
    _install_shims()
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
    _use_extensions_dir(extensions_dir)
    seed_everything(seed)
    staging = _staging(output)
    with (
        _colbert_chatter_to_stderr(),
        _on_device(device, precision),
        _with_markers(backbone, Path(output)) as marked,
        _one_process_group(),
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
            gpus=_gpus(device),
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


@contextlib.contextmanager
def _one_process_launch(seed: int) -> Iterator[None]:
    """colbert's one-process launcher calls ``set_seed(12345)`` and sets
    ``CUDA_VISIBLE_DEVICES`` to the first GPUs of the run's list, for good, before indexing:
    run the indexer as it does otherwise, seeded with ``seed`` (the pid sample and the k-means
    sample follow the argument) and on the GPU this job was given."""

    def run_process_without_mp(callee, config, *args):
        seed_everything(seed)
        with Run().context(config, inherit_config=False):
            return callee(config, *args)

    with _replaced(launcher, "run_process_without_mp", run_process_without_mp):
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

    with _replaced(CollectionEncoder, "encode_passages", encode_passages_once):
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
    _install_shims()
    if not documents:
        raise ConfigError("ColBERT index: no documents to index")
    if torch.device(device).type == "cuda":
        _check_cuda_toolkit()
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
    with _colbert_chatter_to_stderr(), _on_device(device, precision), _one_process_launch(seed):
        with Run().context(_one_process_run(device)), _encode_each_passage_list_once():
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
    _install_shims()
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
        _check_cuda_toolkit()
    _use_extensions_dir(extensions_dir)


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
    with _colbert_chatter_to_stderr(), _on_device(device, precision):
        with Run().context(_one_process_run(device)):
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
    _install_shims()
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
