"""MLM (+NSP) further pretraining of a backbone on pre-tokenized math text (paper 000, §3.2).

Data: documents are split into sentences; each adjacent pair becomes an example whose second
sentence is, with probability 1/2, replaced by a sentence of another document (BERT's next
sentence prediction). A seeded slice of the documents is held out and scored every
``eval_every`` steps. Masking picks 15% of the non-special pieces; ``mask_rule`` ``80/10/10``
(BERT) turns 80% of those into [MASK], 10% into a random piece and keeps 10%; ``80/20`` keeps
20%, which is what pya0's trainer does in effect (its random-piece branch, ``r <= 0.1`` after
``r <= 0.8``, can never fire).

Model: ``AutoModelForPreTraining`` of the backbone: ``BertForPreTraining`` for BERT-style
backbones (MLM + NSP), ``RobertaForMaskedLM`` for RoBERTa (MLM only: RoBERTa dropped NSP, so
``nsp`` must be off, as PSU pretrained theirs for paper 001). all-MiniLM-L6-v2 ships the
encoder only, so the MLM head (transform + LayerNorm + bias; its decoder is tied to the input
embeddings) and the NSP classifier are newly initialised: the facts list every new weight.
The math tokens are added and the embeddings resized before training.

Resumption: every ``checkpoint_every`` steps the model, optimizer, schedule and loss history
are saved under ``workdir``. A restarted run with the same settings continues from the newest
checkpoint; batches, masks and dropout are drawn from generators seeded by (seed, step), so a
run killed and resumed ends with the same weights as one that never stopped. A checkpoint
holds no device and no process count: one written on GPUs or by N ranks resumes anywhere.

Data parallelism (:mod:`hybrid_ir.neural.distributed`): with N ranks, every rank draws the
global batch and its masks as one process would and trains on its slice of the rows; the MLM
loss is the global mean over masked pieces (each rank divides its sum by the global count).
``precision`` bf16/fp16 autocasts the forward passes (fp16 with a gradient scaler); fp32 runs
without autocast.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import pickle
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import cast

import numpy as np

from hybrid_ir.errors import ConfigError, HybridIRError
from hybrid_ir.formats import atomic_directory
from hybrid_ir.neural.devices import autocast, grad_scaler
from hybrid_ir.neural.distributed import SINGLE, Ranks, check_divisible, launch
from hybrid_ir.neural.models import (
    add_math_tokens,
    backbone_path,
    load_tokenizer,
    resize_embeddings,
    tokenizations_match,
)

logger = logging.getLogger(__name__)

MASK_RULES = ("80/10/10", "80/20")
IS_NEXT, NOT_NEXT = 0, 1  # transformers' next_sentence_label convention
IGNORE = -100
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+|\n+")
_CHECKPOINT = re.compile(r"step-(\d+)$")
KEEP_CHECKPOINTS = 2


@dataclass(frozen=True)
class PretrainSettings:
    steps: int | None
    batch_size: int
    lr: float
    max_length: int
    seed: int
    mlm_probability: float = 0.15
    mask_rule: str = "80/10/10"
    nsp: bool = True
    weight_decay: float = 0.01
    warmup_steps: int = 0
    checkpoint_every: int = 100
    eval_every: int = 50
    heldout: float = 0.05
    max_heldout_pairs: int = 64
    device: str = "cpu"
    epochs: float | None = None
    precision: str = "fp32"

    def __post_init__(self):
        if (self.steps is None) == (self.epochs is None):
            raise ConfigError("pretraining needs exactly one of steps and epochs")
        if self.mask_rule not in MASK_RULES:
            raise ConfigError(f"pretraining mask_rule must be one of {MASK_RULES}")
        if not 0 < self.mlm_probability < 1:
            raise ConfigError("pretraining mlm_probability must be in (0, 1)")
        if not 0 < self.heldout < 1:
            raise ConfigError("pretraining heldout must be in (0, 1)")


@dataclass(frozen=True)
class Pair:
    first: str
    second: str
    label: int


def sentences(text: str) -> list[str]:
    return [piece.strip() for piece in _SENTENCE_END.split(text) if piece and piece.strip()]


def split_documents(
    documents: Sequence[list[str]], heldout: float, seed: int
) -> tuple[list[list[str]], list[list[str]]]:
    """(training, held-out) documents: a seeded ``heldout`` fraction, at least one document."""
    order = np.random.default_rng(seed).permutation(len(documents))
    cut = max(1, math.ceil(heldout * len(documents)))
    held = {int(index) for index in order[:cut]}
    train = [doc for index, doc in enumerate(documents) if index not in held]
    return train, [doc for index, doc in enumerate(documents) if index in held]


def sentence_pairs(documents: Sequence[list[str]], seed: int, nsp: bool = True) -> list[Pair]:
    """Adjacent sentence pairs; with ``nsp`` half the second sentences come from elsewhere."""
    rng = np.random.default_rng(seed)
    owners = [(doc, index) for doc, text in enumerate(documents) for index in range(len(text))]
    pairs = []
    for doc, text in enumerate(documents):
        for index in range(len(text) - 1):
            if nsp and len(documents) > 1 and rng.random() < 0.5:
                other_doc, other = owners[int(rng.integers(len(owners)))]
                while other_doc == doc:
                    other_doc, other = owners[int(rng.integers(len(owners)))]
                pairs.append(Pair(text[index], documents[other_doc][other], NOT_NEXT))
            else:
                pairs.append(Pair(text[index], text[index + 1], IS_NEXT))
    return pairs


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


def _fingerprint(backbone: str, tokens: Sequence[str], pairs: int, settings) -> str:
    """What a checkpoint must match to be resumed: inputs, settings and this module's code."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    portable = {k: v for k, v in asdict(settings).items() if k != "device"}
    digest.update(json.dumps([backbone, list(tokens), pairs, portable]).encode())
    return digest.hexdigest()[:16]


