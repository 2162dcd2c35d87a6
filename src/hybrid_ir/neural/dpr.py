"""DPR (paper 000, §2.2): a [CLS] bi-encoder scored by dot product, trained on triplets.

One encoder embeds queries and passages (a shared, "siamese" encoder, as pya0's DPR trainer
does). Eq. 1: ``s(q, p) = E(q) . E(p)``. Eq. 2: for a batch of B triplets, each query's
positive competes with all 2B passages of the batch (the other queries' positives and every
hard negative): cross-entropy over ``Q P^T``. AdamW with weight decay; after the warm-up, the
learning rate decays linearly to 0 (``schedule: linear``) or stays constant (``constant``, as
pya0's trainer does). Batches take the triplets in file order (the triplet file is already
shuffled with the configured seed), and dropout draws from a generator seeded per step.

Snapshots (paper 000, Table 1 rows 1-4: DPR fine-tuned for one epoch): the model after epoch
``e`` is saved as well, in the final model's format. Epoch ``e`` ends after the steps that
training for ``e`` epochs takes, so with a constant rate (which does not depend on the total
length) a snapshot is the model a training of ``e`` epochs gives, bit for bit.

Data parallelism (:mod:`hybrid_ir.neural.distributed`): with N ranks each encodes its slice of
the global batch (tokenized whole, as one process pads it) and gathers every rank's passage
vectors, with their gradients, so that each query still competes with all 2B passages; each
rank's loss is its queries' share of the global mean. ``precision`` bf16/fp16 autocasts the
forward passes (fp16 with a gradient scaler); fp32 runs without autocast.

Micro-batches (``micro_batch_size`` below a rank's share of the global batch): gradient caching
(GradCache, Gao et al., 2021) keeps the global batch, and Eq. 2 over all of it, whatever one
device holds. Each rank (a) encodes its share ``micro_batch_size`` triplets at a time without
gradients, each micro-batch tokenized on its own; (b) gathers every rank's vectors and computes
Eq. 2 over the global batch (every rank the same B x 2B scores), whose gradient with respect to
its own vectors it keeps; (c) encodes each micro-batch again, with gradients, and
back-propagates the kept vector gradients into the parameters, which then are summed over the
ranks. Dropout is seeded per (step, micro-batch of the global batch, query/positive/negative),
so the second pass draws the first pass's masks and a micro-batch's masks do not depend on the
number of ranks. fp16's gradient scaler scales the loss of (b), hence the vector gradients of
(c) and the parameter gradients, which it unscales as in the one-pass path. The numbers differ
from the one-pass path's by the order of floating-point sums and by padding (and by dropout,
whose masks follow the shapes), so a ``micro_batch_size`` of None or of the whole share takes
the one-pass path.

Resumption (``workdir``, outside the job's outputs): every ``checkpoint_every`` steps rank 0
keeps a checkpoint there (model, optimizer, schedule, gradient scaler, step, losses, RNG
states; the last two of this training) and a description of what determines the training: the
settings but for device, paths and ``checkpoint_every``, the backbone (its files when local),
the triplets' digest and this module's code. A run started again resumes from the newest
checkpoint whose description matches; batches and dropout are seeded per step, so it ends with
the model an uninterrupted run gives, bit for bit on the CPU in fp32. Checkpoints of other
settings are ignored (one log line names what differs) and removed once this training has a
checkpoint of its own. Snapshots go to ``workdir`` first and are copied to their directories
(job outputs, deleted when a job fails) when training ends, so a run resumed after a snapshot's
epoch still delivers it. Without ``workdir`` nothing is kept and snapshots are saved directly.

Index: faiss ``IndexFlatIP`` shards (exact inner product) over float32 passage vectors,
encoded from a stream of the corpus with memory bounded by one window and one shard
(:mod:`hybrid_ir.neural.shards`); search is top-k per query, shard by shard, merged exactly.

Re-ranking (paper 000, §3.4): a first-stage run's candidates scored as search scores them,
their passage vectors read back from the index.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hybrid_ir.data.formats import atomic_directory
from hybrid_ir.errors import ConfigError, HybridIRError
from hybrid_ir.neural.checkpoints import (
    KEEP,
    load_state,
    restore_rng_states,
    rng_states,
    save_state,
    step_directories,
)
from hybrid_ir.neural.devices import autocast, grad_scaler
from hybrid_ir.neural.distributed import SINGLE, Ranks, accumulation_steps
from hybrid_ir.neural.models import (
    backbone_path,
    load_tokenizer,
    seed_everything,
    training_steps,
)

logger = logging.getLogger(__name__)

SECTION = "math_models.dpr"
"""The configuration entry of DPR's settings, named in their errors."""
ROLES = (("query", "query_max_length"), ("positive", "passage_max_length"),
         ("negative", "passage_max_length"))  # fmt: skip
