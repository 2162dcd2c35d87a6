"""MLM (+NSP) further pretraining of a backbone on pre-tokenized math text (paper 000, §3.2).

Data: documents are split into sentences, and a seeded slice of the documents is held out and
scored every ``eval_every`` steps. ``pairs`` says how each split's sentence pairs are made:

- ``adjacent``: every adjacent pair of a document's sentences is an example whose second
  sentence is, with probability 1/2, replaced by a sentence of another document (BERT's next
  sentence prediction);
- ``pya0``: pya0's generator (``SentencePairGennerator`` of its mse-aops-2021 scripts, window
  3): a pointer walks the sentences of all documents in order and every read moves it
  ``pair_window`` sentences on. A pair reads its first segment at the pointer; with probability
  1/2 its second segment is the next read (is next: where the two reads lie in two documents,
  both are read again further on, the label kept), otherwise a read at a random sentence of
  another document (not next; pya0 only avoids the pointer's sentence). A pair costs 1.5
  windows on average, hence about sentences / (1.5 window) pairs: 2M of 9M sentences (paper
  000: "Out of 9M sentences ... 2.2M sentence pairs"). pya0 reads up to a random token budget;
  here a segment is up to ``pair_window`` sentences of one document joined by a space (cut,
  like any pair, at ``max_length``).

The launching process writes the pairs once to ``workdir/data``, and every rank maps them
(:mod:`hybrid_ir.neural.pretrain_data`), so neither a rank's memory nor a step's cost grows with
the corpus, but for the epoch's permutation of the pair indices (8 bytes a pair, drawn once an
epoch).

Masking picks 15% of the non-special pieces; ``mask_rule`` ``80/10/10`` (BERT) turns 80% of
those into [MASK], 10% into a random piece and keeps 10%; ``80/20`` keeps 20%, which is what
pya0's trainer does in effect (its random-piece branch, ``r <= 0.1`` after ``r <= 0.8``, can
never fire).

Model: ``AutoModelForPreTraining`` of the backbone: ``BertForPreTraining`` for BERT-style
backbones (MLM + NSP), ``RobertaForMaskedLM`` for RoBERTa (MLM only: RoBERTa dropped NSP, so
``nsp`` must be off, as PSU pretrained theirs for paper 001). all-MiniLM-L6-v2 ships the
encoder only, so the MLM head (transform + LayerNorm + bias; its decoder is tied to the input
embeddings) and the NSP classifier are newly initialised: the facts list every new weight.
The math tokens are added and the embeddings resized before training.

Batches: a step's global batch of ``batch_size`` pairs is tokenized and masked as one, so its
masks depend neither on the process count nor on micro-batches. With ``micro_batch_size`` a
process runs its rows in micro-batches of that many rows (each cut to its longest row),
accumulating their gradients; one optimizer step per global batch. Each micro-batch's loss is its
part of the global mean (its sum over masked pieces divided by the global count, the NSP sum by
the global rows), so the gradients add up to those of the whole batch in one forward.

Resumption: every ``checkpoint_every`` steps the model, optimizer, schedule and loss history
are saved under ``workdir``. A restarted run with the same settings continues from the newest
checkpoint; batches, masks and dropout are drawn from generators seeded by (seed, step), and
dropout also by the micro-batch, so a run killed and resumed ends with the same weights as one
that never stopped. A checkpoint holds no device, process count or micro-batch size: one
written on GPUs, by N ranks or in other micro-batches resumes anywhere.

Data parallelism (:mod:`hybrid_ir.neural.distributed`): with N ranks, every rank draws the
global batch and its masks as one process would and trains on its slice of the rows; the losses
are parts of the global mean as for micro-batches. ``precision`` bf16/fp16 autocasts the
forward passes (fp16 with a gradient scaler); fp32 runs without autocast.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import cast

import numpy as np

from hybrid_ir.data.formats import atomic_directory, atomic_output
from hybrid_ir.errors import ConfigError, HybridIRError
from hybrid_ir.neural.checkpoints import load_state, prune, save_state, step_directories
from hybrid_ir.neural.devices import autocast, grad_scaler
from hybrid_ir.neural.distributed import SINGLE, Ranks, accumulation_steps, launch, micro_batch_rows
from hybrid_ir.neural.models import (
    add_math_tokens,
    backbone_path,
    load_tokenizer,
    read_vocabulary,
    resize_embeddings,
    seed_everything,
    tokenizations_match,
    training_steps,
)
from hybrid_ir.neural.pretrain_data import TrainingData, corpus_data
from hybrid_ir.neural.pretrain_settings import SECTION, PretrainSettings, settings_from_config

logger = logging.getLogger(__name__)

IGNORE = -100
# Dropout seeds of micro-batch i are i strides apart: far beyond any step count and the rank
# offsets of Ranks.seed (1_000_003 a rank), so no two (step, rank, micro-batch) share one.
_MICRO_SEED_STRIDE = 1_000_000_007


def mask_tokens(input_ids, special, vocab_size: int, mask_id: int, settings, generator):
    """(masked input ids, labels): BERT masking with ``settings.mask_rule``."""
    import torch

    probabilities = torch.full(input_ids.shape, settings.mlm_probability)
    probabilities[special] = 0.0
    chosen = torch.bernoulli(probabilities, generator=generator).bool()
    labels = torch.where(chosen, input_ids, torch.full_like(input_ids, IGNORE))
    draw = torch.rand(input_ids.shape, generator=generator)
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator)
    masked = input_ids.clone()
    masked[chosen & (draw < 0.8)] = mask_id
    if settings.mask_rule == "80/10/10":
        replace = chosen & (draw >= 0.8) & (draw < 0.9)
        masked[replace] = random_ids[replace]
    return masked, labels


def _fingerprint(backbone: str, tokens: Sequence[str], data: str, settings) -> str:
    """What a checkpoint must match to be resumed: inputs, settings and this module's code."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    portable = {
        k: v for k, v in asdict(settings).items() if k not in ("device", "micro_batch_size")
    }
    digest.update(json.dumps([backbone, list(tokens), data, portable]).encode())
    return digest.hexdigest()[:16]


