"""The GPU mini-run (``make test-gpu``): the paper configuration's torch path end to end on CUDA
with tiny models, so that a cluster user learns of a broken CUDA path in minutes, not after a
queue. MLM pretraining, then DPR and ColBERT fine-tuning from its model, each with gradient
accumulation, in bf16, on one process per visible GPU (torchrun over NCCL above one); then
both models index, search and re-rank on the GPU. Skipped without CUDA (``make test`` here);
``make test-gpu`` fails instead."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
import torch
from test_colbert import WORDS, queries  # noqa: F401  (fixture)
from test_distributed import DPR_ENTRY, _arguments, files  # noqa: F401  (fixture)

from hybrid_ir.neural.encoders import Job, encoder
from hybrid_ir.neural.pretrain import pretrain_job

pytestmark = pytest.mark.gpu

COLBERT_ENTRY = {"steps": 4, "batch_size": 4, "micro_batch_size": 2, "lr": 1e-4,
                 "weight_decay": 0.01, "dim": 16, "query_maxlen": 16, "doc_maxlen": 64,
                 "nbits": 2, "seed": 5, "checkpoint_every": 2}  # fmt: skip
DEPTH = 10


@pytest.fixture(scope="module")
def documents() -> dict[str, str]:
    """Enough token vectors for colbert-ai's k-means (at least as many as its centroids) with
    the pretrained tiny BERT's vocabulary, which splits these words into few pieces."""
    rng = random.Random(11)
    return {f"doc{i:02d}": " ".join(rng.choice(WORDS) for _ in range(40)) for i in range(60)}


def _gpus() -> int:
    """Training processes: every visible GPU where they split the batch of 4, else one."""
    count = torch.cuda.device_count()
    return count if count in (1, 2, 4) else 1


@pytest.fixture(scope="module")
def pretrained(files, tmp_path_factory) -> Path:  # noqa: F811
    out = tmp_path_factory.mktemp("gpu-pretrain")
    gpus = _gpus()
    arguments = _arguments(files, out, "bf16", steps=4, micro_batch_size=max(1, 2 // gpus))
    facts = pretrain_job(arguments, "cuda", gpus, gpus)
    assert facts["processes"] == gpus and facts["settings"]["device"].startswith("cuda")
    train = [row for row in facts["history"] if row["split"] == "train"]
    assert len(train) == 4 and all(math.isfinite(row["mlm"]) for row in train)
    return out / "model"


def test_dpr_trains_indexes_searches_and_reranks_on_the_gpu(
    pretrained,
    files,  # noqa: F811
    documents,
    queries,  # noqa: F811
    tmp_path,
):
    gpus = _gpus()
    entry = DPR_ENTRY | {"steps": 4, "micro_batch_size": max(1, 2 // gpus), "checkpoint_every": 2,
                         "encode_batch_size": 8, "workdir": str(tmp_path / "work")}  # fmt: skip
    job = Job("cuda", precision="bf16", processes=gpus, threads=gpus)
    dpr = encoder("dpr")
    facts = dpr.train(str(pretrained), files["triplets"], tmp_path / "dpr", entry, job)
    assert facts["settings"]["device"].startswith("cuda") and all(
        map(math.isfinite, facts["losses"])
    )
    one = Job("cuda", precision="bf16")
    dpr.index(tmp_path / "dpr", documents, tmp_path / "dpr-index", entry, one)
    run = dpr.search(tmp_path / "dpr", tmp_path / "dpr-index", queries, DEPTH, entry, one)
    assert all(len(found) == DEPTH for found in run.values())
    candidates = {topic: list(found) for topic, found in run.items()}
    reranked = dpr.rerank(tmp_path / "dpr", tmp_path / "dpr-index", candidates, queries, entry, one)
    for topic, found in run.items():
        assert set(reranked[topic]) == set(found)
        # The index's vectors, and the queries encoded as search encodes them.
        assert all(reranked[topic][doc] == pytest.approx(found[doc], rel=1e-5) for doc in found)


def test_colbert_trains_indexes_searches_and_reranks_on_the_gpu(
    pretrained,
    files,  # noqa: F811
    documents,
    queries,  # noqa: F811
    tmp_path,
    extensions_dir,
):
    entry = COLBERT_ENTRY | {"workdir": str(tmp_path / "work")}
    job = Job("cuda", extensions_dir, precision="bf16")
    colbert = encoder("colbert")
    facts = colbert.train(str(pretrained), files["triplets"], tmp_path / "colbert", entry, job)
    assert all(map(math.isfinite, facts["losses"]))
    colbert.index(tmp_path / "colbert", documents, tmp_path / "colbert-index", entry, job)
    run = colbert.search(
        tmp_path / "colbert", tmp_path / "colbert-index", queries, DEPTH, entry, job
    )
    assert all(0 < len(found) <= DEPTH for found in run.values())
    candidates = {topic: list(found) for topic, found in run.items()}
    index = tmp_path / "colbert-index"
    reranked = colbert.rerank(tmp_path / "colbert", index, candidates, queries, entry, job)
    assert {topic: set(found) for topic, found in reranked.items()} == {
        topic: set(found) for topic, found in run.items()
    }
    for topic, found in run.items():
        assert all(reranked[topic][doc] == pytest.approx(found[doc], abs=1e-3) for doc in found)
    metadata = json.loads((tmp_path / "colbert-index" / "metadata.json").read_text())
    assert metadata["num_embeddings"] > 0
