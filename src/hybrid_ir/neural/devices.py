"""Where a torch step runs: the configured device resolved against the machine, and its precision.

``device: auto`` takes CUDA when torch sees a GPU and the CPU otherwise, with a warning, so one
configuration serves a laptop and a GPU node; ``device: cuda`` on a machine without CUDA is an
error, since a user who forces the GPU would rather stop than wait days for a CPU run.

``precision: fp32`` runs without autocast, so the CPU path computes exactly what it did before
precision existed; ``bf16`` and ``fp16`` wrap the forward passes in :func:`torch.autocast`
(fp16 also needs a gradient scaler, which :func:`grad_scaler` gives).

On a workstation, Snakemake counts GPUs as a resource (``--resources gpu=N``) but does not say
which GPU a job may use; :func:`claim_gpus` picks free ones with a lock file per GPU, so jobs
that the resource accounting lets run together never share one. Under SLURM the scheduler has
already set ``CUDA_VISIBLE_DEVICES`` and nothing is claimed.
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

_claimed: list[IO[str]] = []
"""Lock files held for the life of the process: closing one would free its GPU."""


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def resolve_device(requested: str, key: str = "math_models.device") -> str:
    """``cpu`` or ``cuda`` for the configured device ``requested`` (``auto``, ``cpu``, ``cuda``)."""
    if requested not in DEVICES:
        raise ConfigError(f"config: {key}: {requested!r} is not one of {', '.join(DEVICES)}")
    if requested == "cpu":
        return "cpu"
    if cuda_available():
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


def claim_gpus(count: int) -> list[int]:
    """Claim ``count`` free GPUs of this machine for the rest of the process and make them the
    only ones torch sees; nothing when the scheduler already chose (``CUDA_VISIBLE_DEVICES``)."""
    if count <= 0 or "CUDA_VISIBLE_DEVICES" in os.environ:
        return []
    total = machine_gpu_count()
    if total == 0:
        return []
    lock_dir = Path(os.environ.get(GPU_LOCK_DIR_ENV) or tempfile.gettempdir())
    lock_dir.mkdir(parents=True, exist_ok=True)
    claimed: list[int] = []
    for gpu in range(total):
        handle = open(lock_dir / f"hybrid-ir-gpu-{gpu}.lock", "w")
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
        raise ConfigError(
            f"config: resources: the job needs {count} GPU(s) but only {len(claimed)} of this "
            f"machine's {total} are free; give snakemake --resources gpu={total} at most"
        )
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, claimed))
    LOGGER.info("claimed GPU(s) %s", os.environ["CUDA_VISIBLE_DEVICES"])
    return claimed


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