"""The texts of a triplet and the setting that truncates each."""
_STEP = re.compile(r"step-(\d+)")
_DESCRIPTION = "description.json"


@dataclass(frozen=True)
class DPRSettings:
    steps: int
    batch_size: int
    lr: float
    seed: int
    weight_decay: float = 0.01
    query_max_length: int = 64
    passage_max_length: int = 512
    warmup_steps: int = 0
    schedule: Literal["linear", "constant"] = "linear"
    device: str = "cpu"
    snapshot_dirs: Mapping[int, str] = field(default_factory=dict)
    """Epoch -> the directory its snapshot is saved to."""
    precision: str = "fp32"
    micro_batch_size: int | None = None
    """Triplets per forward pass (gradient caching below a rank's share of the global batch);
    None: each rank encodes its share in one pass."""
    checkpoint_every: int = 1000
    """Steps between checkpoints (with ``workdir``)."""
    workdir: str | None = None
    """Where checkpoints and snapshots are kept until training ends; None: nowhere."""


def _cls(model, tokenizer, texts: Sequence[str], max_length: int, device: str, rows=None):
    """[CLS] vectors of ``texts``, or of their ``rows`` (padded as the whole batch is)."""
    inputs = tokenizer(
        list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt"
    )
    if rows is not None:
        inputs = {name: tensor[rows] for name, tensor in inputs.items()}
    encoded = model(**{name: tensor.to(device) for name, tensor in inputs.items()})
    return encoded.last_hidden_state[:, 0]


def _gathered(vectors):
    """Every rank's ``vectors`` in rank order; gradients flow back to each rank's own."""
    import warnings

    import torch
    from torch.distributed.nn.functional import all_gather

    # Deprecated in favour of a private module (torch.distributed._functional_collectives).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return torch.cat(all_gather(vectors))


def _sharded_loss(queries, positives, negatives, ranks: Ranks, batch_size: int):
    """This rank's share of Eq. 2 over the global batch: its queries against all passages, in
    the one-process order (every positive, then every negative), summed and divided by B."""
    import torch
    import torch.nn.functional as F

    passages = torch.cat([_gathered(positives), _gathered(negatives)])
    scores = queries @ passages.T
    first = ranks.rows(batch_size).start
    targets = torch.arange(first, first + len(queries), device=scores.device)
    return F.cross_entropy(scores, targets, reduction="sum") / batch_size


def contrastive_loss(queries, positives, negatives):
    """Eq. 2 with in-batch negatives: query i's target is passage i among all 2B passages."""
    import torch
    import torch.nn.functional as F

    passages = torch.cat([positives, negatives])
    scores = queries @ passages.T
    return F.cross_entropy(scores, torch.arange(len(queries), device=scores.device))


def _whole_share_loss(model, tokenizer, batch, settings: DPRSettings, ranks: Ranks, step: int):
    """Eq. 2 (this rank's share of it) from one forward pass per role over the rank's rows."""
    import torch

    torch.manual_seed(ranks.seed(settings.seed + step))  # dropout
    rows = ranks.rows(settings.batch_size) if ranks.world > 1 else None
    device = settings.device
    with autocast(device.partition(":")[0], settings.precision):
        queries, positives, negatives = (
            _cls(model, tokenizer, [t[role] for t in batch], getattr(settings, length), device,
                 rows)
            for role, length in ROLES
        )  # fmt: skip
        if ranks.world > 1:
            return _sharded_loss(queries, positives, negatives, ranks, settings.batch_size)
        return contrastive_loss(queries, positives, negatives)


def _dropout_seed(seed: int, step: int, micro_batch: int, role: int) -> int:
    """The dropout seed of one forward pass of gradient caching: both passes of a micro-batch
    draw the same masks, and the micro-batch (numbered within the global batch) draws them
    however many ranks share the batch."""
    sequence = np.random.SeedSequence([seed % 2**32, step, micro_batch, role])
    return int(sequence.generate_state(1, np.uint64)[0])