def _batch_indices(step: int, size: int, batch_size: int, seed: int) -> list[int]:
    """The pair indices of ``step``: consecutive slices of per-epoch seeded permutations."""
    indices: list[int] = []
    position = step * batch_size
    while len(indices) < batch_size:
        epoch, offset = divmod(position, size)
        order = np.random.default_rng([seed, epoch]).permutation(size)
        take = min(batch_size - len(indices), size - offset)
        indices.extend(int(i) for i in order[offset : offset + take])
        position += take
    return indices


class _Batches:
    """Tokenized, masked batches; masks depend only on (seed, step), never on history."""

    def __init__(self, tokenizer, pairs: Sequence[Pair], settings: PretrainSettings):
        self.tokenizer = tokenizer
        self.pairs = pairs
        self.settings = settings

    def make(self, indices: Sequence[int], mask_seed: int):
        import torch

        chosen = [self.pairs[index] for index in indices]
        inputs = self.tokenizer(
            [pair.first for pair in chosen],
            [pair.second for pair in chosen],
            truncation="longest_first",
            max_length=self.settings.max_length,
            padding=True,
            return_special_tokens_mask=True,
            return_tensors="pt",
        )
        special = inputs.pop("special_tokens_mask").bool()
        generator = torch.Generator().manual_seed(mask_seed)
        inputs["input_ids"], labels = mask_tokens(
            inputs["input_ids"],
            special,
            len(self.tokenizer),
            self.tokenizer.mask_token_id,
            self.settings,
            generator,
        )
        next_labels = torch.tensor([pair.label for pair in chosen])
        return inputs, labels, next_labels


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


def _mlm_head(model):
    """The vocabulary head: BERT keeps it in ``cls.predictions``, RoBERTa in ``lm_head``."""
    return model.cls.predictions if hasattr(model, "cls") else model.lm_head


