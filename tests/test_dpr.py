"""DPR: Eq. 2's loss, training, the flat inner-product index and search; re-ranking (paper 001)."""

import json

import pytest
import torch

from hybrid_ir.neural.dpr import DPRSettings, contrastive_loss, index_dpr, search_dpr, train_dpr
from hybrid_ir.neural.models import Encoder
from hybrid_ir.neural.rerank import rerank_by_embeddings

DOCUMENTS = {
    "d1": "prove the prime number inequality",
    "d2": "the integral of the function",
    "d3": "matrix norm and root",
    "d4": "sum of k and n",
}
TRIPLETS = [
    {"query_id": "q1", "query": "prime number", "positive_id": "d1", "positive": DOCUMENTS["d1"],
     "negative_id": "d3", "negative": DOCUMENTS["d3"]},
    {"query_id": "q2", "query": "integral", "positive_id": "d2", "positive": DOCUMENTS["d2"],
     "negative_id": "d4", "negative": DOCUMENTS["d4"]},
]  # fmt: skip


def test_contrastive_loss_is_cross_entropy_over_all_batch_passages():
    torch.manual_seed(0)
    q, pos, neg = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)
    scores = q @ torch.cat([pos, neg]).T
    expected = -torch.log_softmax(scores, dim=1)[torch.arange(3), torch.arange(3)].mean()
    assert torch.allclose(contrastive_loss(q, pos, neg), expected)


def _train(tiny_bert, out):
    settings = DPRSettings(steps=4, batch_size=2, lr=1e-3, seed=3, passage_max_length=32)
    return train_dpr(str(tiny_bert), TRIPLETS, out, settings)


def test_training_index_and_search_are_deterministic(tiny_bert, tmp_path):
    facts = _train(tiny_bert, tmp_path / "dpr")
    assert facts["epochs"] == 4.0 and len(facts["losses"]) == 4
    assert json.loads((tmp_path / "dpr" / "dpr.json").read_text())["steps_per_second"] > 0
    stats = index_dpr(tmp_path / "dpr", DOCUMENTS.items(), tmp_path / "index", max_length=32)
    assert stats["documents"] == 4 and stats["dimension"] == 32 and stats["size_bytes"] > 0
    run = search_dpr(tmp_path / "dpr", tmp_path / "index", {"q1": "prime"}, k=3, max_length=16)
    assert len(run["q1"]) == 3 and set(run["q1"]) <= set(DOCUMENTS)

    encoder = Encoder(tmp_path / "dpr", pooling="cls", max_length=16)
    query = encoder.encode(["prime"])[0]
    docs = Encoder(tmp_path / "dpr", pooling="cls", max_length=32).encode(list(DOCUMENTS.values()))
    scores = dict(zip(DOCUMENTS, (docs @ query).tolist(), strict=True))
    for doc, score in run["q1"].items():
        assert score == pytest.approx(scores[doc], rel=1e-5)
    left_out = set(DOCUMENTS) - set(run["q1"])
    assert min(run["q1"].values()) >= max(scores[d] for d in left_out) - 1e-4

    _train(tiny_bert, tmp_path / "dpr2")
    index_dpr(tmp_path / "dpr2", DOCUMENTS.items(), tmp_path / "index2", max_length=32)
    again = search_dpr(tmp_path / "dpr2", tmp_path / "index2", {"q1": "prime"}, k=3, max_length=16)
    assert again == run


def test_rerank_scores_only_the_candidates_by_cosine(tiny_bert):
    base = {"q": {"d1": 3.0, "d2": 2.0, "d3": 1.0, "d4": 0.5}}
    run = rerank_by_embeddings(tiny_bert, base, DOCUMENTS, {"q": "prime"}, depth=2)
    assert set(run["q"]) == {"d1", "d2"}
    assert all(-1.0 <= score <= 1.0 for score in run["q"].values())
    encoder = Encoder(tiny_bert, pooling="mean", normalize=True)
    query, d1 = encoder.encode(["prime", DOCUMENTS["d1"]])
    assert run["q"]["d1"] == pytest.approx(float(query @ d1), rel=1e-5)


def test_head_truncation_keeps_the_first_pieces(tiny_bert):
    encoder = Encoder(tiny_bert, pooling="mean", max_length=6)
    long_text = "prime number " + "sum " * 50
    assert (encoder.encode([long_text]) == encoder.encode(["prime number sum sum"])).all()


