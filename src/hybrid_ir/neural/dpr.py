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

Index: a faiss ``IndexFlatIP`` (exact inner product) over float32 passage vectors; search is
top-k per query; the doc ids travel in a JSON file beside the index.

Re-ranking (paper 000, §3.4): a first-stage run's candidates scored as search scores them,
without an index of the collection.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from hybrid_ir.errors import ConfigError
from hybrid_ir.formats import atomic_directory
from hybrid_ir.neural.candidates import unique_candidates
from hybrid_ir.neural.models import (
    Encoder,
    Pooling,
    backbone_path,
    directory_size,
    load_tokenizer,
    training_steps,
)
from hybrid_ir.runs import Run, canonicalize

logger = logging.getLogger(__name__)

INDEX_FILE = "index.faiss"
DOCIDS_FILE = "docids.json"


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


def _cls(model, tokenizer, texts: Sequence[str], max_length: int, device: str):
    inputs = tokenizer(
        list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt"
    ).to(device)
    return model(**inputs).last_hidden_state[:, 0]


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


def train_dpr(backbone: str, triplets: Sequence[dict], output: Path, settings: DPRSettings) -> dict:
    """Fine-tune ``backbone`` as a DPR encoder; save encoder and tokenizer to ``output``, and
    the snapshots of ``settings.snapshot_dirs`` after their epochs."""
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
    losses: list[float] = []
    began = time.perf_counter()
    for step in tqdm(range(settings.steps), desc="DPR", mininterval=5):
        start = step * settings.batch_size
        batch = [triplets[(start + i) % len(triplets)] for i in range(settings.batch_size)]
        torch.manual_seed(settings.seed + step)
        device = settings.device
        queries = _cls(
            model, tokenizer, [t["query"] for t in batch], settings.query_max_length, device
        )
        positives = _cls(
            model, tokenizer, [t["positive"] for t in batch], settings.passage_max_length, device
        )
        negatives = _cls(
            model, tokenizer, [t["negative"] for t in batch], settings.passage_max_length, device
        )
        loss = contrastive_loss(queries, positives, negatives)
        loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(round(loss.item(), 6))
        if (step + 1) % 10 == 0:
            logger.info("step %d: loss %.4f", step + 1, np.mean(losses[-10:]))
        if step + 1 in snapshots:
            epoch = snapshots[step + 1]
            facts = _facts(backbone, triplets, settings, losses, time.perf_counter() - began)
            _save(model, tokenizer, Path(settings.snapshot_dirs[epoch]), facts)
            logger.info("epoch %d: snapshot saved to %s", epoch, settings.snapshot_dirs[epoch])
    facts = _facts(backbone, triplets, settings, losses, time.perf_counter() - began)
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


def index_dpr(
    model: Path,
    documents: Mapping[str, str],
    index_dir: Path,
    max_length: int,
    batch_size: int = 32,
    pooling: Pooling = "cls",
) -> dict:
    """Encode ``documents`` (doc id -> text) with [CLS] (or, for pya0's released models, BERT's
    pooler over it) and store a flat inner-product index."""
    import faiss

    began = time.perf_counter()
    encoder = Encoder(model, pooling=pooling, max_length=max_length, batch_size=batch_size)
    ids = list(documents)
    vectors = encoder.encode([documents[i] for i in ids], progress=True)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    with atomic_directory(index_dir) as staging:
        staging.mkdir()
        faiss.write_index(index, str(staging / INDEX_FILE))
        (staging / DOCIDS_FILE).write_text(json.dumps(ids) + "\n")
    seconds = time.perf_counter() - began
    return {
        "documents": len(ids),
        "dimension": int(vectors.shape[1]),
        "size_bytes": directory_size(index_dir),
        "seconds": round(seconds, 1),
        "documents_per_second": round(len(ids) / seconds, 1),
    }


def search_dpr(
    model: Path,
    index_dir: Path,
    queries: Mapping[str, str],
    k: int,
    max_length: int,
    pooling: Pooling = "cls",
) -> Run:
    """Top-``k`` passages per query by dot product with the query's vector (pooled as the
    index's passages)."""
    import faiss

    index = faiss.read_index(str(index_dir / INDEX_FILE))
    ids = json.loads((index_dir / DOCIDS_FILE).read_text())
    encoder = Encoder(model, pooling=pooling, max_length=max_length)
    topic_ids = list(queries)
    vectors = encoder.encode([queries[t] for t in topic_ids])
    scores, rows = index.search(vectors, min(k, len(ids)))
    return {
        topic: {
            ids[row]: float(score)
            for row, score in zip(rows[i], scores[i], strict=True)
            if row >= 0
        }
        for i, topic in enumerate(topic_ids)
    }


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
        model, pooling=pooling, max_length=passage_max_length, batch_size=batch_size, device=device
    )
    encoded = passages.encode([documents[doc] for doc in unique], progress=True)
    rows = {doc: row for row, doc in enumerate(unique)}
    topic_ids = sorted(candidates)  # encoded in id order, so topic order changes no number
    query_encoder = Encoder(model, pooling=pooling, max_length=query_max_length, device=device)
    vectors = query_encoder.encode([queries[topic] for topic in topic_ids])
    query_vectors = dict(zip(topic_ids, vectors, strict=True))
    run: Run = {}
    for topic, listed in candidates.items():
        docs = sorted(set(listed))  # id order: the order candidates are listed in changes nothing
        scores = encoded[[rows[doc] for doc in docs]] @ query_vectors[topic]
        run[topic] = dict(zip(docs, map(float, scores), strict=True))
    return canonicalize(run)
