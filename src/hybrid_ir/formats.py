"""The canonical intermediate formats, one each, and their readers and writers.

* corpus: JSON Lines, one document per line, keys ``id``, ``title``, ``text`` plus optional fields;
* topics: JSON Lines, one topic per line, keys ``id``, ``title``, ``text`` plus optional fields;
* qrels: TREC format ``qid 0 docid relevance`` with integer relevance;
* runs: TREC format ``qid Q0 docid rank score tag``.

Every writer goes through :func:`atomic_output`, so an interrupted or failed step never leaves a
half-written file under the final name.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from hybrid_ir.errors import InputFormatError

REQUIRED_KEYS = ("id", "title", "text")


@contextlib.contextmanager
def atomic_output(path: str | Path, mode: str = "w") -> Iterator[IO]:
    """Open a temporary sibling of ``path`` and rename it to ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as handle:
            yield handle
        make_readable(tmp_name)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def make_readable(path: str | Path) -> None:
    """Give a temporary file the permissions a plainly created file would have (umask)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def open_text(path: str | Path) -> IO[str]:
    """Open a text file for reading, transparently decompressing ``.gz``."""
    path = Path(path)
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def write_records(path: str | Path, records: Iterable[dict]) -> int:
    """Write corpus or topic records as JSON Lines; return how many were written."""
    count = 0
    with atomic_output(path) as out:
        for record in records:
            missing = [key for key in REQUIRED_KEYS if key not in record]
            if missing:
                raise ValueError(f"record {record.get('id')!r} lacks {', '.join(missing)}")
            out.write(json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n")
            count += 1
    return count


def json_lines(handle: IO[str], name: str | Path) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` of a JSON Lines stream; a bad line names ``name`` and line."""
    for line_number, line in enumerate(handle, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputFormatError(name, line_number, f"invalid JSON: {error.msg}") from None
        if not isinstance(value, dict):
            raise InputFormatError(name, line_number, "expected a JSON object")
        yield line_number, value


def read_records(path: str | Path) -> Iterator[dict]:
    """Read canonical corpus or topic JSON Lines, checking the required keys line by line."""
    with open_text(path) as handle:
        for line_number, record in json_lines(handle, path):
            missing = [key for key in REQUIRED_KEYS if key not in record]
            if missing:
                raise InputFormatError(path, line_number, f"missing key(s) {', '.join(missing)}")
            yield record


@dataclass(frozen=True, order=True)
class Judgment:
    """One line of a qrels file."""

    query_id: str
    doc_id: str
    relevance: int


def write_qrels(path: str | Path, judgments: Iterable[Judgment]) -> int:
    count = 0
    with atomic_output(path) as out:
        for judgment in judgments:
            out.write(f"{judgment.query_id} 0 {judgment.doc_id} {judgment.relevance}\n")
            count += 1
    return count


def parse_relevance(value: str, path: str | Path, line_number: int) -> int:
    """Relevance as an integer; integral floats such as ``3.0`` are accepted as such."""
    try:
        return int(value)
    except ValueError:
        pass
    try:
        number = float(value)
    except ValueError:
        raise InputFormatError(path, line_number, f"relevance {value!r} is not a number") from None
    if not number.is_integer():
        raise InputFormatError(path, line_number, f"relevance {value!r} is not integral")
    return int(number)


def qrels_lines(path: str | Path) -> Iterator[tuple[int, str, str, str]]:
    """``(line number, qid, docid, relevance as written)`` of a TREC qrels file."""
    with open_text(path) as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 4:
                raise InputFormatError(
                    path, line_number, f"expected 4 fields (qid iter docid rel), got {len(fields)}"
                )
            query_id, _, doc_id, relevance = fields
            yield line_number, query_id, doc_id, relevance


def read_qrels(path: str | Path) -> list[Judgment]:
    """Read a TREC qrels file (``qid iter docid rel``, whitespace separated)."""
    return [
        Judgment(query_id, doc_id, parse_relevance(relevance, path, line_number))
        for line_number, query_id, doc_id, relevance in qrels_lines(path)
    ]


@dataclass(frozen=True)
class RunEntry:
    """One line of a TREC run."""

    query_id: str
    doc_id: str
    rank: int
    score: float
    tag: str


def write_run(path: str | Path, entries: Iterable[RunEntry]) -> int:
    count = 0
    with atomic_output(path) as out:
        for entry in entries:
            out.write(
                f"{entry.query_id} Q0 {entry.doc_id} {entry.rank} {entry.score:.6f} {entry.tag}\n"
            )
            count += 1
    return count


def write_table(path: str | Path, rows: list[dict]) -> int:
    """Write rows sharing their keys as a tab-separated table with a header line."""
    columns = list(rows[0]) if rows else []
    with atomic_output(path) as out:
        out.write("\t".join(columns) + "\n")
        for row in rows:
            out.write("\t".join(_cell(row[column]) for column in columns) + "\n")
    return len(rows)


def _cell(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else str(value)
    return text.replace("\t", " ").replace("\n", " ")