def test_the_encoder_registry_runs_dpr_from_its_config_entry(tiny_bert, tmp_path):
    from hybrid_ir.errors import ConfigError
    from hybrid_ir.neural.encoders import Job, encoder

    triplets = tmp_path / "triplets.jsonl"
    triplets.write_text("".join(json.dumps(t) + "\n" for t in TRIPLETS))
    entry = {"steps": 4, "batch_size": 2, "lr": 1e-3, "seed": 3, "weight_decay": 0.01}
    entry |= {"query_max_length": 64, "passage_max_length": 32, "encode_batch_size": 32}
    dpr = encoder("dpr")
    facts = dpr.train(str(tiny_bert), triplets, tmp_path / "dpr", entry, Job())
    assert facts["epochs"] == 4.0
    stats = dpr.index(tmp_path / "dpr", DOCUMENTS, tmp_path / "index", entry, Job())
    assert stats["documents"] == 4
    run = dpr.search(tmp_path / "dpr", tmp_path / "index", {"q1": "prime"}, 3, entry, Job())
    direct = search_dpr(tmp_path / "dpr", tmp_path / "index", {"q1": "prime"}, 3, 64)
    assert run == direct and len(run["q1"]) == 3
    with pytest.raises(ConfigError, match="unknown encoder 'splade'; known: dpr, colbert"):
        encoder("splade")


def test_an_epoch_snapshot_is_the_model_of_a_training_that_long(tiny_bert, tmp_path):
    """With a constant rate, the model after epoch 1 of 2 is a 1-epoch training's, bit for bit
    (paper 000, Table 1 rows 1-4); the final model is unchanged by taking a snapshot."""

    def train(steps, out, snapshots=None):
        settings = DPRSettings(
            steps=steps, batch_size=1, lr=1e-3, seed=3, passage_max_length=32, warmup_steps=1,
            schedule="constant", snapshot_dirs=snapshots or {},
        )  # fmt: skip
        return train_dpr(str(tiny_bert), TRIPLETS, out, settings)

    facts = train(4, tmp_path / "two", {1: str(tmp_path / "epoch1")})
    once = train(2, tmp_path / "one")
    plain = train(4, tmp_path / "plain")
    weights = "model.safetensors"
    snapshot = (tmp_path / "epoch1" / weights).read_bytes()
    assert snapshot == (tmp_path / "one" / weights).read_bytes()
    assert snapshot != (tmp_path / "two" / weights).read_bytes()
    assert (tmp_path / "two" / weights).read_bytes() == (tmp_path / "plain" / weights).read_bytes()
    saved = json.loads((tmp_path / "epoch1" / "dpr.json").read_text())
    assert saved["losses"] == once["losses"] == facts["losses"][:2]
    assert saved["epochs"] == 1.0 and saved["settings"]["steps"] == 2
    assert plain["losses"] == facts["losses"] and "snapshot_dirs" not in facts["settings"]


def test_a_snapshot_at_or_after_the_end_of_training_is_a_config_error(tiny_bert, tmp_path):
    from hybrid_ir.errors import ConfigError

    settings = DPRSettings(steps=2, batch_size=1, lr=1e-3, seed=3, snapshot_dirs={1: "x"})
    with pytest.raises(ConfigError, match=r"math_models\.dpr\.snapshots: epoch 1 does not end"):
        train_dpr(str(tiny_bert), TRIPLETS, tmp_path / "dpr", settings)


def test_snapshot_runs_are_named_and_checked_from_configuration():
    from hybrid_ir.config import _check_training_data, math_model_runs
    from hybrid_ir.errors import ConfigError

    dpr = {"epochs": 10, "batch_size": 36, "lr": 3e-6, "schedule": "constant", "snapshots": [1]}
    math = {"backbones": {"bert": {}, "bert-math-7ep": {}}, "dpr": dpr, "released": {}}
    runs = math_model_runs(math)
    assert runs["dpr-epoch1-bert-math-7ep"] == {
        "kind": "dpr",
        "backbone": "bert-math-7ep",
        "model": "dpr-epoch1",
    }
    assert runs["dpr-bert"]["model"] == "dpr" and len(runs) == 4
    _check_training_data(math, "config")
    for change, problem in [
        ({"schedule": "linear"}, "needs math_models.dpr.schedule: constant"),
        ({"snapshots": [10]}, "epoch 10 is not before the last"),
    ]:
        with pytest.raises(ConfigError, match=f"math_models.dpr.snapshots: {problem}"):
            _check_training_data(math | {"dpr": dpr | change}, "config")
    steps = {k: v for k, v in dpr.items() if k != "epochs"} | {"steps": 100}
    with pytest.raises(ConfigError, match="snapshots are epochs"):
        _check_training_data(math | {"dpr": steps}, "config")
    with pytest.raises(ConfigError, match=r"math_models\.triplets\.before: '2018-13-01'"):
        _check_training_data(math | {"triplets": {"before": "2018-13-01"}}, "config")