def _all_ranks(vectors, ranks: Ranks):
    """Every rank's ``vectors`` in rank order, this rank's own (the ones that take gradients) in
    its place: the others are copies, as their gradients belong to their ranks."""
    if ranks.world == 1:
        return vectors
    import torch
    import torch.distributed as dist

    parts = [torch.empty_like(vectors) for _ in range(ranks.world)]
    dist.all_gather(parts, vectors.detach())
    parts[ranks.rank] = vectors
    return torch.cat(parts)


def _cached_loss(
    model, tokenizer, batch, settings: DPRSettings, ranks: Ranks, step: int, size: int, scaler
):
    """Eq. 2 over the global batch by gradient caching in micro-batches of ``size`` (the module
    docstring's steps (a) to (c)), with this rank's parameter gradients accumulated; every rank
    returns the same loss."""
    import torch

    rows = ranks.rows(settings.batch_size)
    device = settings.device
    device_type = device.partition(":")[0]
    micro_batches = [
        (
            start // size,
            [
                tokenizer(
                    [t[role] for t in batch[start : start + size]],
                    padding=True,
                    truncation=True,
                    max_length=getattr(settings, length),
                    return_tensors="pt",
                )
                for role, length in ROLES
            ],
        )
        for start in range(rows.start, rows.stop, size)
    ]

    def encode(number: int, role: int, inputs):
        torch.manual_seed(_dropout_seed(settings.seed, step, number, role))
        encoded = model(**{name: tensor.to(device) for name, tensor in inputs.items()})
        return encoded.last_hidden_state[:, 0]

    cached: list[list[Any]] = [[] for _ in ROLES]
    with torch.no_grad(), autocast(device_type, settings.precision):
        for number, inputs in micro_batches:
            for role, tokens in enumerate(inputs):
                cached[role].append(encode(number, role, tokens))
    mine = [torch.cat(vectors).requires_grad_() for vectors in cached]
    with autocast(device_type, settings.precision):
        loss = contrastive_loss(*(_all_ranks(vectors, ranks) for vectors in mine))
    gradients = torch.autograd.grad(scaler.scale(loss), mine)
    for position, (number, inputs) in enumerate(micro_batches):
        part = slice(position * size, (position + 1) * size)
        for role, tokens in enumerate(inputs):
            with autocast(device_type, settings.precision):
                vectors = encode(number, role, tokens)
            torch.autograd.backward(vectors, gradients[role][part])
    return loss.detach()


def _schedule(optimizer, settings: DPRSettings):
    from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup

    if settings.schedule == "constant":
        return get_constant_schedule_with_warmup(optimizer, settings.warmup_steps)
    return get_linear_schedule_with_warmup(optimizer, settings.warmup_steps, settings.steps)


def snapshot_steps(settings: DPRSettings, triplets: int) -> dict[int, int]:
    """The step after which each snapshot is taken: where training for its epochs would end
    (the last step for a training that stops at its last snapshot)."""
    steps = {
        epoch: training_steps({"epochs": epoch, "batch_size": settings.batch_size}, triplets)
        for epoch in settings.snapshot_dirs
    }
    late = [epoch for epoch, step in steps.items() if step > settings.steps]
    if late:
        raise ConfigError(
            f"config: math_models.dpr.snapshots: epoch {late[0]} ends after training does "
            f"({settings.steps} steps)"
        )
    return steps


