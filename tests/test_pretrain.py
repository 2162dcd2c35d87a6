"""MLM (+NSP) further pretraining: masking rules, sentence pairs and their files, vocabulary,
gradient accumulation, kill and resume."""

import hashlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from hybrid_ir.errors import ConfigError, HybridIRError
from hybrid_ir.neural.models import add_math_tokens, load_tokenizer, tokenizations_match
from hybrid_ir.neural.pretrain import (
    IGNORE,
    _micro_batches,
    _Order,
    mask_tokens,
    pretrain,
)
from hybrid_ir.neural.pretrain_data import (
    IS_NEXT,
    NOT_NEXT,
    TrainingData,
    mlm_documents,
    prepare_data,
    sentences,
)
from hybrid_ir.neural.pretrain_settings import PretrainSettings

DOCS = [
    [f"let x be {w} number." for w in ("prime", "the", "a")],
    ["prove the norm inequality.", "show the root of <x> <supscript> <2>.", "find the sum."],
    ["the integral of the function.", "let p be prime.", "find k and n."],
    ["the matrix norm.", "we show it.", "the value of q."],
    ["let y be the root.", "prove it for n.", "sum of k."],
]
MATH = ["<x>", "<supscript>", "<2>", "<A>"]
RTOL, ATOL = 1e-5, 1e-5
"""Micro-batches against one forward, dropout off: the same losses and updates up to the order
of floating-point sums. Measured over 12 steps of the tiny BERT in 4 micro-batches: losses
1.4e-7 relative, weights 8.2e-7 absolute (attention key biases aside: softmax ignores a shift
common to all keys, so their gradient is float noise, which Adam turns into steps of either
sign; they moved 2.7e-6). The tolerances leave a margin of 12x or more."""


def _settings(**changes):
    values = dict(steps=12, batch_size=4, lr=1e-3, max_length=32, seed=7, checkpoint_every=4,
                  eval_every=4, heldout=0.2)  # fmt: skip
    return PretrainSettings(**(values | changes))


def _data(directory: Path, settings: PretrainSettings, documents=DOCS) -> Path:
    digest = hashlib.sha256(json.dumps(documents).encode()).hexdigest()
    return prepare_data(directory, settings, digest, lambda: documents)


def run(model, out: Path, work: Path, settings: PretrainSettings, documents=DOCS) -> dict:
    """Pretrain on ``documents``, their pairs written to ``work/data`` as the workflow does."""
    data = _data(work / "data", settings, documents)
    return pretrain(str(model), data, MATH, out, work, settings)


def _pairs(data: Path, split: str = "train") -> list[tuple[str, str, int]]:
    opened = TrainingData(data)
    return list(zip(*opened.examples(split, range(opened.size(split))), strict=True))


def _masking(rule):
    ids = torch.full((400, 250), 7)
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = True
    settings = _settings(mask_rule=rule)
    masked, labels = mask_tokens(ids, special, 50, 4, settings, torch.Generator().manual_seed(1))
    chosen = labels != IGNORE
    return masked, labels, chosen, special


def test_masking_80_10_10():
    masked, labels, chosen, special = _masking("80/10/10")
    assert not chosen[special].any()
    assert abs(chosen.float().mean().item() * 250 / 249 - 0.15) < 0.005
    share = chosen.sum().item()
    as_mask = (masked[chosen] == 4).sum().item() / share
    kept = (masked[chosen] == 7).sum().item() / share
    assert abs(as_mask - 0.8) < 0.01 and abs(kept - (0.1 + 0.1 / 50)) < 0.01
    assert (labels[chosen] == 7).all()


def test_masking_80_20_never_draws_random_pieces():
    masked, _, chosen, _ = _masking("80/20")
    values = set(masked[chosen].unique().tolist())
    assert values == {4, 7}
    assert abs((masked[chosen] == 7).float().mean().item() - 0.2) < 0.01


def test_settings_are_checked():
    with pytest.raises(ConfigError, match="mask_rule"):
        _settings(mask_rule="90/10")
    with pytest.raises(ConfigError, match="steps and epochs"):
        _settings(epochs=1.0)
    with pytest.raises(ConfigError, match=r"^config: math_models\.pretraining\.pairs: 'next' is"):
        _settings(pairs="next")
    with pytest.raises(ConfigError, match=r"^config: math_models\.pretraining\.pair_window: 0"):
        _settings(pair_window=0)
    with pytest.raises(ConfigError, match=r"^config: math_models\.pretraining\.micro_batch_size"):
        _settings(micro_batch_size=0)


