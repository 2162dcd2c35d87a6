"""Data-parallel training on the CPU with 2 gloo processes under torchrun: the same global batch
gives the loss curve of one process, a checkpoint written by 2 ranks resumes in 1, a rank that
dies fails the launch; bf16 autocast on the CPU; the CUDA path where a GPU exists.

Tolerance: with dropout off the two runs compute the same losses from the same batches and
masks; they differ only in the order of floating-point sums (each rank sums its rows, the
all_reduce adds the two halves, matrix products see half-height inputs), about 1e-7 relative
per step in float32, which Adam's normalised steps carry into later steps. Measured over 8
steps: MLM+NSP 1.3e-7 relative (2.4e-7 absolute; held-out losses equal), DPR 4.9e-7 relative
(its losses are rounded to 1e-6). ``RTOL`` (1e-4) leaves a margin of 200x for other CPUs and
thread counts.
"""

from __future__ import annotations

import contextlib
import json
import math
import shutil
import signal
from pathlib import Path

import pytest
import torch
from conftest import make_tiny_bert
from test_dpr import FOUR as TRIPLETS
from test_pretrain import DOCS, MATH
from transformers import BertModel

from hybrid_ir.errors import ConfigError, HybridIRError
from hybrid_ir.neural.distributed import KILL_ENV, Ranks, accumulation_steps
from hybrid_ir.neural.encoders import Job, encoder
from hybrid_ir.neural.pretrain import pretrain_job

RTOL = 1e-4
DEADLINE_S = 120
"""A launch whose rank died must have failed well before this (a hang would not)."""

SETTINGS = dict(steps=8, batch_size=4, lr=1e-3, max_length=32, seed=7, checkpoint_every=4,
                eval_every=4, heldout=0.2)  # fmt: skip
DPR_ENTRY = {"steps": 8, "batch_size": 4, "lr": 1e-3, "seed": 3, "weight_decay": 0.01,
             "query_max_length": 16, "passage_max_length": 32, "snapshot_dirs": {}}  # fmt: skip


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A tiny BERT without dropout (dropout masks are drawn per rank, see the module
    docstring), a pre-tokenized corpus, its math vocabulary, DPR triplets and a DPR backbone.

    The DPR backbone is the tiny BERT with its weight matrices scaled 10x: as initialised, its
    [CLS] vectors hardly depend on the input (every score equal, the loss ln 8 exactly), so its
    gradients are float noise, which Adam's normalised first steps turn into full-size updates
    of either sign; the comparison would measure that noise."""
    root = tmp_path_factory.mktemp("distributed")
    model = make_tiny_bert(root / "bert")
    config = json.loads((model / "config.json").read_text())
    config |= {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    (model / "config.json").write_text(json.dumps(config))
    corpus = root / "corpus.jsonl"
    rows = [{"id": str(i), "title": "", "text": " ".join(doc)} for i, doc in enumerate(DOCS)]
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows))
    vocabulary = root / "vocabulary.tsv"
    vocabulary.write_text("token\tcount\n" + "".join(f"{t}\t3\n" for t in MATH))
    triplets = root / "triplets.jsonl"
    triplets.write_text("".join(json.dumps(t) + "\n" for t in TRIPLETS))
    encoder_model = BertModel.from_pretrained(model)
    with torch.no_grad():
        for weight in encoder_model.parameters():
            if weight.dim() == 2:
                weight.mul_(10)
    shutil.copytree(model, root / "bert-dpr")
    encoder_model.save_pretrained(root / "bert-dpr")
    return {"model": model, "corpus": corpus, "vocabulary": vocabulary, "triplets": triplets,
            "dpr": root / "bert-dpr"}  # fmt: skip


def _arguments(files, out: Path, precision: str = "fp32", **changes) -> dict:
    return {
        "backbone": str(files["model"]),
        "corpora": [(str(files["corpus"]), ["text"])],
        "vocabulary": str(files["vocabulary"]),
        "output": str(out / "model"),
        "workdir": str(out / "work"),
        "settings": SETTINGS | changes,
        "precision": precision,
    }


def _curve(facts: dict, split: str = "train") -> torch.Tensor:
    rows = [row for row in facts["history"] if row["split"] == split]
    return torch.tensor(
        [[row["step"], row["mlm"], row["nsp"]] for row in rows], dtype=torch.float64
    )


def _weights(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(path / "model.safetensors")


def _assert_same_weights(actual: Path, expected: Path) -> None:
    """Same weights, but for the attention key biases: softmax ignores a shift common to all
    keys, so their true gradient is 0 and what they get is float noise, which Adam turns into
    updates of the learning rate's size and either sign."""
    actual_weights = _weights(actual)
    for name, tensor in _weights(expected).items():
        if not name.endswith("attention.self.key.bias"):
            torch.testing.assert_close(actual_weights[name], tensor, rtol=1e-3, atol=1e-5, msg=name)


