"""Dense vectors of a collection on disk in shards, encoded from a stream of passages.

A collection of millions of passages does not fit in memory as texts, tokens or vectors, so an
index is built from the corpus JSON Lines as they are read: ``window`` passages at a time are
encoded (the encoder sorts them by length and runs ``batch_size`` at a time), and the vectors
go to shards of at most ``shard_size`` rows, each its own file (a faiss index or an ``.npy``
matrix) beside a JSON list of its doc ids. Memory is bounded by one window's texts and vectors
plus one shard, whatever the collection's size.

Windows, not shards, decide each vector's bits: an encoder pads a batch to its longest text, and
padding changes the last float bits, so the same window (and batch size and threads) gives the
same vectors however the shards are cut. A collection of at most one window is encoded exactly
as one call over all of it.

``manifest.json`` is written last and lists every shard with its files' sizes: an index without
one did not finish, and a shard file whose size differs was truncated or replaced; readers refuse
both with the index's path, never a partial result.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hybrid_ir.errors import ConfigError, InputFormatError

LOGGER = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.json"
SHARD_SIZE = 100_000
"""Vectors per shard: 300 MiB of 768-dimensional float32 vectors."""
ENCODE_WINDOW = 16_384
"""Passages encoded per call: long enough for length-sorted batches to waste little padding,
short enough that their texts and tokens stay well under a GiB."""

Encode = Callable[[Sequence[str]], np.ndarray]
"""Texts -> a ``(len(texts), dimension)`` float32 matrix."""
Save = Callable[[np.ndarray, Path], None]
"""Writes one shard's vectors to the path."""


def check_sizes(shard_size: int, window: int) -> None:
    if shard_size < 1:
        raise ConfigError(f"config: shard_size: must be >= 1, got {shard_size!r}")
    if window < 1:
        raise ConfigError(f"config: encode_window: must be >= 1, got {window!r}")


class ShardWriter:
    """Collects vectors and writes a shard each time ``shard_size`` of them are held; the
    manifest is written by :meth:`close`, after the last shard."""

    def __init__(self, directory: Path, shard_size: int, suffix: str, save: Save):
        check_sizes(shard_size, 1)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.shard_size = shard_size
        self.suffix = suffix
        self.save = save
        self.shards: list[dict] = []
        self.documents = 0
        self.dimension: int | None = None
        self._ids: list[str] = []
        self._vectors: list[np.ndarray] = []

    @property
    def buffered(self) -> int:
        """Vectors held and not yet written."""
        return len(self._ids)

    def add(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(ids):
            raise ValueError(f"{len(ids)} ids for vectors of shape {matrix.shape}")
        if self.dimension is None:
            self.dimension = int(matrix.shape[1])
        start = 0
        while start < len(ids):
            take = min(self.shard_size - self.buffered, len(ids) - start)
            self._ids.extend(ids[start : start + take])
            self._vectors.append(matrix[start : start + take])
            start += take
            if self.buffered == self.shard_size:
                self._flush()

    def _flush(self) -> None:
        name = f"shard-{len(self.shards):05d}"
        vectors = np.concatenate(self._vectors)
        self.save(vectors, self.directory / f"{name}{self.suffix}")
        ids_file = self.directory / f"{name}.ids.json"
        ids_file.write_text(json.dumps(self._ids) + "\n", encoding="utf-8")
        files = [f"{name}{self.suffix}", ids_file.name]
        self.shards.append(
            {
                "name": name,
                "documents": len(self._ids),
                "bytes": {file: (self.directory / file).stat().st_size for file in files},
            }
        )
        self.documents += len(self._ids)
        self._ids, self._vectors = [], []

    def close(self) -> dict:
        """Write the last shard and the manifest; return the manifest."""
        if self._ids:
            self._flush()
        manifest = {
            "format": self.suffix,
            "documents": self.documents,
            "dimension": self.dimension,
            "shard_size": self.shard_size,
            "shards": self.shards,
        }
        (self.directory / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1) + "\n")
        return manifest


def encode_to_shards(
    passages: Mapping[str, str] | Iterable[tuple[str, str]],
    encode: Encode,
    writer: ShardWriter,
    window: int = ENCODE_WINDOW,
    source: str | Path = "corpus",
) -> dict:
    """Encode ``(doc id, text)`` pairs (or a doc id -> text mapping) ``window`` at a time into
    ``writer``; return its manifest. A doc id seen twice is an error naming ``source``: an
    index maps ids to rows."""
    check_sizes(writer.shard_size, window)
    seen: set[str] = set()
    ids: list[str] = []
    texts: list[str] = []

    def flush() -> None:
        vectors = encode(texts)
        writer.add(ids, vectors)
        LOGGER.info("encoded %d passages", writer.documents + writer.buffered)
        ids.clear()
        texts.clear()

    pairs = passages.items() if isinstance(passages, Mapping) else passages
    for doc_id, text in pairs:
        if doc_id in seen:
            raise InputFormatError(source, None, f"document id {doc_id!r} appears twice")
        seen.add(doc_id)
        ids.append(doc_id)
        texts.append(text)
        if len(ids) == window:
            flush()
    if ids:
        flush()
    return writer.close()


@dataclass(frozen=True)
class Shard:
    ids: list[str]
    path: Path
    """The vectors' file (faiss index or ``.npy``)."""
    offset: int
    """Rows in the shards before this one."""


def read_manifest(directory: str | Path, suffix: str) -> dict:
    """The manifest of a complete index, its shard files checked against it."""
    directory = Path(directory)
    path = directory / MANIFEST_FILE
    if not path.is_file():
        raise InputFormatError(
            directory,
            None,
            f"no {MANIFEST_FILE}: not a complete sharded index (its build did not finish, or it "
            "predates sharding); rebuild it",
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        shards, fmt = manifest["shards"], manifest["format"]
    except (ValueError, KeyError, TypeError) as error:
        raise InputFormatError(path, None, f"not an index manifest: {error}") from None
    if fmt != suffix:
        raise InputFormatError(path, None, f"an index of {fmt} shards, expected {suffix}")
    for shard in shards:
        for name, size in shard["bytes"].items():
            file = directory / name
            actual = file.stat().st_size if file.is_file() else None
            if actual != size:
                found = "missing" if actual is None else f"{actual} bytes"
                raise InputFormatError(
                    file,
                    None,
                    f"{found}, the index manifest says {size} bytes: truncated or replaced; "
                    f"rebuild the index {directory}",
                )
    return manifest


def read_shards(directory: str | Path, suffix: str) -> Iterator[Shard]:
    """Each shard of a complete index in order, its ids loaded (its vectors left to the caller,
    one shard at a time)."""
    directory = Path(directory)
    offset = 0
    for shard in read_manifest(directory, suffix)["shards"]:
        ids_file = directory / f"{shard['name']}.ids.json"
        ids = json.loads(ids_file.read_text(encoding="utf-8"))
        if len(ids) != shard["documents"]:
            raise InputFormatError(
                ids_file, None, f"{len(ids)} ids, the manifest says {shard['documents']}"
            )
        yield Shard(ids, directory / f"{shard['name']}{suffix}", offset)
        offset += len(ids)