# The split and pairing of the code before pairs went to files, kept as the reference the files
# must reproduce draw for draw: the default configuration's model must not change.
def _reference_split(documents, heldout: float, seed: int):
    order = np.random.default_rng(seed).permutation(len(documents))
    cut = max(1, math.ceil(heldout * len(documents)))
    held = {int(index) for index in order[:cut]}
    train = [doc for index, doc in enumerate(documents) if index not in held]
    return train, [doc for index, doc in enumerate(documents) if index in held]


def _reference_pairs(documents, seed: int, nsp: bool = True):
    rng = np.random.default_rng(seed)
    owners = [(doc, index) for doc, text in enumerate(documents) for index in range(len(text))]
    pairs = []
    for doc, text in enumerate(documents):
        for index in range(len(text) - 1):
            if nsp and len(documents) > 1 and rng.random() < 0.5:
                other_doc, other = owners[int(rng.integers(len(owners)))]
                while other_doc == doc:
                    other_doc, other = owners[int(rng.integers(len(owners)))]
                pairs.append((text[index], documents[other_doc][other], NOT_NEXT))
            else:
                pairs.append((text[index], text[index + 1], IS_NEXT))
    return pairs


def _reference_indices(step: int, size: int, batch_size: int, seed: int) -> list[int]:
    indices: list[int] = []
    position = step * batch_size
    while len(indices) < batch_size:
        epoch, offset = divmod(position, size)
        order = np.random.default_rng([seed, epoch]).permutation(size)
        take = min(batch_size - len(indices), size - offset)
        indices.extend(int(i) for i in order[offset : offset + take])
        position += take
    return indices


# 0 to 11 sentences a document, empty and one-sentence documents included.
UNEVEN = [[f"d{d} s{s}." for s in range(d * 7 % 12)] for d in range(40)]


@pytest.mark.parametrize("nsp", [True, False])
def test_adjacent_pairs_are_those_drawn_before_pairs_went_to_files(tmp_path, nsp):
    settings = _settings(nsp=nsp, heldout=0.1, max_heldout_pairs=10)
    data = _data(tmp_path / "data", settings, UNEVEN)
    train, held = _reference_split(UNEVEN, 0.1, seed=7)
    assert _pairs(data) == _reference_pairs(train, 7, nsp)
    assert _pairs(data, "heldout") == _reference_pairs(held, 8, nsp)[:10]
    facts = TrainingData(data).facts
    assert facts["documents"] == {"train": len(train), "heldout": len(held)}
    assert facts["sentences"] == sum(map(len, UNEVEN))


def test_batch_order_is_the_per_step_draw_of_before():
    for size, batch_size in ((10, 4), (3, 8)):  # (3, 8): a batch spans three epochs
        order = _Order(size, batch_size, seed=3)
        for step in range(12):
            assert order.batch(step).tolist() == _reference_indices(step, size, batch_size, 3)


def test_adjacent_pairs_are_half_random_and_seeded(tmp_path):
    docs = [[f"d{d} s{s}." for s in range(30)] for d in range(20)]
    pairs = _pairs(_data(tmp_path / "a", _settings(), docs))
    assert pairs == _pairs(_data(tmp_path / "b", _settings(), docs))
    random_share = sum(label == NOT_NEXT for _, _, label in pairs) / len(pairs)
    assert 0.45 < random_share < 0.55
    for first, second, label in pairs:
        assert (first.split()[0] == second.split()[0]) == (label == IS_NEXT)
    no_nsp = _pairs(_data(tmp_path / "c", _settings(nsp=False), docs))
    assert all(label == IS_NEXT for _, _, label in no_nsp)


def _sentence_ids(segment: str) -> list[tuple[int, int]]:
    return [(int(d), int(s)) for d, s in re.findall(r"d(\d+) s(\d+)\.", segment)]


