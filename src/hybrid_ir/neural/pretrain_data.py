"""The sentence pairs of MLM (+NSP) further pretraining, made once and read by every rank
(paper 000, §3.2; :mod:`hybrid_ir.neural.pretrain` says how pairs are made and used): the
corpus split into sentences and written as one UTF-8 file with int64 offsets, each split's
pairs as int64 rows (the sentence ranges of both segments and the label), and a digest of the
inputs, settings and this module's code by which a later run reuses them. Ranks map the files
and read only the rows of their batches."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import mmap
import os
import re
import time
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hybrid_ir.data.formats import atomic_directory, read_records
from hybrid_ir.errors import ConfigError, HybridIRError

IS_NEXT, NOT_NEXT = 0, 1  # transformers' next_sentence_label convention

if TYPE_CHECKING:
    from hybrid_ir.neural.pretrain_settings import PretrainSettings

logger = logging.getLogger(__name__)


SPLITS = ("train", "heldout")


_SENTENCE_END = re.compile(r"(?<=[.?!])\s+|\n+")


_DATA_SETTINGS = ("seed", "heldout", "max_heldout_pairs", "nsp", "pairs", "pair_window")


_ROW = 5  # a pair's row: first segment's sentences [start, end), second's, label


_WRITE_BUFFER = 1 << 20  # values held before a data file is written to


def sentences(text: str) -> list[str]:
    return [piece.strip() for piece in _SENTENCE_END.split(text) if piece and piece.strip()]


class _Sentences:
    """The sentences of some documents (a split), numbered in document order as one sequence."""

    def __init__(self, bounds: np.ndarray, documents: np.ndarray):
        self.first = bounds[documents]
        self.end = bounds[documents + 1]
        self.starts = np.concatenate([[0], np.cumsum(self.end - self.first)])
        self.total = int(self.starts[-1])

    def __len__(self) -> int:
        return len(self.first)

    def locate(self, number: int) -> tuple[int, int]:
        """(document in the split, sentence id in the corpus) of the split's sentence."""
        document = int(np.searchsorted(self.starts, number, side="right")) - 1
        return document, int(self.first[document] + number - self.starts[document])

    def other(self, document: int, rng) -> tuple[int, int]:
        """A random sentence of another document than ``document``."""
        other, sentence = self.locate(int(rng.integers(self.total)))
        while other == document:
            other, sentence = self.locate(int(rng.integers(self.total)))
        return other, sentence


def _adjacent_pairs(split: _Sentences, rng, random_seconds: bool) -> Iterator[tuple[int, ...]]:
    for document in range(len(split)):
        for first in range(int(split.first[document]), int(split.end[document]) - 1):
            if random_seconds and rng.random() < 0.5:
                _, second = split.other(document, rng)
                yield first, first + 1, second, second + 1, NOT_NEXT
            else:
                yield first, first + 1, first + 1, first + 2, IS_NEXT


def _pya0_pairs(
    split: _Sentences, rng, random_seconds: bool, window: int
) -> Iterator[tuple[int, ...]]:
    def segment(document: int, sentence: int) -> tuple[int, int]:
        return sentence, min(sentence + window, int(split.end[document]))

    pointer = 0
    while pointer < split.total:
        is_next = not random_seconds or rng.random() < 0.5
        # As pya0 does, an is-next pair whose reads lie in two documents is read again further
        # on, with the same label: the label's odds stay 1/2 per pair.
        while pointer < split.total:
            document, sentence = split.locate(pointer)
            pointer += window
            if not is_next:
                other = split.other(document, rng)
                yield *segment(document, sentence), *segment(*other), NOT_NEXT
                break
            if pointer < split.total:
                other = split.locate(pointer)
                pointer += window
                if other[0] == document:
                    yield *segment(document, sentence), *segment(*other), IS_NEXT
                    break


