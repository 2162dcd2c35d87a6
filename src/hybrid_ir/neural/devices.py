"""Where a torch step runs: the configured device resolved against the machine, and its precision.

``device: auto`` takes CUDA when torch sees a GPU and the CPU otherwise, with a warning, so one
configuration serves a laptop and a GPU node; ``device: cuda`` on a machine without CUDA is an
error, since a user who forces the GPU would rather stop than wait days for a CPU run.

``precision: fp32`` runs without autocast, so the CPU path computes exactly what it did before
precision existed; ``bf16`` and ``fp16`` wrap the forward passes in :func:`torch.autocast`
(fp16 also needs a gradient scaler, which :func:`grad_scaler` gives).

On a workstation, Snakemake counts GPUs as a resource (``--resources gpu=N``) but does not say
which GPU a job may use; :func:`claim_gpus` picks free ones with a lock file per GPU, so jobs
that the resource accounting lets run together never share one. A shell that exports
``CUDA_VISIBLE_DEVICES`` narrows the GPUs jobs claim from to that set (without the claim, every
job would run on its first GPU). Inside a SLURM job (``SLURM_JOB_ID``) the scheduler has already
chosen and nothing is claimed.

On CUDA, :func:`resolve_device` also sets how fp32 matrix products run (:func:`cuda_settings`):
TF32 tensor cores on Ampere and later unless ``math_models.tf32`` is off, cuDNN's deterministic
algorithms, and the cuBLAS workspace that deterministic cuBLAS needs (``CUBLAS_WORKSPACE_CONFIG``,
exported before CUDA starts so that torchrun's ranks inherit it). Even so a GPU run is not
bit-reproducible across GPU models, driver or library versions, or rank counts; on one machine
with the same software, fp32 without TF32 repeats its numbers except where atomics reorder sums
(faiss and colbert-ai kernels, scatter-add), which is what
docs/explanations/determinism-and-provenance.md states.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from hybrid_ir.errors import ConfigError

LOGGER = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "cuda")
PRECISIONS = ("fp32", "bf16", "fp16")
GPU_LOCK_DIR_ENV = "HYBRID_IR_GPU_LOCKS"
"""Where the per-GPU lock files live (default: the system temporary directory)."""
TF32_ENV = "HYBRID_IR_TF32"
"""``1`` or ``0``: the TF32 choice of the job, passed on to its torchrun ranks."""
CUBLAS_WORKSPACE = ":4096:8"
"""cuBLAS's documented workspace setting for deterministic results (CUDA 10.2 and later)."""

_claimed: list[IO[str]] = []
"""Lock files held for the life of the process: closing one would free its GPU."""


def set_threads(threads: int | None) -> None:
    """The job's threads for torch, and for the Rust tokenizers, whose pool would otherwise
    take every core of the machine while another job runs beside this one."""
    if threads:
        import torch

        torch.set_num_threads(threads)
        os.environ.setdefault("RAYON_NUM_THREADS", str(threads))


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def resolve_device(requested: str, key: str = "math_models.device", *, tf32: bool = True) -> str:
    """``cpu`` or ``cuda`` for the configured device ``requested`` (``auto``, ``cpu``, ``cuda``);
    on CUDA, with :func:`cuda_settings` applied (``tf32``: ``math_models.tf32``)."""
    if requested not in DEVICES:
        raise ConfigError(f"config: {key}: {requested!r} is not one of {', '.join(DEVICES)}")
    if requested == "cpu":
        return "cpu"
    if cuda_available():
        cuda_settings(tf32)
        return "cuda"
    if requested == "cuda":
        raise ConfigError(
            f"config: {key}: cuda is forced but torch sees no CUDA device on this machine "
            "(set it to auto to fall back to the CPU)"
        )
    LOGGER.warning("%s is auto and torch sees no CUDA device: running on the CPU", key)
    return "cpu"


def check_precision(precision: str, device: str, key: str = "math_models.precision") -> None:
    if precision not in PRECISIONS:
        raise ConfigError(f"config: {key}: {precision!r} is not one of {', '.join(PRECISIONS)}")
    if precision == "fp16" and device == "cpu":
        raise ConfigError(f"config: {key}: fp16 needs CUDA; use bf16 or fp32 on the CPU")