def train_dpr(
    backbone: str,
    triplets: Sequence[dict],
    output: Path,
    settings: DPRSettings,
    ranks: Ranks = SINGLE,
) -> dict:
    """Fine-tune ``backbone`` as a DPR encoder; save encoder and tokenizer to ``output``, and
    the snapshots of ``settings.snapshot_dirs`` after their epochs (rank 0 alone saves). With
    ``settings.workdir``, resume from its newest checkpoint of the same training, if any."""
    import torch
    from tqdm import tqdm
    from transformers import AutoModel

    accumulation_steps(settings.batch_size, ranks.world, settings.micro_batch_size, SECTION)
    epoch_ends = snapshot_steps(settings, len(triplets))
    snapshots = {step: epoch for epoch, step in epoch_ends.items()}
    seed_everything(settings.seed)
    path = backbone_path(backbone)
    tokenizer = load_tokenizer(path)
    model = AutoModel.from_pretrained(path).to(settings.device).train()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay
    )
    schedule = _schedule(optimizer, settings)
    device_type = settings.device.partition(":")[0]
    scaler = grad_scaler(device_type, settings.precision)
    micro = settings.micro_batch_size
    if micro == settings.batch_size // ranks.world:
        micro = None  # the one-pass path: gradient caching would compute the same, twice
    work = None
    if settings.workdir is not None:
        work = _Workdir(Path(settings.workdir), _description(backbone, triplets, settings))
    losses: list[float] = []
    start, seconds = 0, 0.0
    state = work.resume(epoch_ends) if work is not None else None
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        scaler.load_state_dict(state["scaler"])
        restore_rng_states(state["rng"])
        losses, start, seconds = state["losses"], state["step"], state["seconds"]
    began = time.perf_counter() - seconds
    progress = tqdm(
        range(start, settings.steps),
        desc="DPR",
        total=settings.steps,
        initial=start,
        mininterval=5,
        disable=not ranks.main,
    )
    for step in progress:
        first = step * settings.batch_size
        batch = [triplets[(first + i) % len(triplets)] for i in range(settings.batch_size)]
        if micro is not None:
            loss = _cached_loss(model, tokenizer, batch, settings, ranks, step, micro, scaler)
        else:
            loss = _whole_share_loss(model, tokenizer, batch, settings, ranks, step)
            scaler.scale(loss).backward()
        if ranks.world > 1:
            # Each rank's part of the loss, summed: with micro-batches each computed all of it.
            part = loss / ranks.world if micro is not None else loss
            [value] = ranks.exchange(model.parameters(), step + 1, part)
        else:
            value = loss.item()
        scaler.step(optimizer)
        scaler.update()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(round(value, 6))
        done = step + 1
        if not ranks.main:
            continue
        if done % 10 == 0:
            logger.info("step %d: loss %.4f", done, np.mean(losses[-10:]))
        if done in snapshots:
            epoch = snapshots[done]
            facts = _facts(backbone, triplets, settings, losses, time.perf_counter() - began)
            target = (
                work.snapshot(epoch) if work is not None else Path(settings.snapshot_dirs[epoch])
            )
            _save(model, tokenizer, target, facts)
            logger.info("epoch %d: snapshot saved to %s", epoch, target)
        if work is not None and done % settings.checkpoint_every == 0 and done < settings.steps:
            state = {
                "step": done,
                "losses": losses,
                "seconds": time.perf_counter() - began,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "schedule": schedule.state_dict(),
                "scaler": scaler.state_dict(),
                "rng": rng_states(),
            }
            work.save(done, state)
    facts = _facts(backbone, triplets, settings, losses, time.perf_counter() - began)
    facts["resumed_from_step"] = start
    if ranks.main:
        if work is not None:
            for epoch, directory in settings.snapshot_dirs.items():
                work.deliver(epoch, Path(directory))
        _save(model, tokenizer, output, facts)
    return facts


def _facts(
    backbone: str,
    triplets: Sequence[dict],
    settings: DPRSettings,
    losses: list[float],
    seconds: float,
) -> dict:
    """What a model's ``dpr.json`` says: its training so far (a snapshot's steps are its own)."""
    steps = len(losses)
    return {
        "backbone": backbone,
        "triplets": len(triplets),
        "epochs": round(steps * settings.batch_size / len(triplets), 3),
        "seconds": round(seconds, 1),
        "steps_per_second": round(steps / seconds, 3),
        "first_loss": losses[0],
        "final_loss": float(np.mean(losses[-10:])),
        "losses": losses,
        "settings": {
            k: v for k, v in asdict(settings).items() if k not in ("snapshot_dirs", "workdir")
        }
        | {"steps": steps},
    }


def _save(model, tokenizer, output: Path, facts: dict) -> None:
    with atomic_directory(output) as staging:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "dpr.json").write_text(json.dumps(facts, indent=1) + "\n")