@contextlib.contextmanager
def _deadline(seconds: int):
    def expire(signum, frame):
        raise TimeoutError(f"no result within {seconds} s: the launch hangs")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def one_process(files, tmp_path_factory) -> dict:
    """The reference: the same pretraining in this process (``output``: its model)."""
    out = tmp_path_factory.mktemp("one")
    return pretrain_job(_arguments(files, out), "cpu", 1, 1) | {"output": out / "model"}


def test_rows_split_the_global_batch():
    assert [Ranks(rank, 2).rows(4) for rank in (0, 1)] == [slice(0, 2), slice(2, 4)]


@pytest.mark.parametrize("micro", [None, 1], ids=["one-forward", "micro-batches"])
def test_two_gloo_ranks_pretrain_as_one_process(files, one_process, tmp_path, micro):
    # micro-batches: each rank runs its 2 rows as 2 micro-batches of 1, accumulating.
    with _deadline(DEADLINE_S):
        two = pretrain_job(_arguments(files, tmp_path, micro_batch_size=micro), "cpu", 2, 2)
    assert two["processes"] == 2 and one_process["processes"] == 1
    assert two["accumulation_steps"] == (1 if micro is None else 2)
    for split in ("train", "heldout"):
        expected, actual = _curve(one_process, split), _curve(two, split)
        assert actual[:, 0].tolist() == expected[:, 0].tolist()
        torch.testing.assert_close(actual, expected, rtol=RTOL, atol=0)
    # The losses moved: the curve compared is a training, not a constant.
    assert _curve(one_process)[-1, 1] < _curve(one_process)[0, 1] - 0.1
    _assert_same_weights(tmp_path / "model", one_process["output"])


def test_two_gloo_ranks_train_dpr_as_one_process(files, tmp_path):
    dpr = encoder("dpr")
    one = dpr.train(str(files["dpr"]), files["triplets"], tmp_path / "one", DPR_ENTRY, Job())
    with _deadline(DEADLINE_S):
        two = dpr.train(
            str(files["dpr"]), files["triplets"], tmp_path / "two", DPR_ENTRY,
            Job(processes=2, threads=2),
        )  # fmt: skip
    torch.testing.assert_close(
        torch.tensor(two["losses"]), torch.tensor(one["losses"]), rtol=RTOL, atol=0
    )
    assert one["losses"][-1] < one["losses"][0] - 0.1
    _assert_same_weights(tmp_path / "two", tmp_path / "one")


def test_two_gloo_ranks_with_micro_batches_train_dpr_as_one_process_and_resume(
    files, tmp_path, monkeypatch
):
    """Gradient caching on 2 ranks, micro-batches of 1 of each rank's 2 triplets: the training
    of one process on whole batches (within ``RTOL``; measured 4.6e-7 relative). Rank 1 dies
    after step 5; rank 0 has written step 4's checkpoint to the job's workdir, from which the
    launch started again resumes."""
    dpr = encoder("dpr")
    one = dpr.train(str(files["dpr"]), files["triplets"], tmp_path / "one", DPR_ENTRY, Job())
    work = tmp_path / "work"
    entry = DPR_ENTRY | {"micro_batch_size": 1, "checkpoint_every": 4, "workdir": str(work)}
    job = Job(processes=2, threads=2)
    monkeypatch.setenv(KILL_ENV, "1:5")
    with _deadline(DEADLINE_S), pytest.raises(HybridIRError, match="a rank of 2 failed or died"):
        dpr.train(str(files["dpr"]), files["triplets"], tmp_path / "two", entry, job)
    assert not (tmp_path / "two").exists()
    assert sorted(p.name for p in work.iterdir()) == ["step-0000004"]
    monkeypatch.delenv(KILL_ENV)
    with _deadline(DEADLINE_S):
        two = dpr.train(str(files["dpr"]), files["triplets"], tmp_path / "two", entry, job)
    assert two["resumed_from_step"] == 4 and two["settings"]["micro_batch_size"] == 1
    torch.testing.assert_close(
        torch.tensor(two["losses"]), torch.tensor(one["losses"]), rtol=RTOL, atol=0
    )
    _assert_same_weights(tmp_path / "two", tmp_path / "one")


def test_a_dead_rank_fails_the_launch_and_its_checkpoint_resumes_in_one_process(
    files, one_process, tmp_path, monkeypatch, capfd
):
    # Rank 1 dies after step 5's gradient exchange: rank 0 has written step 4's checkpoint.
    monkeypatch.setenv(KILL_ENV, "1:5")
    with _deadline(DEADLINE_S), pytest.raises(HybridIRError) as error:
        pretrain_job(_arguments(files, tmp_path), "cpu", 2, 2)
    message = str(error.value)
    assert message.startswith(
        "distributed training hybrid_ir.neural.pretrain:pretrain_files: torchrun exited with "
        "status 1: a rank of 2 failed or died"
    )
    assert "\n" not in message
    assert "SIGKILL" in capfd.readouterr().err
    assert not (tmp_path / "model").exists()
    assert sorted(p.name for p in (tmp_path / "work").iterdir()) == ["data", "step-0000004"]

    monkeypatch.delenv(KILL_ENV)
    resumed = pretrain_job(_arguments(files, tmp_path), "cpu", 1, 1)
    assert resumed["resumed_from_step"] == 4 and resumed["processes"] == 1
    for split in ("train", "heldout"):
        torch.testing.assert_close(
            _curve(resumed, split), _curve(one_process, split), rtol=RTOL, atol=0
        )


