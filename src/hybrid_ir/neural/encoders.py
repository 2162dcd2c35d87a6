"""The trained encoders, one registry entry each: how the workflow trains a model, indexes a
collection with it and searches that index, and how it re-scores another run's candidates
from that index (paper 000, §3.4), from the encoder's configuration entry.

The rules and scripts only name an encoder (``dpr``, ``colbert``); adding one is an entry here
and its settings in the configuration. Heavy libraries are imported when an entry is used.

The model is a directory this workflow trained, or a released checkpoint (``math_models.
released``): a local directory in the same format, or a hub id passed on as a relative path
(``Path("owner/name")``), which the loaders hand to transformers or colbert as the id it is.
Two settings of a released entry adapt approach0's released models (pya0) to what they were
trained with: ``pooling: pooler`` (pya0's DPR embeds with BERT's pooler over [CLS], ours with
[CLS] itself) and ``math_tokens: dollar`` (pya0 writes a math token ``$sym$``, our
pre-tokenization ``<sym>``). The workflow's own models use neither, so the settings they were
fine-tuned with lack both keys.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from hybrid_ir.data.runs import Run
from hybrid_ir.errors import ConfigError
from hybrid_ir.neural.distributed import SINGLE, Ranks, accumulation_steps, launch
from hybrid_ir.neural.dpr import SECTION, DPRSettings, train_dpr
from hybrid_ir.neural.dpr_index import index_dpr, rerank_dpr, search_dpr
from hybrid_ir.neural.models import backbone_path, training_steps
from hybrid_ir.neural.shards import ENCODE_WINDOW, SHARD_SIZE
from hybrid_ir.neural.triplets import read_triplets

Settings = Mapping[str, Any]
Candidates = Mapping[str, Sequence[str]]
"""A re-ranker's input: topic -> the doc ids it re-scores."""

LOGGER = logging.getLogger(__name__)

ANGLE_TOKEN = re.compile(r"(?<!\S)<([^\s<>]+)>(?!\S)")
"""A math token as pre-tokenization writes it: ``<sym>`` between spaces."""


Passages = Mapping[str, str] | Iterable[tuple[str, str]]
"""What an index is built from: doc id -> text, or ``(doc id, text)`` pairs streamed from the
corpus (:func:`hybrid_ir.neural.dense.corpus_texts`), which an index that encodes as it reads
never holds whole."""


def model_passages(passages: Passages, entry: Settings) -> Iterator[tuple[str, str]]:
    """:func:`model_texts` of ``(doc id, text)`` pairs, one at a time."""
    pairs = passages.items() if isinstance(passages, Mapping) else passages
    dollar = entry.get("math_tokens", "angle") == "dollar"
    for doc_id, text in pairs:
        yield doc_id, ANGLE_TOKEN.sub(r"$\1$", text) if dollar else text


def model_texts(texts: Mapping[str, str], entry: Settings) -> Mapping[str, str]:
    """Texts with their math tokens in the form the model's vocabulary holds: ``<sym>`` as
    pre-tokenized, or pya0's ``$sym$`` for an entry with ``math_tokens: dollar``."""
    if entry.get("math_tokens", "angle") == "angle":
        return texts
    return {key: ANGLE_TOKEN.sub(r"$\1$", text) for key, text in texts.items()}


@dataclass(frozen=True)
class Job:
    """What every encoder step may need beside its settings."""

    device: str = "cpu"
    extensions_dir: Path | None = None  # colbert-ai's compiled extensions
    precision: str = "fp32"
    processes: int = 1
    """Training processes (data-parallel above 1: DPR only)."""
    threads: int = 1
    """The job's CPU threads, shared out among its training processes."""
    ranks: Ranks = SINGLE
    """Where this process stands among the training processes that run it."""


@dataclass(frozen=True)
class EncoderKind:
    train: Callable[[str, Path, Path, Settings, Job], dict]
    index: Callable[[Path, Passages, Path, Settings, Job], dict]
    search: Callable[[Path, Path, Mapping[str, str], int, Settings, Job], Run]
    rerank: Callable[[Path, Path, Candidates, Mapping[str, str], Settings, Job], Run]
    """Every candidate scored as ``search`` scores it (model, index, candidates, queries): the
    candidates' vectors read from the index ``search`` reads, so that a collection is encoded
    once per model; a candidate the index does not hold is an error."""


def _train_dpr(source: str, triplets: Path, output: Path, entry: Settings, job: Job) -> dict:
    if job.processes > 1:
        # Here rather than on the ranks, which would fail with torchrun's report only.
        micro_batch = entry.get("micro_batch_size")
        accumulation_steps(entry["batch_size"], job.processes, micro_batch, SECTION)
        arguments = {
            "source": source,
            "triplets": str(triplets),
            "output": str(output),
            "entry": dict(entry),
            "precision": job.precision,
        }
        task = f"{__name__}:train_dpr_rank"
        return launch(task, arguments, job.processes, device=job.device, threads=job.threads)
    loaded = read_triplets(triplets)
    known = {field.name for field in fields(DPRSettings)}
    values = {key: value for key, value in entry.items() if key in known}
    steps = training_steps(entry, len(loaded))
    run = {"steps": steps, "device": job.device, "precision": job.precision}
    return train_dpr(source, loaded, output, DPRSettings(**(values | run)), job.ranks)