class _Order:
    """The pair indices of each step: consecutive slices of per-epoch seeded permutations.
    An epoch's permutation is drawn once, not every step: a draw of 19M indices (ARQMath's
    adjacent pairs) took 1.6 s on a 2-core machine. Two are kept, as a batch may straddle two
    epochs."""

    def __init__(self, size: int, batch_size: int, seed: int):
        self.size, self.batch_size, self.seed = size, batch_size, seed
        self.permutations: dict[int, np.ndarray] = {}

    def batch(self, step: int) -> np.ndarray:
        parts = []
        position, wanted = step * self.batch_size, self.batch_size
        while wanted:
            epoch, offset = divmod(position, self.size)
            take = min(wanted, self.size - offset)
            parts.append(self._permutation(epoch)[offset : offset + take])
            position += take
            wanted -= take
        return np.concatenate(parts)

    def _permutation(self, epoch: int) -> np.ndarray:
        if epoch not in self.permutations:
            if len(self.permutations) == 2:
                del self.permutations[min(self.permutations)]
            rng = np.random.default_rng([self.seed, epoch])
            self.permutations[epoch] = rng.permutation(self.size)
        return self.permutations[epoch]


class _Batches:
    """Tokenized, masked batches of one split; masks depend only on (seed, step), never on
    history."""

    def __init__(self, tokenizer, data: TrainingData, split: str, settings: PretrainSettings):
        self.tokenizer = tokenizer
        self.data = data
        self.split = split
        self.settings = settings

    def make(self, indices, mask_seed: int):
        import torch

        firsts, seconds, labels = self.data.examples(self.split, indices)
        inputs = self.tokenizer(
            firsts,
            seconds,
            truncation="longest_first",
            max_length=self.settings.max_length,
            padding=True,
            return_special_tokens_mask=True,
            return_tensors="pt",
        )
        special = inputs.pop("special_tokens_mask").bool()
        generator = torch.Generator().manual_seed(mask_seed)
        inputs["input_ids"], masked_labels = mask_tokens(
            inputs["input_ids"],
            special,
            len(self.tokenizer),
            self.tokenizer.mask_token_id,
            self.settings,
            generator,
        )
        return inputs, masked_labels, torch.tensor(labels)