def test_accumulation_steps_split_each_process_share():
    assert accumulation_steps(240, 8, None, "math_models.pretraining") == 1
    assert accumulation_steps(240, 8, 10, "math_models.pretraining") == 3
    assert accumulation_steps(240, 8, 30, "math_models.pretraining") == 1
    assert accumulation_steps(16, 1, 4, "math_models.dpr") == 4
    with pytest.raises(ConfigError) as error:
        accumulation_steps(240, 8, 7, "math_models.pretraining")
    assert str(error.value) == (
        "config: math_models.pretraining.micro_batch_size: 7 does not divide the 30 examples "
        "each of 8 training process(es) takes of the global batch of 240; use one of "
        "[1, 2, 3, 5, 6, 10, 15, 30]"
    )
    for micro in (0, 16, 60):
        with pytest.raises(
            ConfigError, match=rf"^config: math_models\.colbert\.micro_batch_size: {micro} "
        ):
            accumulation_steps(16, 2, micro, "math_models.colbert")
    with pytest.raises(ConfigError, match=r"^config: math_models\.dpr\.batch_size: the global "
                       r"batch of 10 does not split"):  # fmt: skip
        accumulation_steps(10, 4, None, "math_models.dpr")


def test_a_global_batch_that_does_not_split_evenly_is_a_config_error(files, tmp_path):
    with pytest.raises(ConfigError, match=r"math_models\.pretraining\.batch_size: the global "):
        pretrain_job(_arguments(files, tmp_path, batch_size=3), "cpu", 2, 2)
    with pytest.raises(ConfigError, match=r"pretraining\.micro_batch_size: 3 does not divide"):
        pretrain_job(_arguments(files, tmp_path, micro_batch_size=3), "cpu", 2, 2)
    assert not (tmp_path / "work").exists()  # refused before the pairs are written
    entry = DPR_ENTRY | {"batch_size": 3}
    with pytest.raises(ConfigError, match=r"math_models\.dpr\.batch_size: .* over 2 training"):
        encoder("dpr").train(
            str(files["dpr"]), files["triplets"], tmp_path, entry, Job(processes=2)
        )
    # Found before torchrun starts, as for the batch.
    entry = DPR_ENTRY | {"micro_batch_size": 3}
    with pytest.raises(ConfigError, match=r"dpr\.micro_batch_size: 3 does not divide the 2 exa"):
        encoder("dpr").train(
            str(files["dpr"]), files["triplets"], tmp_path, entry, Job(processes=2)
        )


def test_bf16_autocast_trains_on_the_cpu(files, one_process, tmp_path):
    bf16 = pretrain_job(_arguments(files, tmp_path, "bf16"), "cpu", 1, 1)
    curve, reference = _curve(bf16), _curve(one_process)
    assert torch.isfinite(curve).all()
    # bfloat16 keeps 8 bits of mantissa: the first step's losses agree to about 1%.
    torch.testing.assert_close(curve[0], reference[0], rtol=0.05, atol=0)
    assert curve[-1, 1] < curve[0, 1] - 0.1
    assert bf16["settings"]["precision"] == "bf16"
    dpr = encoder("dpr").train(
        str(files["dpr"]), files["triplets"], tmp_path / "dpr", DPR_ENTRY | {"steps": 2},
        Job(precision="bf16"),
    )  # fmt: skip
    assert all(math.isfinite(loss) for loss in dpr["losses"])


@pytest.mark.gpu
def test_mlm_and_dpr_train_on_cuda_with_bf16(files, one_process, tmp_path):
    facts = pretrain_job(_arguments(files, tmp_path, "bf16", steps=2), "cuda", 1, 1)
    assert facts["settings"]["device"] == "cuda" and torch.isfinite(_curve(facts)).all()
    torch.testing.assert_close(_curve(facts)[0], _curve(one_process)[0], rtol=0.05, atol=0)
    dpr = encoder("dpr").train(
        str(files["dpr"]), files["triplets"], tmp_path / "dpr", DPR_ENTRY | {"steps": 2},
        Job("cuda", precision="bf16"),
    )  # fmt: skip
    assert dpr["settings"]["device"] == "cuda" and all(map(math.isfinite, dpr["losses"]))


@pytest.mark.gpu
@pytest.mark.skipif(
    torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs: data-parallel training over NCCL"
)
def test_two_nccl_ranks_pretrain_as_one_gpu(files, tmp_path):
    one = pretrain_job(_arguments(files, tmp_path / "one"), "cuda", 1, 1)
    with _deadline(DEADLINE_S):
        two = pretrain_job(_arguments(files, tmp_path / "two"), "cuda", 2, 2)
    torch.testing.assert_close(_curve(two), _curve(one), rtol=RTOL, atol=0)
