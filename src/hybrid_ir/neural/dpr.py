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

Index: faiss ``IndexFlatIP`` shards (exact inner product) over float32 passage vectors,
encoded from a stream of the corpus with memory bounded by one window and one shard
(:mod:`hybrid_ir.neural.shards`); search is top-k per query, shard by shard, merged exactly.

Re-ranking (paper 000, §3.4): a first-stage run's candidates scored as search scores them,
without an index of the collection.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.formats import atomic_directory
from hybrid_ir.neural.candidates import unique_candidates
from hybrid_ir.neural.devices import autocast, grad_scaler
from hybrid_ir.neural.distributed import SINGLE, Ranks
from hybrid_ir.neural.models import (
    Encoder,
    Pooling,
    backbone_path,
    directory_size,
    load_tokenizer,
    training_steps,
)
from hybrid_ir.neural.shards import (
    ENCODE_WINDOW,
    SHARD_SIZE,
    ShardWriter,
    encode_to_shards,
    read_shards,
)
from hybrid_ir.runs import Run, canonicalize

logger = logging.getLogger(__name__)

INDEX_SUFFIX = ".faiss"
"""Each shard of an index is a faiss ``IndexFlatIP`` file (:mod:`hybrid_ir.neural.shards`)."""


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


def _schedule(optimizer, settings: DPRSettings):
    from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup

    if settings.schedule == "constant":
        return get_constant_schedule_with_warmup(optimizer, settings.warmup_steps)
    return get_linear_schedule_with_warmup(optimizer, settings.warmup_steps, settings.steps)