def _heldout_loss(model, batches: _Batches, size: int, settings) -> tuple[float, float]:
    import torch

    model.eval()
    totals, count = np.zeros(2), 0
    with torch.inference_mode():
        for start in range(0, size, settings.batch_size):
            indices = list(range(start, min(size, start + settings.batch_size)))
            inputs, labels, next_labels = batches.make(indices, settings.seed + start)
            device = settings.device
            with autocast(_device_type(device), settings.precision):
                mlm, nsp = _losses(
                    model,
                    inputs.to(device),
                    labels.to(device),
                    next_labels.to(device),
                    settings.nsp,
                )
            totals += [float(mlm) * len(indices), float(nsp) * len(indices)]
            count += len(indices)
    model.train()
    mlm_mean, nsp_mean = totals / max(count, 1)
    return float(mlm_mean), float(nsp_mean)


def _checkpoints(workdir: Path) -> list[tuple[int, Path]]:
    if not workdir.is_dir():
        return []
    found = ((_CHECKPOINT.match(p.name), p) for p in workdir.iterdir() if p.is_dir())
    return sorted((int(match.group(1)), path) for match, path in found if match)


def _save_checkpoint(workdir: Path, step: int, state: dict) -> Path:
    import torch

    target = workdir / f"step-{step:07d}"
    staging = workdir / f".step-{step:07d}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    torch.save(state, staging / "state.pt")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(staging, target)
    for _, old in _checkpoints(workdir)[:-KEEP_CHECKPOINTS]:
        shutil.rmtree(old)
    return target


def _resume_state(workdir: Path, fingerprint: str) -> dict | None:
    for step, path in reversed(_checkpoints(workdir)):
        state = _load_checkpoint_state(path / "state.pt")
        if state.get("fingerprint") == fingerprint:
            logger.info("resuming from %s (step %d)", path, step)
            return state
        logger.info("ignoring %s: made with other settings", path)
    return None


