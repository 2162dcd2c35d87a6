"""Runs as pandas DataFrames in PyTerrier's column names, for pipelines that mix this package
with PyTerrier: one row per retrieved document with ``qid``, ``docno``, ``score`` and ``rank``
(from 0 within each query, as PyTerrier numbers it; TREC files number from 1).

Rows come in this package's canonical order (each query's documents by score, ties by document
id descending, queries in natural order), the order ``write_run`` writes them in, so a run read
back from a frame writes the same file."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from hybrid_ir.data.runs import Run, ranked, topic_sort_key
from hybrid_ir.errors import InputFormatError

if TYPE_CHECKING:
    import pandas

COLUMNS = ("qid", "docno", "score", "rank")
"""PyTerrier's result columns, in its order."""


def run_to_frame(run: Run) -> pandas.DataFrame:
    """``run`` (``{qid: {docno: score}}``) as a DataFrame with :data:`COLUMNS`."""
    import pandas  # deferred: pandas takes most of a second to import

    rows = [
        (qid, docno, score, rank)
        for qid in sorted(run, key=topic_sort_key)
        for rank, (docno, score) in enumerate(ranked(run[qid]))
    ]
    frame = pandas.DataFrame(rows, columns=list(COLUMNS))
    return frame.astype({"qid": str, "docno": str, "score": float, "rank": int})


def run_from_frame(frame: pandas.DataFrame, name: str = "DataFrame") -> Run:
    """The run in a DataFrame with at least ``qid``, ``docno`` and ``score`` (``rank`` and any
    other column ignored: the scores order the documents). A missing column, a (qid, docno) on
    two rows or a score that is not a finite number is an error naming the row."""
    missing = [column for column in COLUMNS[:3] if column not in frame.columns]
    if missing:
        raise InputFormatError(name, None, f"no column {', '.join(missing)} (has {list(frame)})")
    run: Run = {}
    for row, (qid, docno, score) in enumerate(
        zip(frame["qid"], frame["docno"], frame["score"], strict=True)
    ):
        where = f"row {row} (qid {qid!r}, docno {docno!r})"
        try:
            value = float(score)
        except (TypeError, ValueError):
            raise InputFormatError(
                name, None, f"{where}: score {score!r} is not a number"
            ) from None
        if not math.isfinite(value):
            raise InputFormatError(name, None, f"{where}: score {score!r} is not finite")
        docs = run.setdefault(str(qid), {})
        if str(docno) in docs:
            raise InputFormatError(name, None, f"{where}: the document is on an earlier row too")
        docs[str(docno)] = value
    return run