def train_dpr_rank(arguments: dict, device: str, ranks: Ranks) -> dict:
    """One rank of a data-parallel DPR training (:func:`_train_dpr`'s ``arguments``)."""
    entry = arguments["entry"]
    # JSON made the snapshot epochs strings.
    entry["snapshot_dirs"] = {int(e): path for e, path in entry["snapshot_dirs"].items()}
    job = Job(device, precision=arguments["precision"], ranks=ranks)
    source, triplets, output = arguments["source"], arguments["triplets"], arguments["output"]
    return _train_dpr(source, Path(triplets), Path(output), entry, job)


def _index_dpr(model: Path, documents: Passages, index: Path, entry: Settings, job: Job) -> dict:
    return index_dpr(
        model,
        model_passages(documents, entry),
        index,
        max_length=entry["passage_max_length"],
        batch_size=entry["encode_batch_size"],
        pooling=entry.get("pooling", "cls"),
        device=job.device,
        precision=job.precision,
        shard_size=entry.get("shard_size", SHARD_SIZE),
        window=entry.get("encode_window", ENCODE_WINDOW),
    )


def _search_dpr(
    model: Path, index: Path, queries: Mapping[str, str], depth: int, entry: Settings, job: Job
) -> Run:
    return search_dpr(
        model,
        index,
        model_texts(queries, entry),
        depth,
        entry["query_max_length"],
        pooling=entry.get("pooling", "cls"),
        device=job.device,
        precision=job.precision,
    )


def _rerank_dpr(
    model: Path,
    index: Path,
    candidates: Candidates,
    queries: Mapping[str, str],
    entry: Settings,
    job: Job,
) -> Run:
    return rerank_dpr(
        model,
        index,
        candidates,
        model_texts(queries, entry),
        entry["query_max_length"],
        pooling=entry.get("pooling", "cls"),
        device=job.device,
        precision=job.precision,
    )


def _train_colbert(source: str, triplets: Path, output: Path, entry: Settings, job: Job) -> dict:
    from hybrid_ir.neural.colbert import CHECKPOINT_EVERY, train_colbert

    if job.processes > 1:
        LOGGER.warning(
            "ColBERT trains on one process, not %d: its training loop runs one rank "
            "(colbert-ai's own multi-rank path needs CUDA and NCCL; see hybrid_ir.neural.colbert)",
            job.processes,
        )
    return train_colbert(
        Path(backbone_path(source)),
        triplets,
        output,
        steps=training_steps(entry, len(read_triplets(triplets))),
        batch_size=entry["batch_size"],
        lr=entry["lr"],
        weight_decay=entry["weight_decay"],
        dim=entry["dim"],
        query_maxlen=entry["query_maxlen"],
        doc_maxlen=entry["doc_maxlen"],
        seed=entry["seed"],
        micro_batch_size=entry.get("micro_batch_size"),
        checkpoint_every=entry.get("checkpoint_every", CHECKPOINT_EVERY),
        # Outside the job's outputs, which Snakemake deletes when a job fails.
        workdir=Path(entry["workdir"]) if entry.get("workdir") else None,
        extensions_dir=job.extensions_dir,
        device=job.device,
        precision=job.precision,
    )


def _index_colbert(
    model: Path, documents: Passages, index: Path, entry: Settings, job: Job
) -> dict:
    from hybrid_ir.neural.colbert import index_colbert

    # colbert-ai's indexer takes the whole collection as one list.
    return index_colbert(
        model,
        dict(model_passages(documents, entry)),
        index,
        nbits=entry["nbits"],
        doc_maxlen=entry["doc_maxlen"],
        extensions_dir=job.extensions_dir,
        seed=entry["seed"],
        device=job.device,
        precision=job.precision,
    )


def _search_colbert(
    model: Path, index: Path, queries: Mapping[str, str], depth: int, entry: Settings, job: Job
) -> Run:
    from hybrid_ir.neural.colbert import search_colbert

    return search_colbert(
        model,
        index,
        model_texts(queries, entry),
        k=depth,
        query_maxlen=entry["query_maxlen"],
        doc_maxlen=entry["doc_maxlen"],
        ncells=entry.get("ncells"),
        centroid_score_threshold=entry.get("centroid_score_threshold"),
        ndocs=entry.get("ndocs"),
        extensions_dir=job.extensions_dir,
        device=job.device,
        precision=job.precision,
    )


def _rerank_colbert(
    model: Path,
    index: Path,
    candidates: Candidates,
    queries: Mapping[str, str],
    entry: Settings,
    job: Job,
) -> Run:
    from hybrid_ir.neural.colbert import rerank_colbert

    return rerank_colbert(
        model,
        index,
        candidates,
        model_texts(queries, entry),
        query_maxlen=entry["query_maxlen"],
        doc_maxlen=entry["doc_maxlen"],
        extensions_dir=job.extensions_dir,
        device=job.device,
        precision=job.precision,
    )


ENCODERS: dict[str, EncoderKind] = {
    "dpr": EncoderKind(_train_dpr, _index_dpr, _search_dpr, _rerank_dpr),
    "colbert": EncoderKind(_train_colbert, _index_colbert, _search_colbert, _rerank_colbert),
}


def encoder(name: str) -> EncoderKind:
    if name not in ENCODERS:
        raise ConfigError(f"unknown encoder {name!r}; known: {', '.join(ENCODERS)}")
    return ENCODERS[name]