def _load_checkpoint_state(file: Path) -> dict:
    """The saved state, unpickled with torch's weights-only loader: a checkpoint directory may
    have been planted or tampered with, and a full unpickler would run any code it names.
    Everything a checkpoint holds (tensors, numbers, strings, lists, dicts) passes that loader;
    the run needs no RNG state, since batches, masks and dropout are seeded by (seed, step)."""
    import torch

    advice = f"delete {file.parent} to resume from an earlier checkpoint or start over"
    try:
        state = torch.load(file, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError:
        raise HybridIRError(
            f"{file}: refusing to load this checkpoint: it holds objects other than tensors "
            f"and plain data, which could run code when loaded; {advice}"
        ) from None
    except (OSError, EOFError, RuntimeError) as error:
        reason = next(iter(str(error).splitlines()), "")[:200] or type(error).__name__
        raise HybridIRError(f"{file}: cannot read this checkpoint ({reason}); {advice}") from None
    if not isinstance(state, dict):
        raise HybridIRError(f"{file}: not a pretraining checkpoint (no state dict); {advice}")
    return state


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
    # transformers wraps PreTrainedModel.to with functools.wraps(torch.nn.Module.to), so its
    # annotated signature wrongly expects the unbound ``self`` as the first argument.
    moved = model.to(settings.device)  # type: ignore[arg-type]
    return moved, sorted(info["missing_keys"]), added


def pretrain(
    backbone: str,
    documents: Sequence[list[str]],
    math_tokens: Sequence[str],
    output: Path,
    workdir: Path,
    settings: PretrainSettings,
    ranks: Ranks = SINGLE,
) -> dict:
    """Further-pretrain ``backbone`` and save it (with its tokenizer) to ``output``.

    ``documents`` are lists of sentences. Returns facts: pair counts, newly initialised
    weights, tokens added, losses, timing. ``output`` is written through a temporary sibling.
    Among ``ranks``, rank 0 alone writes checkpoints and the model.
    """
    import torch
    from tqdm import tqdm
    from transformers import get_linear_schedule_with_warmup

    from hybrid_ir.neural.models import seed_everything

    seed_everything(settings.seed)
    path = backbone_path(backbone)
    train_docs, held_docs = split_documents(documents, settings.heldout, settings.seed)
    train_pairs = sentence_pairs(train_docs, settings.seed, settings.nsp)
    held_pairs = sentence_pairs(held_docs, settings.seed + 1, settings.nsp)
    held_pairs = held_pairs[: settings.max_heldout_pairs]
    if not train_pairs or not held_pairs:
        raise ConfigError(
            f"pretraining needs sentence pairs in both splits; got {len(train_pairs)} training "
            f"and {len(held_pairs)} held-out pairs from {len(documents)} documents"
        )
    total_steps = settings.steps
    if total_steps is None:
        if settings.epochs is None:  # excluded by PretrainSettings.__post_init__
            raise ConfigError("pretraining needs exactly one of steps and epochs")
        steps = math.ceil(settings.epochs * len(train_pairs) / settings.batch_size)
        total_steps = max(1, steps)
        settings = replace(settings, steps=total_steps, epochs=None)
    tokenizer = load_tokenizer(path)
    added_tokens = add_math_tokens(tokenizer, math_tokens)
    model, new_weights, added_rows = _load_model(path, tokenizer, settings)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay
    )
    schedule = get_linear_schedule_with_warmup(optimizer, settings.warmup_steps, total_steps)
    scaler = grad_scaler(_device_type(settings.device), settings.precision)
    fingerprint = _fingerprint(backbone, math_tokens, len(train_pairs), settings)
    state = _resume_state(workdir, fingerprint)
    history: list[dict] = []
    start = 0
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        scaler.load_state_dict(state["scaler"])
        history, start = state["history"], state["step"]
    train_batches = _Batches(tokenizer, train_pairs, settings)
    held_batches = _Batches(tokenizer, held_pairs, settings)
    model.train()
    if start == 0 and ranks.main:
        held_mlm, held_nsp = _heldout_loss(model, held_batches, len(held_pairs), settings)
        history.append({"step": 0, "split": "heldout", "mlm": held_mlm, "nsp": held_nsp})
    began = time.perf_counter()
    remaining = range(start, total_steps)
    for step in tqdm(remaining, desc="pretraining", mininterval=5, disable=not ranks.main):
        indices = _batch_indices(step, len(train_pairs), settings.batch_size, settings.seed)
        inputs, labels, next_labels = train_batches.make(indices, settings.seed * 1_000_003 + step)
        totals = None
        if ranks.world > 1:
            totals = (int((labels != IGNORE).sum()), len(indices))
            rows = ranks.rows(len(indices))
            inputs = {name: tensor[rows] for name, tensor in inputs.items()}
            labels, next_labels = labels[rows], next_labels[rows]
        torch.manual_seed(ranks.seed(settings.seed + step))  # dropout
        device = settings.device
        with autocast(_device_type(device), settings.precision):
            mlm, nsp = _losses(
                model,
                {name: tensor.to(device) for name, tensor in inputs.items()},
                labels.to(device),
                next_labels.to(device),
                settings.nsp,
                totals,
            )
        loss = mlm + nsp
        scaler.scale(loss).backward()
        done = step + 1
        if ranks.world > 1:
            train_mlm, train_nsp = ranks.exchange(model.parameters(), done, mlm, nsp)
        else:
            train_mlm, train_nsp = mlm.item(), nsp.item()
        scaler.step(optimizer)
        scaler.update()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        history.append({"step": done, "split": "train", "mlm": train_mlm, "nsp": train_nsp})
        if not ranks.main:
            continue
        if done % settings.eval_every == 0 or done == total_steps:
            held_mlm, held_nsp = _heldout_loss(model, held_batches, len(held_pairs), settings)
            history.append({"step": done, "split": "heldout", "mlm": held_mlm, "nsp": held_nsp})
            logger.info(
                "step %d: train mlm %.4f, held-out mlm %.4f nsp %.4f",
                done,
                train_mlm,
                held_mlm,
                held_nsp,
            )
        if done % settings.checkpoint_every == 0 and done < total_steps:
            _save_checkpoint(
                workdir,
                done,
                {
                    "fingerprint": fingerprint,
                    "step": done,
                    "history": history,
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "schedule": schedule.state_dict(),
                    "scaler": scaler.state_dict(),
                },
            )
    seconds = time.perf_counter() - began
    trained = total_steps - start
    facts = {
        "backbone": backbone,
        "documents": {"train": len(train_docs), "heldout": len(held_docs)},
        "pairs": {"train": len(train_pairs), "heldout": len(held_pairs)},
        "math_tokens_added": added_tokens,
        "embedding_rows_added": added_rows,
        "newly_initialised": new_weights,
        "resumed_from_step": start,
        "steps": settings.steps,
        "processes": ranks.world,
        "seconds": round(seconds, 1),
        "steps_per_second": round(trained / seconds, 3) if trained and seconds else None,
        "settings": asdict(settings),
    }
    if ranks.main:
        samples = [text for pair in held_pairs[:100] for text in (pair.first, pair.second)]
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
    from hybrid_ir.formats import atomic_output

    with atomic_output(path) as out:
        out.write("step\tsplit\tmlm\tnsp\n")
        for row in history:
            out.write(f"{row['step']}\t{row['split']}\t{row['mlm']:.6f}\t{row['nsp']:.6f}\n")