def _pairs(split: _Sentences, seed: int, settings: PretrainSettings) -> Iterator[tuple[int, ...]]:
    """The pair rows of a split, drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    random_seconds = settings.nsp and len(split) > 1
    if settings.pairs == "adjacent":
        return _adjacent_pairs(split, rng, random_seconds)
    return _pya0_pairs(split, rng, random_seconds, settings.pair_window)


class _Int64File:
    """int64 values appended to a raw file through a bounded buffer: written as they come, a
    corpus's offsets and pairs never have to fit in memory."""

    def __init__(self, path: Path):
        self.handle = open(path, "wb")
        self.buffer = array("q")
        self.count = 0

    def extend(self, values: Iterable[int]) -> None:
        self.buffer.extend(values)
        if len(self.buffer) >= _WRITE_BUFFER:
            self._flush()

    def _flush(self) -> None:
        self.buffer.tofile(self.handle)
        self.count += len(self.buffer)
        del self.buffer[:]

    def __enter__(self) -> _Int64File:
        return self

    def __exit__(self, *failure) -> None:
        self._flush()
        self.handle.close()


def _write_data(
    directory: Path, documents: Iterable[list[str]], settings: PretrainSettings
) -> dict:
    """Write the sentences and both splits' pairs of ``documents``; return their counts."""
    bounds = array("q", [0])  # document d's sentences are [bounds[d], bounds[d + 1])
    end = 0
    with (
        open(directory / "sentences.utf8", "wb") as text,
        _Int64File(directory / "offsets.int64") as offsets,
    ):
        offsets.extend((0,))
        for document in documents:
            for sentence in document:
                encoded = sentence.encode("utf-8", "surrogatepass")
                text.write(encoded)
                end += len(encoded)
                offsets.extend((end,))
            bounds.append(bounds[-1] + len(document))
    starts = np.frombuffer(bounds, dtype=np.int64)
    count = len(starts) - 1
    order = np.random.default_rng(settings.seed).permutation(count)
    held = np.zeros(count, dtype=bool)
    held[order[: max(1, math.ceil(settings.heldout * count))]] = True
    documents_of = {"train": np.flatnonzero(~held), "heldout": np.flatnonzero(held)}
    seeds = {"train": settings.seed, "heldout": settings.seed + 1}
    limits = {"train": None, "heldout": settings.max_heldout_pairs}
    pairs = {}
    for split in SPLITS:
        rows = _pairs(_Sentences(starts, documents_of[split]), seeds[split], settings)
        with _Int64File(directory / f"{split}-pairs.int64") as out:
            for row in islice(rows, limits[split]):
                out.extend(row)
        pairs[split] = out.count // _ROW
    if not pairs["train"] or not pairs["heldout"]:
        raise ConfigError(
            f"pretraining needs sentence pairs in both splits; got {pairs['train']} training "
            f"and {pairs['heldout']} held-out pairs ({settings.pairs} pairs) from {count} "
            "documents"
        )
    return {
        "documents": {split: len(documents_of[split]) for split in SPLITS},
        "sentences": int(starts[-1]),
        "pairs": pairs,
    }


def _data_settings(settings: PretrainSettings) -> dict:
    return {key: getattr(settings, key) for key in _DATA_SETTINGS}