def snapshot_steps(settings: DPRSettings, triplets: int) -> dict[int, int]:
    """The step after which each snapshot is taken: where training for its epochs would end."""
    steps = {
        epoch: training_steps({"epochs": epoch, "batch_size": settings.batch_size}, triplets)
        for epoch in settings.snapshot_dirs
    }
    late = [epoch for epoch, step in steps.items() if step >= settings.steps]
    if late:
        raise ConfigError(
            f"config: math_models.dpr.snapshots: epoch {late[0]} does not end before training "
            f"does ({settings.steps} steps)"
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
    the snapshots of ``settings.snapshot_dirs`` after their epochs (rank 0 alone saves)."""
    import torch
    from tqdm import tqdm
    from transformers import AutoModel

    from hybrid_ir.neural.models import seed_everything

    snapshots = {step: epoch for epoch, step in snapshot_steps(settings, len(triplets)).items()}
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
    rows = ranks.rows(settings.batch_size) if ranks.world > 1 else None
    losses: list[float] = []
    began = time.perf_counter()
    for step in tqdm(range(settings.steps), desc="DPR", mininterval=5, disable=not ranks.main):
        start = step * settings.batch_size
        batch = [triplets[(start + i) % len(triplets)] for i in range(settings.batch_size)]
        torch.manual_seed(ranks.seed(settings.seed + step))  # dropout
        device = settings.device
        with autocast(device_type, settings.precision):
            queries = _cls(
                model,
                tokenizer,
                [t["query"] for t in batch],
                settings.query_max_length,
                device,
                rows,
            )
            positives = _cls(
                model,
                tokenizer,
                [t["positive"] for t in batch],
                settings.passage_max_length,
                device,
                rows,
            )
            negatives = _cls(
                model,
                tokenizer,
                [t["negative"] for t in batch],
                settings.passage_max_length,
                device,
                rows,
            )
            if ranks.world > 1:
                loss = _sharded_loss(queries, positives, negatives, ranks, settings.batch_size)
            else:
                loss = contrastive_loss(queries, positives, negatives)
        scaler.scale(loss).backward()
        if ranks.world > 1:
            [value] = ranks.exchange(model.parameters(), step + 1, loss)
        else:
            value = loss.item()
        scaler.step(optimizer)
        scaler.update()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(round(value, 6))
        if not ranks.main:
            continue
        if (step + 1) % 10 == 0:
            logger.info("step %d: loss %.4f", step + 1, np.mean(losses[-10:]))
        if step + 1 in snapshots:
            epoch = snapshots[step + 1]
            facts = _facts(backbone, triplets, settings, losses, time.perf_counter() - began)
            _save(model, tokenizer, Path(settings.snapshot_dirs[epoch]), facts)
            logger.info("epoch %d: snapshot saved to %s", epoch, settings.snapshot_dirs[epoch])
    facts = _facts(backbone, triplets, settings, losses, time.perf_counter() - began)
    if ranks.main:
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
        "settings": {k: v for k, v in asdict(settings).items() if k != "snapshot_dirs"}
        | {"steps": steps},
    }


def _save(model, tokenizer, output: Path, facts: dict) -> None:
    with atomic_directory(output) as staging:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "dpr.json").write_text(json.dumps(facts, indent=1) + "\n")


def _save_flat_index(vectors: np.ndarray, path: Path) -> None:
    import faiss

    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    faiss.write_index(index, str(path))


def index_dpr(
    model: Path | str,
    documents: Mapping[str, str] | Iterable[tuple[str, str]],
    index_dir: Path,
    max_length: int,
    batch_size: int = 32,
    pooling: Pooling = "cls",
    *,
    device: str = "cpu",
    precision: str = "fp32",
    shard_size: int = SHARD_SIZE,
    window: int = ENCODE_WINDOW,
) -> dict:
    """Encode ``documents`` (``(doc id, text)`` pairs, read as they come: a stream of the
    corpus) with [CLS] (or, for pya0's released models, BERT's pooler over it), ``window`` at a
    time on ``device`` in ``precision``, into flat inner-product shards of at most
    ``shard_size`` vectors (:mod:`hybrid_ir.neural.shards`). Returns the index's facts,
    throughput included (``documents_per_second``: what the scale benchmark reads)."""
    began = time.perf_counter()
    encoder = Encoder(
        model,
        pooling=pooling,
        max_length=max_length,
        batch_size=batch_size,
        device=device,
        precision=precision,
    )
    with atomic_directory(index_dir) as staging:
        writer = ShardWriter(staging, shard_size, INDEX_SUFFIX, _save_flat_index)
        manifest = encode_to_shards(
            documents, lambda texts: encoder.encode(texts, progress=True), writer, window
        )
    seconds = time.perf_counter() - began
    return {
        "documents": manifest["documents"],
        "dimension": manifest["dimension"],
        "shards": len(manifest["shards"]),
        "size_bytes": directory_size(index_dir),
        "seconds": round(seconds, 1),
        "documents_per_second": round(manifest["documents"] / seconds, 1),
    }


def search_dpr(
    model: Path,
    index_dir: Path,
    queries: Mapping[str, str],
    k: int,
    max_length: int,
    pooling: Pooling = "cls",
    *,
    device: str = "cpu",
    precision: str = "fp32",
) -> Run:
    """Top-``k`` passages per query by dot product with the query's vector (pooled as the
    index's passages), in canonical run order.

    Shards are searched one at a time, each giving its top ``k`` and every passage tied with
    its ``k``-th score; the canonical top ``k`` of those is the canonical top ``k`` of the
    whole collection (faiss scores a vector the same in any shard), so the run does not depend
    on the shard size. Documents tied at the cut-off are chosen by the canonical rule (doc id
    descending), as everywhere else in the workflow.
    """
    encoder = Encoder(
        model, pooling=pooling, max_length=max_length, device=device, precision=precision
    )
    topic_ids = list(queries)
    return search_index(index_dir, topic_ids, encoder.encode([queries[t] for t in topic_ids]), k)


def search_index(index_dir: Path, topic_ids: Sequence[str], vectors: np.ndarray, k: int) -> Run:
    """:func:`search_dpr` for query vectors already encoded (row ``i`` is ``topic_ids[i]``'s)."""
    import faiss

    run: Run = {topic: {} for topic in topic_ids}
    for shard in read_shards(index_dir, INDEX_SUFFIX):
        index = faiss.read_index(str(shard.path))
        if index.ntotal != len(shard.ids):
            raise InputFormatError(
                shard.path, None, f"{index.ntotal} vectors for {len(shard.ids)} doc ids"
            )
        found = _top_with_ties(index, vectors, k)
        for topic, (scores, rows) in zip(topic_ids, found, strict=True):
            run[topic].update(
                (shard.ids[row], float(score)) for row, score in zip(rows, scores, strict=True)
            )
        # Cut after each shard: memory stays at k documents per query, not k per shard.
        run = canonicalize(run, k)
    return run


def _top_with_ties(index, vectors: np.ndarray, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each query's top ``k`` (scores, rows) of ``index`` and every row tied with its ``k``-th:
    faiss keeps an arbitrary few of the rows tied at the cut-off."""
    total = index.ntotal
    depth = min(k, total)
    if depth == 0:
        return [(np.zeros(0, np.float32), np.zeros(0, np.int64)) for _ in vectors]
    all_scores, all_rows = index.search(vectors, depth)
    found = []
    for position, (scores, rows) in enumerate(zip(all_scores, all_rows, strict=True)):
        kth = scores[depth - 1]
        while len(scores) < total and scores[-1] == kth:
            wider = index.search(vectors[position : position + 1], min(2 * len(scores), total))
            scores, rows = wider[0][0], wider[1][0]
        keep = scores >= kth
        found.append((scores[keep], rows[keep]))
    return found


def rerank_dpr(
    model: Path,
    candidates: Mapping[str, Sequence[str]],
    documents: Mapping[str, str],
    queries: Mapping[str, str],
    query_max_length: int,
    passage_max_length: int,
    batch_size: int = 32,
    device: str = "cpu",
    pooling: Pooling = "cls",
    precision: str = "fp32",
) -> Run:
    """Score each topic's candidate documents (``topic -> doc ids``) as :func:`search_dpr`
    ranks an index built by :func:`index_dpr`: the dot product of [CLS] vectors, passages cut
    at ``passage_max_length`` and queries at ``query_max_length``. Each candidate is encoded
    once, however many topics list it. Topics keep the order of ``candidates``; each topic's
    documents come in canonical run order (score descending).
    """
    unique = unique_candidates(candidates, documents, queries)
    if not unique:
        return {topic: {} for topic in candidates}
    passages = Encoder(
        model,
        pooling=pooling,
        max_length=passage_max_length,
        batch_size=batch_size,
        device=device,
        precision=precision,
    )
    encoded = passages.encode([documents[doc] for doc in unique], progress=True)
    rows = {doc: row for row, doc in enumerate(unique)}
    topic_ids = sorted(candidates)  # encoded in id order, so topic order changes no number
    query_encoder = Encoder(
        model, pooling=pooling, max_length=query_max_length, device=device, precision=precision
    )
    vectors = query_encoder.encode([queries[topic] for topic in topic_ids])
    query_vectors = dict(zip(topic_ids, vectors, strict=True))
    run: Run = {}
    for topic, listed in candidates.items():
        docs = sorted(set(listed))  # id order: the order candidates are listed in changes nothing
        scores = encoded[[rows[doc] for doc in docs]] @ query_vectors[topic]
        run[topic] = dict(zip(docs, map(float, scores), strict=True))
    return canonicalize(run)
