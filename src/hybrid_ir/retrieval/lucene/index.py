"""Lucene BM25 indexes built with Anserini (through pyserini) from the canonical corpus.

The canonical corpus is first written as a BEIR-style JSON Lines file (``_id``, ``title``,
``text``) so that Anserini's own ``BeirFlatCollection`` (``contents`` = title + text) and
``BeirMultifieldCollection`` (``title`` and ``contents`` as separate fields) build the index
exactly as pyserini's published BEIR regressions do.

Only an index a re-ranker reads documents from (AskMe, :mod:`hybrid_ir.retrieval.lucene.stored`)
keeps each document's raw JSON: Anserini's searcher loads every hit's stored fields to read its id,
so a stored raw text makes every search slower (SciFact's 300 queries at depth 1,000: 10.0 s
against 2.5 s without, the same run).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from hybrid_ir.data.formats import atomic_directory, atomic_output, read_records
from hybrid_ir.errors import ConfigError
from hybrid_ir.retrieval.lucene.jvm import pyserini_modules

ANSERINI_COLLECTIONS = {"flat": "BeirFlatCollection", "multifield": "BeirMultifieldCollection"}
LAYOUTS = tuple(ANSERINI_COLLECTIONS)
"""Index layouts: title and text in one field (flat) or one field each (multifield)."""


def check_layout(layout: str) -> str:
    if layout not in ANSERINI_COLLECTIONS:
        raise ConfigError(
            f"unknown index layout {layout!r}; choose one of {', '.join(ANSERINI_COLLECTIONS)}"
        )
    return layout


def write_anserini_input(
    corpus_path: str | Path, destination: Path, text_fields: Sequence[str] = ("text",)
) -> int:
    """Write the canonical corpus as the BEIR JSON Lines that Anserini's readers expect; the
    text is the given fields joined by a space (ARQMath Q+A: question and answer)."""
    count = 0
    with atomic_output(destination) as out:
        for record in read_records(corpus_path):
            text = " ".join(str(record[field]) for field in text_fields if record.get(field))
            beir = {"_id": record["id"], "title": record["title"], "text": text}
            out.write(json.dumps(beir, ensure_ascii=False) + "\n")
            count += 1
    return count


def build_bm25_index(
    corpus_path: str | Path,
    index_dir: str | Path,
    layout: str,
    threads: int = 1,
    text_fields: Sequence[str] = ("text",),
    store_raw: bool = False,
) -> dict:
    """Index the corpus into ``index_dir`` (created atomically) and return its statistics;
    ``store_raw`` keeps every document's JSON for
    :class:`~hybrid_ir.retrieval.lucene.stored.StoredDocuments`.

    One indexing thread keeps Lucene's internal document order, and with it BM25 tie-breaking,
    identical from run to run.
    """
    index_dir = Path(index_dir)
    arguments = [
        "-collection", ANSERINI_COLLECTIONS[check_layout(layout)],
        "-generator", "DefaultLuceneDocumentGenerator",
        "-threads", str(threads),
        "-storePositions", "-storeDocvectors",
    ]  # fmt: skip
    if store_raw:
        arguments.append("-storeRaw")
    if layout == "multifield":
        arguments += ["-fields", "title"]
    # Fixed names, cleared first: a build killed earlier leaves nothing behind (atomic_directory).
    input_dir = index_dir.with_name(f".{index_dir.name}.input")
    shutil.rmtree(input_dir, ignore_errors=True)
    try:
        write_anserini_input(corpus_path, input_dir / "corpus.jsonl", text_fields)
        with atomic_directory(index_dir) as building:
            pyserini_modules().IndexCollection.main(
                ["-input", str(input_dir), "-index", str(building), *arguments]
            )
            stats = index_stats(building)
    finally:
        shutil.rmtree(input_dir, ignore_errors=True)
    return stats


def index_stats(index_dir: str | Path) -> dict:
    """Documents, terms and unique terms of a Lucene index, as pyserini reports them."""
    reader = pyserini_modules().LuceneIndexReader(str(index_dir))
    return {key: int(value) for key, value in reader.stats().items()}
