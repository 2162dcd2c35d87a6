"""MLM (+NSP) further pretraining: masking rules, sentence pairs, vocabulary, kill and resume."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from hybrid_ir.errors import ConfigError, HybridIRError
from hybrid_ir.neural.models import add_math_tokens, load_tokenizer, tokenizations_match
from hybrid_ir.neural.pretrain import (
    IGNORE,
    IS_NEXT,
    NOT_NEXT,
    PretrainSettings,
    mask_tokens,
    mlm_documents,
    pretrain,
    sentence_pairs,
    sentences,
    split_documents,
)

DOCS = [
    [f"let x be {w} number." for w in ("prime", "the", "a")],
    ["prove the norm inequality.", "show the root of <x> <supscript> <2>.", "find the sum."],
    ["the integral of the function.", "let p be prime.", "find k and n."],
    ["the matrix norm.", "we show it.", "the value of q."],
    ["let y be the root.", "prove it for n.", "sum of k."],
]
MATH = ["<x>", "<supscript>", "<2>", "<A>"]


def _settings(**changes):
    values = dict(steps=12, batch_size=4, lr=1e-3, max_length=32, seed=7, checkpoint_every=4,
                  eval_every=4, heldout=0.2)  # fmt: skip
    return PretrainSettings(**(values | changes))


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


def test_sentence_pairs_are_half_random_and_seeded():
    docs = [[f"d{d} s{s}." for s in range(30)] for d in range(20)]
    pairs = sentence_pairs(docs, seed=3)
    assert pairs == sentence_pairs(docs, seed=3)
    random_share = sum(p.label == NOT_NEXT for p in pairs) / len(pairs)
    assert 0.45 < random_share < 0.55
    for pair in pairs:
        doc_a, doc_b = pair.first.split()[0], pair.second.split()[0]
        assert (doc_a == doc_b) == (pair.label == IS_NEXT)
    assert all(p.label == IS_NEXT for p in sentence_pairs(docs, seed=3, nsp=False))


def test_heldout_split_and_documents(tmp_path):
    train, held = split_documents(DOCS, 0.2, seed=1)
    assert len(held) == 1 and len(train) == 4 and held[0] not in train
    assert sentences("One. Two?\nThree <.> four") == ["One.", "Two?", "Three <.> four"]
    corpus = tmp_path / "c.jsonl"
    rows = [{"id": "1", "title": "Q.", "text": "A one. A two."},
            {"id": "2", "title": "Q.", "text": "B."}]  # fmt: skip
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert mlm_documents([(corpus, ["title", "text"])]) == [["Q.", "A one.", "A two."], ["B."]]


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
    facts = pretrain(str(tiny_bert), DOCS, MATH, tmp_path / "out", tmp_path / "work", _settings())
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
    import hybrid_ir.neural.pretrain as module
    sys.path.insert(0, {tests!r})
    from test_pretrain import DOCS, MATH, _settings

    save = module._save_checkpoint

    def save_then_die(workdir, step, state):
        path = save(workdir, step, state)
        if step == 8:
            os.kill(os.getpid(), signal.SIGKILL)
        return path

    module._save_checkpoint = save_then_die
    module.pretrain({model!r}, DOCS, MATH, Path({out!r}), Path({work!r}), _settings())
    """
)


def test_killed_pretraining_resumes_to_the_same_weights(tiny_bert, tmp_path):
    out, work = tmp_path / "resumed", tmp_path / "work"
    script = KILLER.format(tests=str(Path(__file__).parent), model=str(tiny_bert),
                           out=str(out), work=str(work))  # fmt: skip
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=os.environ | {"PYTHONHASHSEED": "0"})  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not out.exists()
    assert sorted(p.name for p in work.iterdir()) == ["step-0000004", "step-0000008"]

    facts = pretrain(str(tiny_bert), DOCS, MATH, out, work, _settings())
    assert facts["resumed_from_step"] == 8
    straight = tmp_path / "straight"
    pretrain(str(tiny_bert), DOCS, MATH, straight, tmp_path / "work2", _settings())
    resumed_weights, straight_weights = _weights(out), _weights(straight)
    assert resumed_weights.keys() == straight_weights.keys()
    for name, tensor in straight_weights.items():
        assert torch.equal(resumed_weights[name], tensor), name


def test_checkpoint_of_other_settings_is_not_resumed(tiny_bert, tmp_path):
    work = tmp_path / "work"
    pretrain(str(tiny_bert), DOCS, MATH, tmp_path / "a", work, _settings(steps=6))
    facts = pretrain(str(tiny_bert), DOCS, MATH, tmp_path / "b", work, _settings(lr=5e-4))
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
        pretrain(str(tiny_bert), DOCS, MATH, tmp_path / "out", work, _settings())
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
        pretrain(str(tiny_bert), DOCS, MATH, tmp_path / "out", work, _settings())
    assert str(truncated) in str(error.value) and "\n" not in str(error.value)


def test_a_roberta_backbone_is_pretrained_with_mlm_only(tmp_path):
    from test_mlm_rerank import make_tiny_roberta
    from transformers import AutoModel

    roberta = make_tiny_roberta(tmp_path / "roberta")
    with pytest.raises(ConfigError, match="nsp: .* RobertaForMaskedLM, which has no next-sentence"):
        pretrain(str(roberta), DOCS, MATH, tmp_path / "bad", tmp_path / "work0", _settings())
    settings = _settings(nsp=False, steps=4)
    facts = pretrain(str(roberta), DOCS, MATH, tmp_path / "out", tmp_path / "work", settings)
    assert facts["math_tokens_added"] == 4 and facts["newly_initialised"] == []
    held = [row for row in facts["history"] if row["split"] == "heldout"]
    assert [row["step"] for row in held] == [0, 4] and all(row["nsp"] == 0 for row in held)
    before, after = (AutoModel.from_pretrained(p) for p in (roberta, tmp_path / "out"))
    assert type(after).__name__ == "RobertaModel"
    assert after.get_input_embeddings().weight.shape[0] == len(load_tokenizer(roberta)) + 4
    moved = after.encoder.layer[0].attention.self.query.weight
    assert not torch.equal(moved, before.encoder.layer[0].attention.self.query.weight)
