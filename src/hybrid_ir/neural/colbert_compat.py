"""colbert-ai 0.2.22 as this workflow runs it: on the device and precision a job asks, with
transformers 5, in one process, its kernels built under the project. :mod:`hybrid_ir.neural.
colbert` calls these around each ColBERT step.

Devices: colbert-ai picks its CPU or GPU path from values fixed when it is imported
(``colbert.parameters.DEVICE``, copied into several modules, and ``RunSettings.
total_visible_gpus``), so on a machine with CUDA it would take the GPU whatever the job asked.
Every function here takes ``device`` (``cpu``, ``cuda``, ``cuda:N``) and ``precision`` and
sets colbert's choice for the duration of the call (:func:`on_device`); ``cpu`` is the CPU
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

Compatibility shims, installed when a ColBERT step (training, indexing, search, re-ranking)
first starts in a process, not when this module is imported (:func:`install_shims`); the
settings colbert fixes at import (its device, GPU count, mixed precision, k-means, launcher) are
replaced for the duration of a step only (:func:`replaced`):

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
import multiprocessing
import os
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import faiss
import torch
from colbert.indexing import collection_indexer
from colbert.indexing.collection_encoder import CollectionEncoder
from colbert.infra import Run, RunConfig, launcher
from colbert.infra.config import base_config
from colbert.infra.config.settings import RunSettings
from colbert.modeling import base_colbert, hf_colbert
from colbert.modeling import checkpoint as colbert_checkpoint
from colbert.modeling.colbert import ColBERT
from colbert.search.index_storage import IndexScorer
from colbert.search.strided_tensor import StridedTensor

from hybrid_ir.errors import ConfigError
from hybrid_ir.neural.devices import autocast, check_precision
from hybrid_ir.neural.models import seed_everything


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
def install_shims() -> None:
    """Patch colbert-ai once per process, when a ColBERT step (training, indexing, search,
    re-ranking) first starts, not when this module is imported: importing it changes nothing.
    Only ``base_colbert`` builds models through ``class_factory``; the tokenizers use just its
    static ``raw_tokenizer_from_pretrained``, which transformers 5 does not affect."""
    base_colbert.class_factory = _post_init_compatible(hf_colbert.class_factory)
    base_config.get_metadata_only = _detached_head_tolerant(base_config.get_metadata_only)


@contextlib.contextmanager
def replaced(owner: object, name: str, value: object) -> Iterator[None]:
    """``owner.name`` is ``value`` for the duration of the block, then what it was before."""
    original = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, original)


def use_extensions_dir(extensions_dir: Path | None) -> None:
    """Build colbert's kernels under the project; torch reads the variable at each load, and
    colbert loads a kernel the first time a class needing it is built in the process."""
    path = Path(extensions_dir) if extensions_dir else Path.cwd() / ".cache" / "torch_extensions"
    path.mkdir(parents=True, exist_ok=True)
    os.environ["TORCH_EXTENSIONS_DIR"] = str(path.resolve())


_CPU_KERNELS = (IndexScorer, ColBERT, StridedTensor)  # the one compiling two kernels first
"""The colbert classes whose ``try_load_torch_extensions`` compiles its four CPU kernels."""


def _build_kernels(position: int, extensions_dir: Path | None) -> None:
    use_extensions_dir(extensions_dir)
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


@contextlib.contextmanager
def colbert_chatter_to_stderr() -> Iterator[None]:
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
def on_device(device: str, precision: str) -> Iterator[None]:
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
                stack.enter_context(replaced(module, "DEVICE", target))
        gpus = torch.cuda.device_count() if cuda else 0
        stack.enter_context(replaced(RunSettings, "total_visible_gpus", gpus))
        inference = _Autocast(target.type, precision)
        stack.enter_context(
            replaced(colbert_checkpoint, "MixedPrecisionManager", lambda _: inference)
        )
        kmeans = _faiss_kmeans(cuda and faiss.get_num_gpus() > 0)
        stack.enter_context(replaced(collection_indexer, "compute_faiss_kmeans", kmeans))
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


def check_cuda_toolkit() -> None:
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
def one_process_group() -> Iterator[None]:
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


def gpus_for(device: str) -> int:
    return 0 if torch.device(device).type == "cpu" else 1


def one_process_run(device: str) -> RunConfig:
    """colbert's run settings for this process alone: one rank, no forked workers."""
    return RunConfig(nranks=1, rank=0, gpus=gpus_for(device), avoid_fork_if_possible=True)


@contextlib.contextmanager
def one_process_launch(seed: int) -> Iterator[None]:
    """colbert's one-process launcher calls ``set_seed(12345)`` and sets
    ``CUDA_VISIBLE_DEVICES`` to the first GPUs of the run's list, for good, before indexing:
    run the indexer as it does otherwise, seeded with ``seed`` (the pid sample and the k-means
    sample follow the argument) and on the GPU this job was given."""

    def run_process_without_mp(callee, config, *args):
        seed_everything(seed)
        with Run().context(config, inherit_config=False):
            return callee(config, *args)

    with replaced(launcher, "run_process_without_mp", run_process_without_mp):
        yield


@contextlib.contextmanager
def encode_each_passage_list_once() -> Iterator[None]:
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

    with replaced(CollectionEncoder, "encode_passages", encode_passages_once):
        yield