def _micro_batches(batch, rows: slice, size: int) -> list:
    """The rows ``rows`` of ``batch`` in consecutive micro-batches of (at most) ``size`` rows,
    each cut after its last attended column: the batch is padded to its longest row, and the
    padding a micro-batch does not need would cost memory and time in every layer."""
    inputs, labels, next_labels = batch
    pieces = []
    for start in range(rows.start, rows.stop, size):
        piece = slice(start, min(start + size, rows.stop))
        width = int(inputs["attention_mask"][piece].any(0).nonzero().max()) + 1
        cut = {name: tensor[piece, :width] for name, tensor in inputs.items()}
        pieces.append((cut, labels[piece, :width], next_labels[piece]))
    return pieces


def _losses(model, inputs, labels, next_labels, nsp: bool, totals=None):
    """(MLM loss, NSP loss); vocabulary logits are computed at the masked positions only,
    which saves most of the head's cost (85% of positions carry no label). With ``totals``
    (masked pieces, pairs) of a global batch these rows are a slice of, each loss is this
    slice's part of the global mean."""
    import torch.nn.functional as F

    encoded = model.base_model(**inputs)
    chosen = labels != IGNORE
    logits = _mlm_head(model)(encoded.last_hidden_state[chosen])
    if totals is not None:
        masked, rows = totals
        mlm = F.cross_entropy(logits, labels[chosen], reduction="sum") / max(masked, 1)
        if not nsp:
            return mlm, mlm.new_zeros(())
        scores = model.cls.seq_relationship(encoded.pooler_output)
        return mlm, F.cross_entropy(scores, next_labels, reduction="sum") / rows
    mlm = F.cross_entropy(logits, labels[chosen]) if chosen.any() else logits.sum() * 0.0
    if not nsp:
        return mlm, mlm.new_zeros(())
    return mlm, F.cross_entropy(model.cls.seq_relationship(encoded.pooler_output), next_labels)


def _on(device: str, inputs, labels, next_labels):
    """A batch's tensors on ``device``."""
    moved = {name: tensor.to(device) for name, tensor in inputs.items()}
    return moved, labels.to(device), next_labels.to(device)


def _mlm_head(model):
    """The vocabulary head: BERT keeps it in ``cls.predictions``, RoBERTa in ``lm_head``."""
    return model.cls.predictions if hasattr(model, "cls") else model.lm_head


def _heldout_loss(model, batches: _Batches, size: int, settings) -> tuple[float, float]:
    """Mean losses over the held-out pairs, masked in chunks of ``batch_size`` (so the scores
    do not depend on ``micro_batch_size``), each run in micro-batches where set."""
    import torch

    model.eval()
    totals, count = np.zeros(2), 0
    device = settings.device
    micro = settings.micro_batch_size
    with torch.inference_mode():
        for start in range(0, size, settings.batch_size):
            indices = range(start, min(size, start + settings.batch_size))
            batch = batches.make(indices, settings.seed + start)
            pieces, shares = [batch], None
            if micro is not None and micro < len(indices):
                pieces = _micro_batches(batch, slice(0, len(indices)), micro)
                shares = (int((batch[1] != IGNORE).sum()), len(indices))
            mlm = nsp = 0.0
            for piece in pieces:
                inputs, labels, next_labels = _on(device, *piece)
                with autocast(_device_type(device), settings.precision):
                    parts = _losses(model, inputs, labels, next_labels, settings.nsp, shares)
                mlm, nsp = mlm + float(parts[0]), nsp + float(parts[1])
            totals += [mlm * len(indices), nsp * len(indices)]
            count += len(indices)
    model.train()
    mlm_mean, nsp_mean = totals / max(count, 1)
    return float(mlm_mean), float(nsp_mean)