def autocast(device: str, precision: str) -> contextlib.AbstractContextManager[Any]:
    """The autocast context for forward passes: none at all for ``fp32``."""
    check_precision(precision, device)
    if precision == "fp32":
        return contextlib.nullcontext()
    import torch

    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type=device, dtype=dtype)


def grad_scaler(device: str, precision: str) -> Any:
    """A gradient scaler for ``fp16`` (whose small gradients underflow), disabled otherwise."""
    import torch

    return torch.amp.GradScaler(device, enabled=precision == "fp16")


def cuda_settings(tf32: bool | None = None) -> None:
    """TF32 for fp32 products (``tf32``; None: the job's choice from :data:`TF32_ENV`, as a
    torchrun rank reads it), deterministic cuDNN, and cuBLAS's deterministic workspace."""
    import torch

    if tf32 is None:
        tf32 = os.environ.get(TF32_ENV, "1") == "1"
    os.environ[TF32_ENV] = "1" if tf32 else "0"
    # Read by cuBLAS when its handle is created: set before the first product on the GPU.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    # Under warn_only determinism these attention kernels keep non-deterministic backward passes
    # (DPR at BERT-base size in fp32 differed by 4.8e-5 between two runs on an H200,
    # benchmarks/gpu_determinism.py); fp32 then takes torch's composite attention, 16-bit flash.
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.backends.cuda.enable_cudnn_sdp(False)


def claim_gpus(count: int) -> list[str]:
    """Claim ``count`` free GPUs for the rest of the process and make them the only ones torch
    sees; returns their ``CUDA_VISIBLE_DEVICES`` entries. Claims are made among the GPUs the
    shell's ``CUDA_VISIBLE_DEVICES`` lists, or all of the machine's; nothing is claimed inside
    a SLURM job, whose GPUs the scheduler chose."""
    if count <= 0 or "SLURM_JOB_ID" in os.environ:
        return []
    total = machine_gpu_count()
    if total == 0:
        return []
    exported = os.environ.get("CUDA_VISIBLE_DEVICES")
    if exported is None:
        candidates = [str(gpu) for gpu in range(total)]
    else:
        candidates = [entry.strip() for entry in exported.split(",") if entry.strip()]
    lock_dir = Path(os.environ.get(GPU_LOCK_DIR_ENV) or tempfile.gettempdir())
    lock_dir.mkdir(parents=True, exist_ok=True)
    claimed: list[str] = []
    for gpu in candidates:
        handle = open(lock_dir / f"hybrid-ir-gpu-{_lock_name(gpu)}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        _claimed.append(handle)
        claimed.append(gpu)
        if len(claimed) == count:
            break
    if len(claimed) < count:
        among = f"CUDA_VISIBLE_DEVICES={exported}" if exported is not None else "this machine"
        raise ConfigError(
            f"config: resources: the job needs {count} GPU(s) but only {len(claimed)} of the "
            f"{len(candidates)} of {among} are free; give snakemake --resources "
            f"gpu={len(candidates)} at most"
        )
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(claimed)
    LOGGER.info("claimed GPU(s) %s", os.environ["CUDA_VISIBLE_DEVICES"])
    return claimed


def _lock_name(entry: str) -> str:
    """A file-name-safe form of a CUDA_VISIBLE_DEVICES entry (an index, a UUID or a MIG id)."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in entry)


def machine_gpu_count() -> int:
    """GPUs on this machine, counted by ``nvidia-smi`` rather than torch: once torch has asked
    CUDA, a later ``CUDA_VISIBLE_DEVICES`` no longer takes effect in this process."""
    try:
        listed = subprocess.run(
            ["nvidia-smi", "--list-gpus"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return 0
    return sum(1 for line in listed.splitlines() if line.startswith("GPU "))


@contextlib.contextmanager
def released_gpus() -> Iterator[None]:
    """Release the GPUs this process claimed when the block ends (for tests)."""
    try:
        yield
    finally:
        while _claimed:
            _claimed.pop().close()
