"""Qrels on disk and in memory: the one module that reads, writes and holds relevance judgments.

In memory qrels are ``{topic id: {doc id: relevance}}`` (:data:`Qrels`, the shape ranx and
pytrec_eval take), one grade per (topic, document): a pair judged on several lines keeps its
highest relevance, so merging pools never demotes a document. A collection reader, which
converts a raw file into the canonical one line for line, holds the lines themselves, as a list
of :class:`Judgment` (:func:`read_judgments`, :func:`write_judgments`).

On disk qrels are TREC's ``qid iter docid rel``, whitespace separated (``.gz`` too), read as
trec_eval 10.0 reads them: a line whose first non-blank character is ``#`` is a comment (10.0
skips a ``#`` line; one that follows blanks is skipped here too, as a run comment is). Every
TREC qrels file is parsed by :func:`qrels_lines`, whose errors name the file and line: a line
of another field count, an id that breaks :data:`~hybrid_ir.data.formats.ID_RULE`, a relevance
that is not an integer (an integral float, ``3.0`` as pya0's NTCIR-12 qrels write it, reads as
that integer, as trec_eval reads it) or is beyond the relevance limit
(:func:`~hybrid_ir.data.formats.relevance_limit`), and a file without any judgment, as every
score against it would be 0. BEIR's tab-separated qrels (``query-id corpus-id score`` with a
header) are another source format, which :mod:`hybrid_ir.data.collections.beir` reads into
:class:`Judgment` lists with :func:`parse_relevance`.

:func:`write_qrels` writes qrels in canonical order: topics in natural order
(:func:`~hybrid_ir.data.runs.topic_sort_key`), each topic's documents by id, so two equal qrels
give byte-identical files.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hybrid_ir.data.formats import (
    ASCII_INTEGER,
    ASCII_NUMBER,
    atomic_output,
    check_read_ids,
    check_written_id,
    is_comment,
    max_relevance,
    open_text,
    split_fields,
)
from hybrid_ir.data.runs import topic_sort_key
from hybrid_ir.errors import InputFormatError, quoted

LOGGER = logging.getLogger(__name__)

Qrels = dict[str, dict[str, int]]
"""Qrels in memory: ``{topic id: {doc id: relevance}}``."""


@dataclass(frozen=True, order=True)
class Judgment:
    """One line of a qrels file."""

    query_id: str
    doc_id: str
    relevance: int


# --- reading ----------------------------------------------------------------------------------


def parse_relevance(value: str, path: str | Path, line_number: int) -> int:
    """Relevance as an integer; integral floats such as ``3.0`` are accepted as such.

    Values beyond the relevance limit (:func:`~hybrid_ir.data.formats.relevance_limit`,
    default ±1,000) are refused: gain-based measures grow with them and trec_eval's code paths
    degrade to quadratic time or worse, so such a value is a corrupt file rather than a
    judgment.
    """
    relevance = _integral(value)
    if relevance is None:
        kind = "integral" if _is_number(value) else "a number"
        raise InputFormatError(path, line_number, f"relevance {quoted(value)} is not {kind}")
    limit = max_relevance()
    if abs(relevance) > limit:
        raise InputFormatError(
            path,
            line_number,
            f"relevance {quoted(value)} is beyond ±{limit} (config max_relevance, "
            "CLI --max-relevance)",
        )
    return relevance


def _integral(value: str) -> int | None:
    if ASCII_INTEGER.fullmatch(value):
        # Python refuses to convert over 4,300 digits; 19 already exceed any relevance limit.
        digits = value.lstrip("+-")
        return int(value) if len(digits) <= 18 else (-1 if value[0] == "-" else 1) * 10**18
    if not ASCII_NUMBER.fullmatch(value):
        return None
    number = float(value)
    return int(number) if number.is_integer() else None  # NaN and ±inf are not integers


def _is_number(value: str) -> bool:
    return ASCII_NUMBER.fullmatch(value) is not None


def qrels_lines(path: str | Path) -> Iterator[tuple[int, str, str, str]]:
    """``(line number, qid, docid, relevance as written)`` of a TREC qrels file, comment lines
    skipped: the one parser of TREC qrels lines. A file without any judgment is an error, as
    every score against it would be 0."""
    judged = False
    with open_text(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = split_fields(line)
            if not fields or is_comment(line):
                continue
            if len(fields) != 4:
                raise InputFormatError(
                    path, line_number, f"expected 4 fields (qid iter docid rel), got {len(fields)}"
                )
            query_id, _, doc_id, relevance = fields
            check_read_ids(path, line_number, query_id, doc_id)
            judged = True
            yield line_number, query_id, doc_id, relevance
    if not judged:
        raise InputFormatError(path, None, "no judgments: every score against it would be 0")


def read_judgments(path: str | Path) -> list[Judgment]:
    """Every judgment line of a TREC qrels file, in file order, repeated pairs included (a
    collection reader's view: it converts the file line for line)."""
    return [
        Judgment(query_id, doc_id, parse_relevance(relevance, path, line_number))
        for line_number, query_id, doc_id, relevance in qrels_lines(path)
    ]


def read_qrels(path: str | Path) -> Qrels:
    """Read TREC qrels (``topic iter doc relevance``, ``.gz`` too) into ``{topic: {doc: rel}}``.

    Mirrored qrels are not all clean, so two deviations load with a warning instead of failing:
    relevance written as an integral float (pya0's NTCIR-12 qrels write ``3.0``) is read as that
    integer (trec_eval reads it the same way), and a (topic, doc) pair judged on several lines
    keeps its highest relevance, so merging pools never demotes a document. A non-integral
    relevance (``0.5``) has no trec_eval meaning and is an error naming the file and line, and
    so is a file with no judgment at all.
    """
    qrels: Qrels = {}
    floats = duplicates = 0
    for line_number, topic, doc, value in qrels_lines(path):
        relevance = parse_relevance(value, path, line_number)
        if not value.lstrip("+-").isdigit():
            floats += 1
        judgments = qrels.setdefault(topic, {})
        if doc in judgments:
            duplicates += 1
            relevance = max(relevance, judgments[doc])
        judgments[doc] = relevance
    if floats:
        LOGGER.warning(
            "%s: %d relevance value(s) written as floats (e.g. 3.0) read as integers", path, floats
        )
    if duplicates:
        LOGGER.warning(
            "%s: %d repeated (topic, doc) line(s); each pair keeps its highest relevance",
            path,
            duplicates,
        )
    return qrels


# --- writing ----------------------------------------------------------------------------------


def judgments(qrels: Qrels) -> Iterator[Judgment]:
    """The judgments of ``qrels`` in canonical order: topics in natural order, each topic's
    documents by id."""
    for topic in sorted(qrels, key=topic_sort_key):
        for doc, relevance in sorted(qrels[topic].items()):
            yield Judgment(topic, doc, relevance)


def write_qrels(qrels: Qrels, path: str | Path) -> int:
    """Write ``qrels`` in TREC format in canonical order (:func:`judgments`); return the number
    of lines."""
    return write_judgments(path, judgments(qrels))


def write_judgments(path: str | Path, lines: Iterable[Judgment]) -> int:
    """Write judgments in TREC format as given (a reader's file order); return the line count."""
    count = 0
    with atomic_output(path) as out:
        for judgment in lines:
            check_written_id(judgment.query_id, path)
            check_written_id(judgment.doc_id, path)
            out.write(f"{judgment.query_id} 0 {judgment.doc_id} {judgment.relevance}\n")
            count += 1
    return count