def _save_checkpoint(workdir: Path, step: int, state: dict) -> Path:
    target = save_state(workdir, step, state)
    prune(workdir)
    return target


def _resume_state(workdir: Path, fingerprint: str) -> dict | None:
    for step, path in reversed(step_directories(workdir)):
        state = load_state(path, "pretraining")
        if state.get("fingerprint") == fingerprint:
            logger.info("resuming from %s (step %d)", path, step)
            return state
        logger.info("ignoring %s: made with other settings", path)
    return None


def _load_model(backbone: str, tokenizer, settings: PretrainSettings):
    from transformers import AutoModelForPreTraining, PreTrainedModel

    # With output_loading_info=True, from_pretrained returns (model, loading info); its
    # annotation only covers the plain model.
    model, info = cast(
        tuple[PreTrainedModel, dict[str, list[str]]],
        AutoModelForPreTraining.from_pretrained(backbone, output_loading_info=True),
    )
    if settings.nsp and not hasattr(getattr(model, "cls", None), "seq_relationship"):
        raise ConfigError(
            f"pretraining: nsp: {backbone} loads as {type(model).__name__}, which has no "
            "next-sentence head; set nsp: false for this backbone (RoBERTa is pretrained with "
            "MLM only)"
        )
    added = resize_embeddings(model, tokenizer)
    return model.to(settings.device), sorted(info["missing_keys"]), added


class _Loop:
    """One optimisation step of pretraining at a time: the batch split across ranks and
    micro-batches, losses summed over them (and exchanged between ranks), then the update."""

    def __init__(self, model, optimizer, schedule, scaler, settings, ranks, accumulation) -> None:
        self.model, self.optimizer, self.schedule, self.scaler = model, optimizer, schedule, scaler
        self.settings, self.ranks, self.accumulation = settings, ranks, accumulation

    def step(self, step: int, indices, batches: _Batches) -> tuple[float, float]:
        """Train on the batch of ``indices``; return its MLM and NSP losses."""
        import torch

        settings, ranks = self.settings, self.ranks
        batch = batches.make(indices, settings.seed * 1_000_003 + step)
        pieces, totals = [batch], None
        if ranks.world > 1 or self.accumulation > 1:
            rows = micro_batch_rows(len(indices), ranks.world, self.accumulation)
            pieces = _micro_batches(batch, ranks.rows(len(indices)), rows)
            totals = (int((batch[1] != IGNORE).sum()), len(indices))
        losses = []
        for index, piece in enumerate(pieces):
            # Dropout, drawn per rank and micro-batch, seeded so that a resumed run redraws it.
            torch.manual_seed(ranks.seed(settings.seed + step + index * _MICRO_SEED_STRIDE))
            inputs, labels, next_labels = _on(settings.device, *piece)
            with autocast(_device_type(settings.device), settings.precision):
                mlm, nsp = _losses(self.model, inputs, labels, next_labels, settings.nsp, totals)
            self.scaler.scale(mlm + nsp).backward()
            losses.append(torch.stack([mlm, nsp]).detach().float())
        summed = torch.stack(losses).sum(0)
        if ranks.world > 1:
            train_mlm, train_nsp = ranks.exchange(self.model.parameters(), step + 1, *summed)
        else:
            train_mlm, train_nsp = summed.tolist()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.schedule.step()
        self.optimizer.zero_grad(set_to_none=True)
        return train_mlm, train_nsp

    def state(self, fingerprint: str, done: int, history: list[dict]) -> dict:
        """What a checkpoint holds to resume after step ``done``."""
        return {
            "fingerprint": fingerprint,
            "step": done,
            "history": history,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "schedule": self.schedule.state_dict(),
            "scaler": self.scaler.state_dict(),
        }