def prepare_data(
    directory: Path,
    settings: PretrainSettings,
    inputs: str,
    documents: Callable[[], Iterable[list[str]]],
) -> Path:
    """Write the training data of ``documents()`` (lists of sentences) to ``directory``, or
    keep what is there if made from the same ``inputs`` (a digest of what ``documents`` yields),
    data settings and code; the files are written through a temporary sibling."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(json.dumps([inputs, _data_settings(settings)]).encode())
    fingerprint = digest.hexdigest()[:16]
    try:
        found = json.loads((directory / "data.json").read_text()).get("fingerprint")
    except (OSError, ValueError):
        found = None
    if found == fingerprint:
        logger.info("reusing the pretraining pairs in %s", directory)
        return directory
    began = time.perf_counter()
    with atomic_directory(directory) as staging:
        staging.mkdir()
        facts = _write_data(staging, documents(), settings)
        facts |= {"fingerprint": fingerprint, "settings": _data_settings(settings)}
        (staging / "data.json").write_text(json.dumps(facts, indent=1) + "\n")
    logger.info(
        "wrote %d sentences, %s pairs to %s in %.1f s",
        facts["sentences"],
        facts["pairs"],
        directory,
        time.perf_counter() - began,
    )
    return directory


def corpus_data(
    corpora: Sequence[tuple[str | Path, Sequence[str]]],
    directory: Path,
    settings: PretrainSettings,
) -> Path:
    """:func:`prepare_data` of pre-tokenized ``corpora`` (pairs of a file and its fields),
    identified by the files' contents."""
    digest = hashlib.blake2b()
    for path, fields in corpora:
        digest.update(json.dumps([list(fields), os.path.getsize(path)]).encode())
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return prepare_data(directory, settings, digest.hexdigest(), lambda: mlm_documents(corpora))


def _map(path: Path) -> mmap.mmap:
    """``path`` mapped read-only for random reads: a batch's rows lie anywhere in the files, and
    the kernel's read-ahead would read (and keep resident) far more than a row around each."""
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    mapped.madvise(mmap.MADV_RANDOM)
    return mapped


class TrainingData:
    """The files :func:`prepare_data` wrote, memory-mapped: reading a batch reads its rows and
    their sentences, not the corpus."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.facts = json.loads((directory / "data.json").read_text())
        self.offsets = np.frombuffer(_map(directory / "offsets.int64"), dtype=np.int64)
        self.text = _map(directory / "sentences.utf8")
        self.pairs = {
            split: np.frombuffer(_map(directory / f"{split}-pairs.int64"), dtype=np.int64).reshape(
                -1, _ROW
            )
            for split in SPLITS
        }

    def check(self, settings: PretrainSettings) -> None:
        """Fail where these pairs were made with other data settings than ``settings``."""
        if self.facts["settings"] != _data_settings(settings):
            raise HybridIRError(
                f"{self.directory}: pairs made with {self.facts['settings']}, but the training "
                f"settings say {_data_settings(settings)}; prepare the data again"
            )

    def size(self, split: str) -> int:
        return len(self.pairs[split])

    def segment(self, start: int, end: int) -> str:
        """Sentences ``start`` to ``end`` (exclusive) joined by a space."""
        bounds = self.offsets[start : end + 1].tolist()
        return " ".join(
            self.text[a:b].decode("utf-8", "surrogatepass")
            for a, b in zip(bounds, bounds[1:], strict=False)
        )

    def examples(self, split: str, indices) -> tuple[list[str], list[str], list[int]]:
        """(first segments, second segments, labels) of the pairs ``indices`` of ``split``."""
        rows = self.pairs[split][np.asarray(indices, dtype=np.int64)].tolist()
        return (
            [self.segment(row[0], row[1]) for row in rows],
            [self.segment(row[2], row[3]) for row in rows],
            [row[4] for row in rows],
        )


def mlm_documents(corpora: Sequence[tuple[str | Path, Sequence[str]]]) -> Iterator[list[str]]:
    """Sentence lists from pre-tokenized corpora, read as they are needed: one document per
    record, made of its ``fields``; a field value already used (a thread's question, repeated
    with every answer) is not used again. Used values are remembered by 16-byte digests: their
    text would be the corpus again."""

    seen: set[bytes] = set()
    for path, fields in corpora:
        for record in read_records(path):
            parts = []
            for name in fields:
                value = record.get(name)
                if not isinstance(value, str) or not value.strip():
                    continue
                key = hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=16)
                if key.digest() not in seen:
                    seen.add(key.digest())
                    parts.extend(sentences(value))
            if parts:
                yield parts
