"""Data-parallel training over ``torch.distributed``: MLM pretraining and DPR on N processes.

A job with more than one process (its GPUs on CUDA, ``math_models.cpu_processes`` on the CPU)
starts ``torchrun`` (``python -m torch.distributed.run --standalone``) with this module as each
rank's entry point; its output goes to the job's log (the inherited descriptors 1 and 2), and a
rank that fails or dies makes torchrun stop the others and exit non-zero, which fails the job.

The ranks share one global batch (the configured ``batch_size``, divisible by N): every rank
draws the batch, its masks or its negatives exactly as one process would, from the same seeded
streams, and keeps its slice of the rows (:meth:`Ranks.rows`). Each rank's loss is its part of
the global mean (a sum over its rows divided by the global count, which every rank knows), so
summing the gradients over the ranks (:meth:`Ranks.exchange`, one ``all_reduce``) gives the
gradient of the one-process loss; the ranks then take identical optimizer steps. The one-process
run and this one differ only by the order of floating-point sums, and by dropout, whose masks
are drawn per rank (their shapes follow the rank's rows, so they cannot be cut from one draw).

Rank 0 alone evaluates, logs, and writes checkpoints, losses and models; its facts come back to
the launching process as JSON. The process group has a timeout (:data:`DEFAULT_TIMEOUT_S`), so a
rank that hangs instead of dying fails the job too. The one-process path does not come here.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.errors import ConfigError, HybridIRError
from hybrid_ir.neural.devices import cuda_settings, set_threads

LOGGER = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 600.0
"""How long a rank waits for the others in a collective before the job fails: long enough for
rank 0 to write a checkpoint or score the held-out pairs while the others wait."""
KILL_ENV = "HYBRID_IR_KILL_RANK"
"""Test hook, read by :func:`main` only: ``RANK:STEP`` makes that rank kill itself (SIGKILL)
right after the gradient exchange of step STEP, as a crashed node would."""


@dataclass(frozen=True)
class Ranks:
    """This process's place among the training processes: ``rank`` of ``world``."""

    rank: int = 0
    world: int = 1
    kill_after_step: int | None = None

    @property
    def main(self) -> bool:
        """Whether this rank logs and writes (rank 0)."""
        return self.rank == 0

    def seed(self, seed: int) -> int:
        """A seed for what each rank draws on its own (dropout): ``seed`` itself on rank 0, as
        in the one-process run, and offsets far apart on the others."""
        return seed + self.rank * 1_000_003

    def rows(self, count: int) -> slice:
        """This rank's rows of a global batch of ``count`` rows."""
        share = count // self.world
        return slice(self.rank * share, (self.rank + 1) * share)

    def exchange(self, parameters: Iterable[Any], step: int, *values: Any) -> list[float]:
        """Sum the gradients of ``parameters``, and the scalar tensors ``values`` (each rank's
        part of a loss), over the ranks in one ``all_reduce``; return the summed ``values``."""
        import torch
        import torch.distributed as dist

        grads = [p.grad for p in parameters if p.grad is not None]
        parts = [g.reshape(-1) for g in grads]
        flat = torch.cat([*parts, torch.stack([v.detach().float() for v in values])])
        dist.all_reduce(flat)
        offset = 0
        for grad in grads:
            grad.copy_(flat[offset : offset + grad.numel()].view_as(grad))
            offset += grad.numel()
        if self.kill_after_step == step:
            os.kill(os.getpid(), signal.SIGKILL)
        return [float(v) for v in flat[offset:].tolist()]


SINGLE = Ranks()
"""The one-process run."""


def process_count(device: str, gpus: int, cpu_processes: int) -> int:
    """Training processes for a job: one per GPU on CUDA, the configured count on the CPU."""
    return max(1, gpus) if device == "cuda" else cpu_processes


def check_divisible(batch_size: int, processes: int, key: str) -> None:
    if batch_size % processes:
        raise ConfigError(
            f"config: {key}: the global batch of {batch_size} does not split evenly over "
            f"{processes} training processes; make it a multiple of {processes}"
        )