def test_pya0_pairs_walk_windows_of_one_document(tmp_path):
    docs = [[f"d{d} s{s}." for s in range(14)] for d in range(60)]
    settings = _settings(pairs="pya0", heldout=0.05)
    data = _data(tmp_path / "data", settings, docs)
    pairs = _pairs(data)
    assert pairs == _pairs(_data(tmp_path / "again", settings, docs))
    for first, second, label in pairs:
        a, b = _sentence_ids(first), _sentence_ids(second)
        assert first == " ".join(f"d{d} s{s}." for d, s in a)
        for segment in (a, b):
            doc, start = segment[0]
            # Up to 3 consecutive sentences of one document, cut at its end only.
            assert segment == [(doc, start + i) for i in range(min(3, 14 - start))]
        if label == IS_NEXT:
            assert b[0] == (a[0][0], a[0][1] + 3)
        else:
            assert a[0][0] != b[0][0]
    # 57 training documents of 14 sentences: 798 / (1.5 * 3) = 177 pairs, less the reads lost
    # where an is-next pair would span two documents.
    assert TrainingData(data).facts["sentences"] == 840
    assert 140 < len(pairs) <= 177
    is_next = sum(label == IS_NEXT for _, _, label in pairs) / len(pairs)
    assert 0.35 < is_next < 0.65
    no_nsp = _pairs(_data(tmp_path / "c", _settings(pairs="pya0", nsp=False), docs))
    assert all(label == IS_NEXT for _, _, label in no_nsp)