def _description(backbone: str, triplets: Sequence[dict], settings: DPRSettings) -> dict:
    """What determines a training, under the configuration keys a change would be made to:
    checkpoints whose description differs are not resumed."""
    left_out = ("device", "workdir", "checkpoint_every", "snapshot_dirs", "precision")
    described: dict[str, Any] = {
        f"math_models.dpr.{name}": value
        for name, value in asdict(settings).items()
        if name not in left_out
    }
    described["math_models.dpr.snapshots"] = sorted(settings.snapshot_dirs)
    described["math_models.precision"] = settings.precision
    digest = hashlib.sha256()
    for triplet in triplets:
        digest.update(json.dumps([triplet[role] for role, _ in ROLES]).encode() + b"\n")
    described |= {
        "backbone": backbone,
        "backbone files": _files_digest(Path(backbone_path(backbone))),
        "triplets": f"{len(triplets)}, sha256 {digest.hexdigest()[:16]}",
        "code": f"dpr.py sha256 {hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]}",
    }
    # As read back from a checkpoint's JSON: lists for tuples, so that equal compares equal.
    return json.loads(json.dumps(described))


def _files_digest(directory: Path) -> str | None:
    """A digest of a local backbone's files (a backbone further pretrained here is rebuilt
    under the same name); None for a hub id."""
    if not directory.is_dir():
        return None
    digest = hashlib.sha256()
    for file in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(directory)).encode() + b"\0")
        with open(file, "rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    return f"sha256 {digest.hexdigest()[:16]}"


class _Workdir:
    """One training's checkpoints and snapshots (the module docstring's resumption)."""

    def __init__(self, path: Path, description: dict):
        self.path = path
        self.description = description
        encoded = json.dumps(description, sort_keys=True).encode()
        self.fingerprint = hashlib.sha256(encoded).hexdigest()[:16]
        self.kept: list[Path] = []  # this training's checkpoints, oldest first

    def snapshot(self, epoch: int) -> Path:
        return self.path / f"snapshot-epoch{epoch}-{self.fingerprint}"

    def resume(self, epoch_ends: Mapping[int, int]) -> dict | None:
        """The newest checkpoint's state made by this training (with the snapshots it has
        passed), or None; one log line lists the checkpoints ignored and why."""
        ignored = []
        for step, path in reversed(step_directories(self.path)):
            made = _read_description(path / _DESCRIPTION)
            missing = [e for e, end in epoch_ends.items() if end <= step]
            missing = [e for e in missing if not self.snapshot(e).is_dir()]
            if made != self.description:
                changes = (
                    f"{key}: {made.get(key, 'absent')} -> {self.description.get(key, 'absent')}"
                    for key in sorted(made.keys() | self.description.keys())
                    if made.get(key) != self.description.get(key)
                )
                ignored.append(f"{path.name} ({', '.join(changes)})")
            elif missing:
                ignored.append(f"{path.name} (its epoch {missing[0]} snapshot is missing)")
            else:
                if ignored:
                    logger.info("ignoring in %s: %s", self.path, "; ".join(ignored))
                logger.info("resuming from %s (step %d)", path, step)
                self.kept = [path]
                return load_state(path, "DPR")
        if ignored:
            logger.info("ignoring in %s: %s; training starts over", self.path, "; ".join(ignored))
        return None

    def save(self, step: int, state: dict) -> None:
        """Keep ``state`` as step ``step``'s checkpoint; remove this training's older ones but
        the last, and what other trainings left (their checkpoints and snapshots)."""
        description = json.dumps(self.description, indent=1) + "\n"
        target = save_state(self.path, step, state, {_DESCRIPTION: description})
        self.kept = [*self.kept, target][-KEEP:]
        for path in self.path.iterdir():
            if path.name.startswith("snapshot-"):
                stale = not path.name.endswith(self.fingerprint)
            else:  # a killed save's staging directory (".NAME.tmp") too
                ours = path in self.kept
                stale = not ours and bool(_STEP.fullmatch(path.name) or path.name.endswith(".tmp"))
            if stale and path.is_dir():
                shutil.rmtree(path)

    def deliver(self, epoch: int, directory: Path) -> None:
        """Copy the snapshot of ``epoch`` to its (output) ``directory``."""
        with atomic_directory(directory) as staging:
            shutil.copytree(self.snapshot(epoch), staging)


def _advice(file: Path) -> str:
    return f"delete {file.parent} to resume from an earlier checkpoint or start over"


def _read_description(file: Path) -> dict:
    try:
        described = json.loads(file.read_text())
    except (OSError, ValueError) as error:
        raise HybridIRError(
            f"{file}: cannot read this checkpoint's description ({error}); {_advice(file)}"
        ) from None
    if not isinstance(described, dict):
        raise HybridIRError(f"{file}: not a DPR checkpoint description; {_advice(file)}")
    return described
