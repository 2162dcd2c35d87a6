"""Tiny random checkpoints standing in for every hub model the paper configuration names.

Each is of the family and in the on-disk layout of the model it replaces, so that the code
paths a real model takes are the ones exercised: BERT checkpoints with the pretraining heads
(bert-base-uncased, SciBERT, SPECTER2 base), RoBERTa with a byte-level BPE tokenizer
(roberta-base, PSU's MLM), SPECTER2's bottleneck adapters as the ``adapters`` library saves
them, and approach0's released DPR (BERT with its pooler under ``bert``) and ColBERT (BERT and a
linear map to 128 dimensions, as colbert's ``HF_ColBERT`` names its weights).
"""

from __future__ import annotations

import json
from pathlib import Path

HIDDEN, LAYERS, HEADS, FFN = 32, 2, 2, 64
POSITIONS = 520
"""Room for the paper's 512-token settings."""
COLBERT_DIM = 128

_CHARACTERS = "abcdefghijklmnopqrstuvwxyz0123456789"
_SYMBOLS = "<>{}()[]^_+-=.,:;!?$\\|/*&'\"%#@~`"


def _wordpiece_vocabulary(words: list[str]) -> list[str]:
    """Every character alone and as a continuation piece, so that no word becomes [UNK]."""
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *_CHARACTERS, *_SYMBOLS]
    pieces += [f"##{c}" for c in _CHARACTERS + _SYMBOLS]
    return list(dict.fromkeys(pieces + words))


def _bert_config(vocab_size: int):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=vocab_size,
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=POSITIONS,
        initializer_range=0.5,
    )


def _bert_tokenizer(path: Path, words: list[str]):
    from transformers import BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(_wordpiece_vocabulary(words)) + "\n")
    tokenizer = BertTokenizerFast(vocab=str(path / "vocab.txt"), do_lower_case=True)
    tokenizer.save_pretrained(path)
    return tokenizer


def write_bert(path: Path, words: list[str], seed: int) -> Path:
    """A BERT saved as ``BertForPreTraining`` (MLM and NSP heads), as Google's checkpoints are."""
    import torch
    from transformers import BertForPreTraining

    tokenizer = _bert_tokenizer(path, words)
    torch.manual_seed(seed)
    BertForPreTraining(_bert_config(len(tokenizer))).save_pretrained(path)
    return path


def write_roberta(path: Path, words: list[str], seed: int) -> Path:
    """A RoBERTa with the MLM head and a byte-level BPE trained on ``words``."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaForMaskedLM, RobertaTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    trainer = ByteLevelBPETokenizer()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    trainer.train_from_iterator([" ".join(words)] * 4, vocab_size=600, special_tokens=specials)
    trainer.save_model(str(path))
    vocabulary = json.loads((path / "vocab.json").read_text(encoding="utf-8"))
    lines = (path / "merges.txt").read_text(encoding="utf-8").splitlines()[1:]  # after #version
    merges = [tuple(line.split()) for line in lines if line]
    # transformers 5 ignores vocab_file/merges_file (every word would be <unk>): pass them.
    tokenizer = RobertaTokenizerFast(vocab=vocabulary, merges=merges)
    tokenizer.save_pretrained(path)
    torch.manual_seed(seed)
    config = RobertaConfig(
        vocab_size=len(tokenizer),
        hidden_size=HIDDEN,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        intermediate_size=FFN,
        max_position_embeddings=POSITIONS + 2,  # RoBERTa's positions start after the padding id
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    RobertaForMaskedLM(config).save_pretrained(path)
    return path


def write_pya0_dpr(path: Path, words: list[str], seed: int) -> Path:
    """pya0's DPR encoder as its ARQMath-3 models are saved: BERT with its pooler under ``bert``."""
    import torch
    from transformers import BertModel, BertPreTrainedModel

    class DprEncoder(BertPreTrainedModel):
        def __init__(self, config):
            super().__init__(config)
            self.bert = BertModel(config, add_pooling_layer=True)
            self.post_init()

    tokenizer = _bert_tokenizer(path, words)
    torch.manual_seed(seed)
    DprEncoder(_bert_config(len(tokenizer))).save_pretrained(path)
    return path


def write_colbert(path: Path, words: list[str], seed: int) -> Path:
    """A ColBERT checkpoint with colbert's weight names: ``bert.*`` and ``linear.weight``."""
    import torch
    from transformers import BertModel, BertPreTrainedModel

    class ColBERT(BertPreTrainedModel):
        def __init__(self, config):
            super().__init__(config)
            self.bert = BertModel(config, add_pooling_layer=False)
            self.linear = torch.nn.Linear(config.hidden_size, COLBERT_DIM, bias=False)
            self.post_init()

    tokenizer = _bert_tokenizer(path, words)
    torch.manual_seed(seed)
    ColBERT(_bert_config(len(tokenizer))).save_pretrained(path)
    return path


def write_specter2_adapter(path: Path, name: str, seed: int) -> Path:
    """A bottleneck adapter for :func:`write_bert`'s model, as ``save_adapter`` writes it."""
    from test_adapters import write_adapter

    return write_adapter(path, name=name, seed=seed, hidden=HIDDEN, layers=LAYERS)


WRITERS = {
    "bert-base-uncased": lambda path, words: write_bert(path, words, seed=1),
    "allenai/scibert_scivocab_uncased": lambda path, words: write_bert(path, words, seed=2),
    "allenai/specter2_base": lambda path, words: write_bert(path, words, seed=3),
    "roberta-base": lambda path, words: write_roberta(path, words, seed=4),
    "shauryr/arqmath-roberta-base-1.5M": lambda path, words: write_roberta(path, words, seed=5),
    "approach0/dpr-bertnsp-220": lambda path, words: write_pya0_dpr(path, words, seed=6),
    "approach0/colbert-bertnsp-600": lambda path, words: write_colbert(path, words, seed=7),
    "allenai/specter2": lambda path, words: write_specter2_adapter(path, "[PRX]", seed=8),
    "allenai/specter2_adhoc_query": lambda path, words: write_specter2_adapter(
        path, "[ADHOC_QRY]", seed=9
    ),
}
"""A writer for each hub id of configs/paper.yaml, called with a directory and the words the
stand-in collections use (whole words in the vocabulary make the tokenizers' work realistic)."""


def write_models(root: Path, words: list[str]) -> dict[str, Path]:
    """Every stand-in model under ``root``, by hub id."""
    return {model: write(root / model, words) for model, write in WRITERS.items()}