def _facts(backbone, training, added, settings, ranks, accumulation, start, began) -> dict:
    """What a pretraining run reports about its data, the tokens and weights it ``added``, its
    settings and its speed."""
    seconds = time.perf_counter() - began
    trained = settings.steps - start
    return {
        "backbone": backbone,
        "documents": training.facts["documents"],
        "sentences": training.facts["sentences"],
        "pairs": training.facts["pairs"],
        **added,
        "resumed_from_step": start,
        "steps": settings.steps,
        "processes": ranks.world,
        "accumulation_steps": accumulation,
        "seconds": round(seconds, 1),
        "steps_per_second": round(trained / seconds, 3) if trained and seconds else None,
        "settings": asdict(settings),
    }


def pretrain(
    backbone: str,
    data: Path,
    math_tokens: Sequence[str],
    output: Path,
    workdir: Path,
    settings: PretrainSettings,
    ranks: Ranks = SINGLE,
) -> dict:
    """Further-pretrain ``backbone`` on the pairs in ``data`` (``pretrain_data.prepare_data``,
    made with these settings) and save it (with its tokenizer) to ``output``.

    Returns facts: document, sentence and pair counts, newly initialised weights, tokens added,
    losses, timing. ``output`` is written through a temporary sibling. Among ``ranks``, rank 0
    alone writes checkpoints and the model.
    """
    import torch
    from tqdm import tqdm
    from transformers import get_linear_schedule_with_warmup

    seed_everything(settings.seed)
    accumulation = accumulation_steps(
        settings.batch_size, ranks.world, settings.micro_batch_size, SECTION
    )
    path = backbone_path(backbone)
    training = TrainingData(data)
    training.check(settings)
    train_size, held_size = training.size("train"), training.size("heldout")
    total_steps = settings.steps
    if total_steps is None:
        if settings.epochs is None:  # excluded by PretrainSettings.__post_init__
            raise ConfigError("pretraining needs exactly one of steps and epochs")
        length = {"epochs": settings.epochs, "batch_size": settings.batch_size}
        total_steps = training_steps(length, train_size)
        settings = replace(settings, steps=total_steps, epochs=None)
    tokenizer = load_tokenizer(path)
    added_tokens = add_math_tokens(tokenizer, math_tokens)
    model, new_weights, added_rows = _load_model(path, tokenizer, settings)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay
    )
    schedule = get_linear_schedule_with_warmup(optimizer, settings.warmup_steps, total_steps)
    scaler = grad_scaler(_device_type(settings.device), settings.precision)
    fingerprint = _fingerprint(backbone, math_tokens, training.facts["fingerprint"], settings)
    state = _resume_state(workdir, fingerprint)
    history: list[dict] = []
    start = 0
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        scaler.load_state_dict(state["scaler"])
        history, start = state["history"], state["step"]
    order = _Order(train_size, settings.batch_size, settings.seed)
    train_batches = _Batches(tokenizer, training, "train", settings)
    held_batches = _Batches(tokenizer, training, "heldout", settings)
    model.train()
    if start == 0 and ranks.main:
        held_mlm, held_nsp = _heldout_loss(model, held_batches, held_size, settings)
        history.append({"step": 0, "split": "heldout", "mlm": held_mlm, "nsp": held_nsp})
    began = time.perf_counter()
    remaining = range(start, total_steps)
    loop = _Loop(model, optimizer, schedule, scaler, settings, ranks, accumulation)
    for step in tqdm(remaining, desc="pretraining", mininterval=5, disable=not ranks.main):
        train_mlm, train_nsp = loop.step(step, order.batch(step), train_batches)
        done = step + 1
        history.append({"step": done, "split": "train", "mlm": train_mlm, "nsp": train_nsp})
        if not ranks.main:
            continue
        if done % settings.eval_every == 0 or done == total_steps:
            held_mlm, held_nsp = _heldout_loss(model, held_batches, held_size, settings)
            history.append({"step": done, "split": "heldout", "mlm": held_mlm, "nsp": held_nsp})
            logger.info(
                "step %d: train mlm %.4f, held-out mlm %.4f nsp %.4f",
                done,
                train_mlm,
                held_mlm,
                held_nsp,
            )
        if done % settings.checkpoint_every == 0 and done < total_steps:
            _save_checkpoint(workdir, done, loop.state(fingerprint, done, history))
    added = {
        "math_tokens_added": added_tokens,
        "embedding_rows_added": added_rows,
        "newly_initialised": new_weights,
    }
    facts = _facts(backbone, training, added, settings, ranks, accumulation, start, began)
    if ranks.main:
        firsts, seconds_of, _ = training.examples("heldout", range(min(100, held_size)))
        samples = [text for pair in zip(firsts, seconds_of, strict=True) for text in pair]
        _save_model(model, tokenizer, output, facts, samples)
    return {**facts, "history": history}