def test_pairs_are_written_once_and_again_for_other_inputs_or_settings(tiny_bert, tmp_path):
    settings = _settings()
    data = _data(tmp_path / "data", settings)
    digest = hashlib.sha256(json.dumps(DOCS).encode()).hexdigest()

    def unread():
        raise AssertionError("the documents were read again")

    assert prepare_data(data, settings, digest, unread) == data
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    other = _settings(heldout=0.4)
    with pytest.raises(HybridIRError, match=r"data: pairs made with .*'heldout': 0\.2"):
        pretrain(str(tiny_bert), data, MATH, tmp_path / "out", tmp_path / "work", other)
    _data(data, other)
    assert TrainingData(data).facts["documents"] == {"train": 3, "heldout": 2}
    _data(data, settings, DOCS[:4])
    assert TrainingData(data).facts["documents"] == {"train": 3, "heldout": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_heldout_split_and_documents(tmp_path):
    data = _data(tmp_path / "data", _settings(heldout=0.2, seed=1))
    assert TrainingData(data).facts["documents"] == {"train": 4, "heldout": 1}
    held = {text for pair in _pairs(data, "heldout") for text in pair[:2]}
    train = {text for pair in _pairs(data) for text in pair[:2]}
    assert held and not held & train
    assert sentences("One. Two?\nThree <.> four") == ["One.", "Two?", "Three <.> four"]
    corpus = tmp_path / "c.jsonl"
    rows = [{"id": "1", "title": "Q.", "text": "A one. A two."},
            {"id": "2", "title": "Q.", "text": "B."}]  # fmt: skip
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    documents = mlm_documents([(corpus, ["title", "text"])])
    assert list(documents) == [["Q.", "A one.", "A two."], ["B."]]


def test_math_tokens_keep_case_and_reload_identically(tiny_bert, tmp_path):
    tokenizer = load_tokenizer(tiny_bert)
    assert add_math_tokens(tokenizer, MATH + ["<a>"]) == 5
    ids = tokenizer("let <A> be <a> <x>")["input_ids"]
    assert len({ids[2], ids[4]}) == 2 and len(ids) == 7
    tokenizer.save_pretrained(tmp_path / "tok")
    texts = ["let <A> be <a>", "prove <x> <supscript> <2> now", "plain text"]
    assert tokenizations_match(tokenizer, load_tokenizer(tmp_path / "tok"), texts)


def _weights(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(path / "model.safetensors")


def test_pretraining_adds_heads_and_tokens(tiny_bert, tmp_path):
    facts = run(tiny_bert, tmp_path / "out", tmp_path / "work", _settings())
    assert facts["math_tokens_added"] == 4 and facts["embedding_rows_added"] == 4
    assert "cls.seq_relationship.weight" in facts["newly_initialised"]
    assert any(name.startswith("cls.predictions") for name in facts["newly_initialised"])
    held = [row for row in facts["history"] if row["split"] == "heldout"]
    assert [row["step"] for row in held] == [0, 4, 8, 12]
    saved = load_tokenizer(tmp_path / "out")
    assert "<supscript>" in saved.get_vocab()
    assert json.loads((tmp_path / "out" / "pretraining.json").read_text())["steps"] == 12


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import torch
    import hybrid_ir.neural.pretrain as module
    torch.set_num_threads({threads})
    sys.path.insert(0, {tests!r})
    from test_pretrain import _settings, run

    save = module._save_checkpoint

    def save_then_die(workdir, step, state):
        path = save(workdir, step, state)
        if step == 8:
            os.kill(os.getpid(), signal.SIGKILL)
        return path

    module._save_checkpoint = save_then_die
    run({model!r}, Path({out!r}), Path({work!r}), _settings(micro_batch_size={micro!r}))
    """
)


@pytest.mark.parametrize("micro", [None, 2])
def test_killed_pretraining_resumes_to_the_same_weights(tiny_bert, tmp_path, micro):
    # The tiny BERT has dropout: with micro-batches, each one's dropout is seeded too.
    out, work = tmp_path / "resumed", tmp_path / "work"
    # Byte for byte needs the same float sums on both sides: as many threads as this process
    # uses (under pytest-xdist an earlier test in the worker may have set them).
    script = KILLER.format(tests=str(Path(__file__).parent), model=str(tiny_bert),
                           out=str(out), work=str(work), micro=micro,
                           threads=torch.get_num_threads())  # fmt: skip
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=os.environ | {"PYTHONHASHSEED": "0"})  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not out.exists()
    assert sorted(p.name for p in work.iterdir()) == ["data", "step-0000004", "step-0000008"]

    settings = _settings(micro_batch_size=micro)
    facts = run(tiny_bert, out, work, settings)
    assert facts["resumed_from_step"] == 8
    straight = tmp_path / "straight"
    run(tiny_bert, straight, tmp_path / "work2", settings)
    resumed_weights, straight_weights = _weights(out), _weights(straight)
    assert resumed_weights.keys() == straight_weights.keys()
    for name, tensor in straight_weights.items():
        assert torch.equal(resumed_weights[name], tensor), name


@pytest.fixture(scope="module")
def still_bert(tiny_bert, tmp_path_factory) -> Path:
    """The tiny BERT without dropout, whose masks follow the micro-batches' shapes: runs in
    other micro-batches then differ by the order of floating-point sums alone."""
    path = tmp_path_factory.mktemp("still-bert") / "model"
    shutil.copytree(tiny_bert, path)
    config = json.loads((path / "config.json").read_text())
    config |= {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
    (path / "config.json").write_text(json.dumps(config))
    return path


def _curves(facts: dict) -> torch.Tensor:
    return torch.tensor(
        [[row["step"], row["mlm"], row["nsp"]] for row in facts["history"]], dtype=torch.float64
    )


def test_micro_batches_accumulate_to_the_whole_batch(still_bert, tmp_path):
    whole = run(still_bert, tmp_path / "whole", tmp_path / "w1", _settings())
    # A micro-batch of the whole share is the one-forward run, op for op.
    one = run(still_bert, tmp_path / "one", tmp_path / "w2", _settings(micro_batch_size=4))
    assert one["accumulation_steps"] == 1 and one["history"] == whole["history"]
    for name, tensor in _weights(tmp_path / "whole").items():
        assert torch.equal(_weights(tmp_path / "one")[name], tensor), name
    # 4 micro-batches of 1 row, and held-out chunks scored in micro-batches too. Losses and
    # weights differ by float summation order only: RTOL and ATOL say how much (module top).
    micro = run(still_bert, tmp_path / "micro", tmp_path / "w3", _settings(micro_batch_size=1))
    assert micro["accumulation_steps"] == 4
    assert [row["split"] for row in micro["history"]] == [row["split"] for row in whole["history"]]
    torch.testing.assert_close(_curves(micro), _curves(whole), rtol=RTOL, atol=0)
    assert _curves(whole)[-1, 1] < _curves(whole)[1, 1] - 0.1  # the curve compared moved
    expected = _weights(tmp_path / "whole")
    for name, tensor in _weights(tmp_path / "micro").items():
        if not name.endswith("attention.self.key.bias"):
            torch.testing.assert_close(tensor, expected[name], rtol=0, atol=ATOL, msg=name)


def test_micro_batches_drop_the_padding_they_do_not_need():
    attention = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0],
                              [1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])  # fmt: skip
    inputs = {"input_ids": torch.arange(24).reshape(4, 6), "attention_mask": attention}
    batch = (inputs, torch.full((4, 6), IGNORE), torch.arange(4))
    pieces = _micro_batches(batch, slice(0, 4), 2)
    assert [piece[0]["input_ids"].shape for piece in pieces] == [(2, 3), (2, 6)]
    assert [piece[1].shape for piece in pieces] == [(2, 3), (2, 6)]
    assert torch.equal(pieces[0][0]["input_ids"], torch.tensor([[0, 1, 2], [6, 7, 8]]))
    rank_pieces = _micro_batches(batch, slice(2, 4), 1)
    assert [piece[0]["attention_mask"].shape[1] for piece in rank_pieces] == [6, 4]
    assert [piece[2].tolist() for piece in rank_pieces] == [[2], [3]]


def test_checkpoint_of_other_settings_is_not_resumed(tiny_bert, tmp_path):
    work = tmp_path / "work"
    run(tiny_bert, tmp_path / "a", work, _settings(steps=6))
    facts = run(tiny_bert, tmp_path / "b", work, _settings(lr=5e-4))
    assert facts["resumed_from_step"] == 0


class _RunsCommand:
    """What an attacker would plant: unpickling it calls ``os.system``."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def _plant_zip_format(file: Path, payload) -> None:
    torch.save({"fingerprint": payload}, file)


def _plant_legacy_format(file: Path, payload) -> None:
    torch.save({"fingerprint": payload}, file, _use_new_zipfile_serialization=False)


@pytest.mark.parametrize("plant", [_plant_zip_format, _plant_legacy_format])
def test_checkpoint_that_would_run_code_is_refused_unrun(tiny_bert, tmp_path, plant):
    work, sentinel = tmp_path / "work", tmp_path / "SENTINEL"
    planted = work / "step-0000004" / "state.pt"
    planted.parent.mkdir(parents=True)
    plant(planted, _RunsCommand(f"touch {sentinel}"))
    with pytest.raises(HybridIRError) as error:
        run(tiny_bert, tmp_path / "out", work, _settings())
    message = str(error.value)
    assert message.startswith(f"{planted}: refusing to load this checkpoint")
    assert "\n" not in message
    assert not sentinel.exists()
    assert not (tmp_path / "out").exists()


def test_unreadable_checkpoint_is_one_line_naming_the_file(tiny_bert, tmp_path):
    work = tmp_path / "work"
    truncated = work / "step-0000004" / "state.pt"
    truncated.parent.mkdir(parents=True)
    truncated.write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(HybridIRError, match=r"state\.pt: cannot read this checkpoint \(") as error:
        run(tiny_bert, tmp_path / "out", work, _settings())
    assert str(truncated) in str(error.value) and "\n" not in str(error.value)


def test_a_roberta_backbone_is_pretrained_with_mlm_only(tmp_path):
    from test_mlm_rerank import make_tiny_roberta
    from transformers import AutoModel

    roberta = make_tiny_roberta(tmp_path / "roberta")
    with pytest.raises(ConfigError, match="nsp: .* RobertaForMaskedLM, which has no next-sentence"):
        run(roberta, tmp_path / "bad", tmp_path / "work0", _settings())
    settings = _settings(nsp=False, steps=4)
    facts = run(roberta, tmp_path / "out", tmp_path / "work", settings)
    assert facts["math_tokens_added"] == 4 and facts["newly_initialised"] == []
    held = [row for row in facts["history"] if row["split"] == "heldout"]
    assert [row["step"] for row in held] == [0, 4] and all(row["nsp"] == 0 for row in held)
    before, after = (AutoModel.from_pretrained(p) for p in (roberta, tmp_path / "out"))
    assert type(after).__name__ == "RobertaModel"
    assert after.get_input_embeddings().weight.shape[0] == len(load_tokenizer(roberta)) + 4
    moved = after.encoder.layer[0].attention.self.query.weight
    assert not torch.equal(moved, before.encoder.layer[0].attention.self.query.weight)
