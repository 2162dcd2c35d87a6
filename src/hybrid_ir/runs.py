"""Runs in memory, canonicalized once: ``{topic id: {doc id: score}}``.

Canonical order is the one trec_eval uses to score a run: score descending, ties broken by
document id descending (trec_eval compares ids as strings). A document listed twice for a topic
keeps its best score. Writers cut each topic at ``k`` in that order, so two runs with the same
scores give byte-identical files whatever order they were computed in.

Two file formats are read and written: TREC (``qid Q0 docid rank score tag``) and the ARQMath
submission TSV (``topic<TAB>post<TAB>rank<TAB>score<TAB>run``). Readers accept either and
report the file and line of anything else.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from hybrid_ir.errors import InputFormatError
from hybrid_ir.formats import RunEntry, atomic_output, open_text

Run = dict[str, dict[str, float]]


def ranked(docs: dict[str, float], k: int | None = None) -> list[tuple[str, float]]:
    """A topic's documents in canonical order (score desc, doc id desc), cut at ``k``."""
    order = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
    return order if k is None else order[:k]


def canonicalize(run: Run, k: int | None = None) -> Run:
    """The run with each topic in canonical order and cut at ``k`` (dicts keep that order)."""
    return {topic: dict(ranked(docs, k)) for topic, docs in run.items()}


def add_entry(run: Run, topic: str, doc: str, score: float) -> None:
    """Add one result, keeping the best score of a document listed twice."""
    docs = run.setdefault(topic, {})
    if doc not in docs or score > docs[doc]:
        docs[doc] = score


def _parse_line(fields: list[str], path: str | Path, line_number: int) -> tuple[str, str, float]:
    if len(fields) == 6:
        topic, _, doc, _, score, _ = fields
    elif len(fields) == 5:
        topic, doc, _, score, _ = fields
    else:
        raise InputFormatError(
            path,
            line_number,
            f"expected 6 fields (TREC: qid Q0 docid rank score tag) or 5 (ARQMath TSV: "
            f"topic post rank score run), got {len(fields)}",
        )
    try:
        return topic, doc, float(score)
    except ValueError:
        raise InputFormatError(path, line_number, f"score {score!r} is not a number") from None


def read_run(path: str | Path, topics: Iterable[str] | None = None) -> Run:
    """Read a TREC or ARQMath-TSV run (``.gz`` too), optionally keeping only ``topics``."""
    keep = set(topics) if topics is not None else None
    run: Run = {}
    with open_text(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            topic, doc, score = _parse_line(fields, path, line_number)
            if keep is None or topic in keep:
                add_entry(run, topic, doc, score)
    return run


def entries(run: Run, tag: str, k: int | None = None) -> Iterator[RunEntry]:
    for topic in sorted(run, key=topic_sort_key):
        for rank, (doc, score) in enumerate(ranked(run[topic], k), start=1):
            yield RunEntry(topic, doc, rank, score, tag)


def topic_sort_key(topic: str) -> tuple:
    """Natural order of topic ids (A.2 before A.10), so files read in a stable, human order."""
    parts = []
    for token in _split_digits(topic):
        parts.append((0, int(token), "") if token.isdigit() else (1, 0, token))
    return tuple(parts)


def _split_digits(text: str) -> list[str]:
    tokens, current = [], ""
    for char in text:
        if current and char.isdigit() != current[-1].isdigit():
            tokens.append(current)
            current = ""
        current += char
    return tokens + ([current] if current else [])


LINE_FORMATS = {
    "trec": "{0.query_id} Q0 {0.doc_id} {0.rank} {0.score:.6f} {0.tag}\n",
    "arqmath": "{0.query_id}\t{0.doc_id}\t{0.rank}\t{0.score:.6f}\t{0.tag}\n",
}
"""Line layouts: TREC, and the ARQMath Task-1 submission TSV (topic, post, rank, score, run)."""


def write_run(
    run: Run, path: str | Path, tag: str, k: int | None = None, style: str = "trec"
) -> int:
    """Write a run in canonical order, each topic cut at ``k``; return the line count."""
    if style not in LINE_FORMATS:
        raise ValueError(f"unknown run file style {style!r}; choose {', '.join(LINE_FORMATS)}")
    count = 0
    with atomic_output(path) as out:
        for entry in entries(run, tag, k):
            out.write(LINE_FORMATS[style].format(entry))
            count += 1
    return count