def mlm_documents(corpora: Sequence[tuple[str | Path, Sequence[str]]]) -> list[list[str]]:
    """Sentence lists from pre-tokenized corpora: one document per record, made of its
    ``fields``; a field value already used (a thread's question, repeated with every answer)
    is not used again."""
    from hybrid_ir.formats import read_records

    seen: set[str] = set()
    documents = []
    for path, fields in corpora:
        for record in read_records(path):
            parts = []
            for name in fields:
                value = record.get(name)
                if isinstance(value, str) and value.strip() and value not in seen:
                    seen.add(value)
                    parts.extend(sentences(value))
            if parts:
                documents.append(parts)
    return documents


def settings_from_config(entry: dict, **extra) -> PretrainSettings:
    """Settings from the ``pretraining`` configuration entry (``corpus`` is not a setting)."""
    values = {k: v for k, v in entry.items() if k in PretrainSettings.__dataclass_fields__}
    return PretrainSettings(**{"steps": None, **values, **extra})


def pretrain_files(arguments: dict, device: str, ranks: Ranks = SINGLE) -> dict:
    """:func:`pretrain` from files: ``arguments`` holds ``backbone``, ``corpora`` (pairs of a
    pre-tokenized corpus and its fields), ``vocabulary`` (the math tokens), ``output``,
    ``workdir``, ``settings`` (the configuration entry) and ``precision``."""
    from hybrid_ir.neural.models import read_vocabulary

    documents = mlm_documents([(path, fields) for path, fields in arguments["corpora"]])
    settings = settings_from_config(
        arguments["settings"], device=device, precision=arguments["precision"]
    )
    return pretrain(
        arguments["backbone"],
        documents,
        read_vocabulary(arguments["vocabulary"]),
        Path(arguments["output"]),
        Path(arguments["workdir"]),
        settings,
        ranks,
    )


def pretrain_job(arguments: dict, device: str, processes: int, threads: int) -> dict:
    """:func:`pretrain_files` in this process, or data-parallel on ``processes`` ranks."""
    if processes == 1:
        return pretrain_files(arguments, device)
    check_divisible(
        arguments["settings"]["batch_size"], processes, "math_models.pretraining.batch_size"
    )
    task = f"{__name__}:pretrain_files"
    return launch(task, arguments, processes, device=device, threads=threads)
