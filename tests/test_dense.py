"""Dense retrieval: the packaged MiniLM encodes offline, search ranks and ties canonically."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from hybrid_ir.data.formats import write_records
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.neural import dense
from hybrid_ir.neural.dense import (
    SentenceEncoder,
    dense_search,
    document_text,
    encode_corpus,
    read_embeddings,
    resolve_model,
    topic_texts,
)

# Nothing may reach the hub: sentence-transformers is imported lazily, after this line.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

SENTENCES = [
    "Sweat chloride testing is used to diagnose cystic fibrosis.",
    "Cystic fibrosis is diagnosed with a sweat chloride test.",
    "The quarterly earnings of the railway company fell sharply.",
]


@pytest.fixture(scope="module")
def encoder() -> SentenceEncoder:
    return SentenceEncoder(threads=2, batch_size=8)


def test_default_model_is_the_packaged_copy():
    path = Path(resolve_model(dense.DEFAULT_MODEL))
    assert (path / "config.json").is_file() and (path / "model.safetensors").is_file()
    assert resolve_model("/models/specter2_base") == "/models/specter2_base"
    assert resolve_model("allenai/specter2_base") == "allenai/specter2_base"


def test_encode_unit_vectors_deterministic_and_semantic(encoder):
    first = encoder.encode(SENTENCES)
    second = encoder.encode(SENTENCES)
    assert first.shape == (3, 384) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(first, second)
    cosines = first @ first.T
    assert cosines[0, 1] > 0.8 > 0.2 > cosines[0, 2]
    assert encoder.encode([]).shape == (0, 384)


def test_cls_pooling_replaces_mean_pooling(encoder):
    cls = SentenceEncoder(threads=2, pooling="cls", normalize=True).encode(SENTENCES[:1])
    assert cls.shape == (1, 384)
    np.testing.assert_allclose(np.linalg.norm(cls), 1.0, atol=1e-5)
    assert not np.allclose(cls, encoder.encode(SENTENCES[:1]), atol=1e-3)


def test_document_text_follows_the_specter_convention():
    record = {"id": "7", "title": " Sweat test. ", "text": "Chloride was high.", "subjects": []}
    assert document_text(record) == "Sweat test.[SEP]Chloride was high."
    assert document_text({"id": "1", "title": "", "text": "Is CF mucus abnormal?"}) == (
        "Is CF mucus abnormal?"
    )
    with_list = {**record, "subjects": ["CYSTIC-FIBROSIS", "SWEAT"]}
    assert document_text(with_list, ("text", "subjects"), ". ") == (
        "Chloride was high.. CYSTIC-FIBROSIS; SWEAT"
    )
    with pytest.raises(ConfigError, match="no field 'abstract'"):
        document_text(record, ("title", "abstract"))


DOC_IDS = ["d1", "d2", "d3", "d4", "d5", "d6"]
DOCS = np.array([[3, 4], [1, 0], [-2, 0], [0, 5], [6, 8], [0, 0]], dtype=np.float32)
EXPECTED = [("d2", 1.0), ("d5", 0.6), ("d1", 0.6), ("d6", 0.0), ("d4", 0.0), ("d3", -1.0)]


def test_dense_search_exact_cosines_ties_and_negatives():
    run = dense_search(DOC_IDS, DOCS, {"q": np.array([2.0, 0.0])}, k=None)
    assert list(run["q"].items()) == EXPECTED
    assert (
        list(dense_search(DOC_IDS, DOCS, {"q": np.array([2.0, 0.0])}, k=2)["q"].items())
        == (EXPECTED[:2])
    )
    other = dense_search(DOC_IDS, DOCS, {"q2": np.array([0.0, -1.0])}, k=None)["q2"]
    assert other["d4"] == -1.0 and other["d1"] == -0.8 and list(other)[-1] == "d4"


def test_dense_search_in_blocks_gives_the_same_run(monkeypatch):
    queries = {"a": np.array([2.0, 0.0]), "b": np.array([0.0, -1.0]), "c": np.array([1.0, 1.0])}
    whole = dense_search(DOC_IDS, DOCS, queries, k=3)
    monkeypatch.setattr(dense, "_DOC_BLOCK", 2)
    monkeypatch.setattr(dense, "_QUERY_CHUNK", 1)
    blocked = dense_search(DOC_IDS, DOCS, queries, k=3)
    assert [list(docs.items()) for docs in blocked.values()] == [
        list(docs.items()) for docs in whole.values()
    ]
    assert list(whole["a"].items()) == EXPECTED[:3]


def test_dense_search_rejects_bad_input():
    with pytest.raises(ConfigError, match="no encoder"):
        dense_search(DOC_IDS, DOCS, {"q": "sweat test"})
    with pytest.raises(ConfigError, match="different models"):
        dense_search(DOC_IDS, DOCS, {"q": np.ones(3)})
    with pytest.raises(ConfigError, match="k must be"):
        dense_search(DOC_IDS, DOCS, {"q": np.ones(2)}, k=0)
    with pytest.raises(ConfigError, match="duplicate"):
        dense_search(["a", "a"], DOCS[:2], {"q": np.ones(2)})


def test_encode_corpus_caches_embeddings_and_text_queries_find_them(tmp_path, encoder):
    corpus = tmp_path / "corpus.jsonl"
    records = [
        {"id": str(i), "title": f"Paper {i}", "text": sentence}
        for i, sentence in enumerate(SENTENCES, start=1)
    ]
    write_records(corpus, records)
    facts = encode_corpus(corpus, tmp_path / "a", encoder, shard_size=2)
    assert facts["documents"] == 3 and facts["shards"] == 2
    encode_corpus(corpus, tmp_path / "b", encoder, shard_size=2)
    for name in ("shard-00000.npy", "shard-00001.npy", "shard-00001.ids.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    shards = list(read_embeddings(tmp_path / "a"))
    assert [ids for ids, _ in shards] == [["1", "2"], ["3"]]
    matrix = np.concatenate([vectors for _, vectors in shards])
    assert matrix.dtype == np.float32 and matrix.shape == (3, 384)
    assert np.array_equal(matrix, encoder.encode([document_text(r) for r in records]))
    queries = topic_texts([{"id": "5", "title": "", "text": "How is CF diagnosed?"}], ["text"])
    run = dense_search(["1", "2", "3"], matrix, queries, k=10, encoder=encoder)
    assert list(run["5"])[-1] == "3" and set(run["5"]) == {"1", "2", "3"}


def test_read_embeddings_names_a_bad_shard(tmp_path, encoder):
    corpus = tmp_path / "corpus.jsonl"
    write_records(corpus, [{"id": "1", "title": "", "text": SENTENCES[0]}])
    encode_corpus(corpus, tmp_path / "e", encoder)
    shard = tmp_path / "e" / "shard-00000.npy"
    shard.write_bytes(shard.read_bytes()[:-8])
    with pytest.raises(InputFormatError, match="shard-00000.npy.*truncated or replaced"):
        list(read_embeddings(tmp_path / "e"))
    (tmp_path / "e" / "manifest.json").unlink()
    with pytest.raises(InputFormatError, match="no manifest.json"):
        list(read_embeddings(tmp_path / "e"))


def test_orthogonal_vectors_score_positive_zero():
    run = dense_search(["x"], np.array([[-1.0, 0.0]]), {"q": np.array([0.0, -1.0])})
    assert str(run["q"]["x"]) == "0.0"