def _device_type(device: str) -> str:
    """``cuda`` for ``cuda:1``: what autocast and the gradient scaler take."""
    return device.partition(":")[0]


def _save_model(model, tokenizer, output: Path, facts: dict, samples: Sequence[str]) -> None:
    """Save model and tokenizer; the saved tokenizer must tokenize ``samples`` identically."""
    with atomic_directory(output) as staging:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        if not tokenizations_match(tokenizer, load_tokenizer(staging), samples):
            raise HybridIRError(f"{staging}: the saved tokenizer tokenizes differently on reload")
        facts["tokenizer_reload_checked_texts"] = len(samples)
        (staging / "pretraining.json").write_text(json.dumps(facts, indent=1) + "\n")


def write_losses(history: Sequence[dict], path: Path) -> None:
    """The loss history as TSV: step, split (train/heldout), mlm, nsp."""

    with atomic_output(path) as out:
        out.write("step\tsplit\tmlm\tnsp\n")
        for row in history:
            out.write(f"{row['step']}\t{row['split']}\t{row['mlm']:.6f}\t{row['nsp']:.6f}\n")


def pretrain_files(arguments: dict, device: str, ranks: Ranks = SINGLE) -> dict:
    """:func:`pretrain` from files: ``arguments`` holds ``backbone``, ``data`` (what
    :func:`corpus_data` wrote), ``vocabulary`` (the math tokens), ``output``, ``workdir``,
    ``settings`` (the configuration entry) and ``precision``."""

    settings = settings_from_config(
        arguments["settings"], device=device, precision=arguments["precision"]
    )
    return pretrain(
        arguments["backbone"],
        Path(arguments["data"]),
        read_vocabulary(arguments["vocabulary"]),
        Path(arguments["output"]),
        Path(arguments["workdir"]),
        settings,
        ranks,
    )


def pretrain_job(arguments: dict, device: str, processes: int, threads: int) -> dict:
    """:func:`pretrain_files` in this process, or data-parallel on ``processes`` ranks, on the
    pairs of ``arguments["corpora"]`` (pre-tokenized files and their fields), which this process
    writes to ``workdir/data`` first (or finds there) for every rank to map."""
    settings = settings_from_config(
        arguments["settings"], device=device, precision=arguments["precision"]
    )
    accumulation_steps(settings.batch_size, processes, settings.micro_batch_size, SECTION)
    corpora = [(path, fields) for path, fields in arguments["corpora"]]
    data = corpus_data(corpora, Path(arguments["workdir"]) / "data", settings)
    arguments = {**arguments, "data": str(data)}
    if processes == 1:
        return pretrain_files(arguments, device)
    task = f"{__name__}:pretrain_files"
    return launch(task, arguments, processes, device=device, threads=threads)