def accumulation_steps(
    batch_size: int, processes: int, micro_batch_size: int | None, section: str
) -> int:
    """Micro-batches each of ``processes`` runs per step of a global batch of ``batch_size``
    examples (1 without ``micro_batch_size``); a ConfigError naming the key of ``section`` (the
    configuration entry that sets both sizes) where the batch does not split evenly. The
    workflow checks every configured training with it before any job starts."""
    check_divisible(batch_size, processes, f"{section}.batch_size")
    share = batch_size // processes
    if micro_batch_size is None:
        return 1
    if micro_batch_size < 1 or share % micro_batch_size:
        divisors = [size for size in range(1, share + 1) if share % size == 0]
        raise ConfigError(
            f"config: {section}.micro_batch_size: {micro_batch_size} does not divide the {share} "
            f"examples each of {processes} training process(es) takes of the global batch of "
            f"{batch_size}; use one of {divisors}"
        )
    return share // micro_batch_size


def micro_batch_rows(batch_size: int, processes: int, accumulation: int) -> int:
    """Rows of each forward pass a process runs per step: its share of the global batch of
    ``batch_size`` (:meth:`Ranks.rows`) in ``accumulation`` micro-batches
    (:func:`accumulation_steps`). Pretraining splits its batches so; benchmarks/paper_scale.py
    sizes a rank's activations with it."""
    share = Ranks(0, processes).rows(batch_size)
    return (share.stop - share.start) // accumulation


def launch(
    task: str,
    arguments: Mapping[str, Any],
    processes: int,
    *,
    device: str,
    threads: int,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict:
    """Run ``task`` on ``processes`` ranks under torchrun; rank 0's facts (JSON).

    ``task`` names a function ``module:name`` called as ``function(arguments, device, ranks)``
    on every rank; it is named rather than imported so that this module, and the code version
    of the rules that use it, do not depend on every training module."""
    with tempfile.TemporaryDirectory(prefix="hybrid-ir-ranks-") as scratch:
        spec, result = Path(scratch, "task.json"), Path(scratch, "facts.json")
        per_rank = max(1, threads // processes)
        spec.write_text(
            json.dumps(
                {
                    "task": task,
                    "arguments": dict(arguments),
                    "device": device,
                    "threads": per_rank,
                    "timeout_s": timeout_s,
                    "result": str(result),
                },
                default=str,  # paths
            )
        )
        command = [
            sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc-per-node={processes}", "-m", __name__, str(spec),
        ]  # fmt: skip
        LOGGER.info("%s on %d %s processes: %s", task, processes, device, " ".join(command))
        sys.stdout.flush()
        sys.stderr.flush()
        # torchrun would set OMP_NUM_THREADS=1 (with a warning) where it is unset.
        environment = os.environ | {"OMP_NUM_THREADS": str(per_rank)}
        status = subprocess.run(command, env=environment, check=False).returncode
        if status != 0:
            raise HybridIRError(
                f"distributed training {task}: torchrun exited with status {status}: a rank of "
                f"{processes} failed or died (torchrun's report above names it); a pretraining "
                "run resumes from its last checkpoint when started again"
            )
        return json.loads(result.read_text())


def _task(name: str) -> Callable[[dict, str, Ranks], dict]:
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


def _kill_after_step(rank: int) -> int | None:
    target, _, step = os.environ.get(KILL_ENV, "").partition(":")
    return int(step) if target and int(target) == rank else None


def main(argv: list[str]) -> None:
    """One rank: join the group torchrun set up, run the task, rank 0 writes its facts."""
    import torch
    import torch.distributed as dist

    spec = json.loads(Path(argv[0]).read_text())
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    logging.basicConfig(
        level=logging.INFO if rank == 0 else logging.WARNING,
        stream=sys.stderr,
        format=f"%(asctime)s rank {rank} %(levelname)s %(message)s",
    )
    device = spec["device"]
    if device == "cuda":
        cuda_settings()  # the launching job's TF32 choice, which this rank inherits
        local = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local)
        device = f"cuda:{local}"
    set_threads(spec["threads"])
    dist.init_process_group(
        "nccl" if device.startswith("cuda") else "gloo",
        timeout=timedelta(seconds=spec["timeout_s"]),
    )
    try:
        ranks = Ranks(rank, world, _kill_after_step(rank))
        facts = _task(spec["task"])(spec["arguments"], device, ranks)
        if ranks.main:
            with atomic_output(Path(spec["result"])) as out:
                json.dump(facts, out)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
