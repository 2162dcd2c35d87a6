"""Runs in memory, canonicalized once: ``{topic id: {doc id: score}}``.

Canonical order is the one trec_eval uses to score a run: score descending, ties broken by
document id descending (trec_eval compares ids as strings). Writers cut each topic at ``k`` in
that order, so two runs with the same scores give byte-identical files whatever order they were
computed in.

A document listed twice for one topic is read by the policy :data:`DUPLICATE_POLICIES` names:
``max`` (the default) keeps its highest score, ``first`` the score of its first line, ``error``
refuses the file naming both lines. trec_eval refuses such a run ("duplicate docs"), the
ARQMath organisers' tools keep the first line, and pytrec_eval, which takes a run as a dict,
keeps whichever entry the caller's dict kept; ``max`` is what a fusion of two lists of the same
topic means, and what this workflow always did. The two lenient policies log a warning with
the count, so nothing is dropped silently.

Two file formats are read and written: TREC (``qid Q0 docid rank score tag``) and the ARQMath
submission TSV (``topic<TAB>post<TAB>rank<TAB>score<TAB>run``). A file's format is decided once,
from its first line (or given); a line of another layout, a rank that is not an integer or a
score that is not a finite number is an error naming the file and line. As trec_eval 10.0 reads
a run, a line whose first non-blank character is ``#`` is a comment, and a TREC line's fields
after the sixth are ignored (trec_eval 9.0.8 ignored them too; it refused comments).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from hybrid_ir.data.formats import (
    ASCII_INTEGER,
    ASCII_NUMBER,
    ASCII_WHITESPACE,
    RunEntry,
    atomic_output,
    check_line_length,
    check_read_ids,
    check_written_id,
    is_comment,
    line_breaking_problem,
    max_line_chars,
    open_text,
    split_fields,
)
from hybrid_ir.errors import ConfigError, HybridIRError, InputFormatError, quoted

Run = dict[str, dict[str, float]]


def ranked(docs: dict[str, float], k: int | None = None) -> list[tuple[str, float]]:
    """A topic's documents in canonical order (score desc, doc id desc), cut at ``k``."""
    order = sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)
    return order if k is None else order[:k]


def canonicalize(run: Run, k: int | None = None) -> Run:
    """The run with each topic in canonical order and cut at ``k`` (dicts keep that order)."""
    return {topic: dict(ranked(docs, k)) for topic, docs in run.items()}


DEFAULT_K = 1000
"""Documents a run keeps per topic unless told otherwise (trec_eval's and pyserini's depth)."""
DUPLICATE_POLICIES = ("max", "first", "error")
"""What :func:`read_run` does with a document listed twice for one topic (module docstring)."""
_KEPT = {"max": "the highest score", "first": "the first line's score"}


def add_entry(run: Run, topic: str, doc: str, score: float) -> None:
    """Add one result, keeping the best score of a document listed twice."""
    docs = run.setdefault(topic, {})
    if doc not in docs or score > docs[doc]:
        docs[doc] = score


RUN_FORMATS = ("trec", "arqmath")
_FIELD_COUNTS = {"trec": 6, "arqmath": 5}
_LAYOUTS = {
    "trec": "a TREC run line (qid Q0 docid rank score tag: 6 fields)",
    "arqmath": "an ARQMath run line (topic post rank score run: 5 tab-separated fields)",
}


def _fields(line: str, run_format: str) -> list[str]:
    if run_format == "arqmath":
        return [field.strip(ASCII_WHITESPACE) for field in line.strip("\r\n").split("\t")]
    return split_fields(line)[: _FIELD_COUNTS["trec"]]


def _is_run_line(line: str) -> bool:
    return bool(line.strip(ASCII_WHITESPACE)) and not is_comment(line)


def detect_format(line: str, path: str | Path, line_number: int) -> str:
    """A run file's format, decided once from its first line: 6 whitespace-separated fields (or
    more, the extra ones ignored) is TREC, 5 tab-separated fields is ARQMath TSV; anything else
    names both layouts. A line that
    is both (4 tabs, and a space inside one tab-separated field) is ARQMath when none of its
    5 fields is empty: an ARQMath line whose id holds a space is then read as ARQMath and its
    id refused, never as a TREC line with shifted columns (``--run-format trec`` reads it as
    TREC)."""
    tab_fields = _fields(line, "arqmath")
    if len(tab_fields) == _FIELD_COUNTS["arqmath"] and all(tab_fields):
        return "arqmath"
    for run_format in RUN_FORMATS:
        if len(_fields(line, run_format)) == _FIELD_COUNTS[run_format]:
            return run_format
    raise InputFormatError(
        path,
        line_number,
        f"neither {_LAYOUTS['trec']} nor {_LAYOUTS['arqmath']}: "
        f"{quoted(line.strip(ASCII_WHITESPACE))}",
    )


def _parse_line(
    line: str, run_format: str, path: str | Path, line_number: int
) -> tuple[str, str, float]:
    fields = _fields(line, run_format)
    if len(fields) != _FIELD_COUNTS[run_format]:
        raise InputFormatError(
            path,
            line_number,
            f"expected {_LAYOUTS[run_format]} like the file's first line, got {len(fields)} "
            f"field(s): {quoted(line.strip(ASCII_WHITESPACE))}",
        )
    if run_format == "trec":
        topic, _, doc, rank, score, _ = fields
    else:
        topic, doc, rank, score, _ = fields
    if not all(fields[:-1]):
        raise InputFormatError(path, line_number, "an empty field")
    check_read_ids(path, line_number, topic, doc)  # ARQMath's tab-separated ids may hold spaces
    if not ASCII_INTEGER.fullmatch(rank):
        raise InputFormatError(path, line_number, f"rank {quoted(rank)} is not an integer")
    if not ASCII_NUMBER.fullmatch(score):
        raise InputFormatError(path, line_number, f"score {quoted(score)} is not a number")
    value = float(score)
    if not math.isfinite(value):
        raise InputFormatError(path, line_number, f"score {quoted(score)} is not a finite number")
    return topic, doc, value


# Whole lines are read this many characters at a time: big enough for the regular expression
# below to do the work, small enough that a run of millions of lines is never held whole.
_BLOCK_CHARS = 1 << 22
_SPACE = "[ \t\r\x0b\x0c]"
_NON_SPACE = "[^ \t\n\r\x0b\x0c]"
_FIELD = f"{_NON_SPACE}++"
# A topic id cannot start with "#": such a line is a comment.
_TOPIC = r"[^# \t\n\r\x0b\x0c]" + f"{_NON_SPACE}*+"
# A TREC line exactly as _parse_line accepts it (six ASCII-whitespace-separated fields, then any
# ignored ones, an integer rank, a number as trec_eval reads it), capturing topic, doc and score:
# one pass in C over a block instead of a split and two matches per line in Python.
_TREC_LINE = re.compile(
    rf"^{_SPACE}*+({_TOPIC}){_SPACE}++{_FIELD}{_SPACE}++({_FIELD}){_SPACE}++"
    rf"{ASCII_INTEGER.pattern}{_SPACE}++((?i:{ASCII_NUMBER.pattern})){_SPACE}++{_FIELD}"
    rf"(?:{_SPACE}++{_FIELD})*+{_SPACE}*+$",
    re.MULTILINE,
)
# Lines that hold a run entry: neither blank nor a comment.
_ENTRY_LINE = re.compile(rf"^{_SPACE}*[^# \t\n\r\x0b\x0c]", re.MULTILINE)


def _first_format(text: str, path: str | Path, first_line: int) -> str | None:
    for offset, line in enumerate(text.split("\n")):
        if _is_run_line(line):
            return detect_format(line, path, first_line + offset)
    return None


def _block_entries(
    text: str, run_format: str, path: str | Path, first_line: int
) -> list[tuple[str, str, float]]:
    """The (topic, doc, score) of each run line of ``text``, whole lines numbered from
    ``first_line``. A TREC block whose every entry line (neither blank nor a comment) matches
    :data:`_TREC_LINE` with a finite score is taken in one pass; any other block is read line
    by line by :func:`_parse_line`, which raises the error naming the first bad line. A control
    character anywhere (one search in C over the block) is an error naming its line."""
    breaking = line_breaking_problem(text)
    if breaking is not None:
        raise InputFormatError(path, first_line + breaking[0], breaking[1])
    if run_format == "trec":
        found = _TREC_LINE.findall(text)
        # Every line matched: counted with str.count, blank and comment lines (rare) by a
        # second pass.
        if len(found) == text.count("\n") + (not text.endswith("\n")) or len(found) == len(
            _ENTRY_LINE.findall(text)
        ):
            scores = list(map(float, [score for _, _, score in found]))
            if all(map(math.isfinite, scores)):
                return [
                    (topic, doc, score)
                    for (topic, doc, _), score in zip(found, scores, strict=True)
                ]
    return [
        _parse_line(line, run_format, path, first_line + offset)
        for offset, line in enumerate(text.split("\n"))
        if _is_run_line(line)
    ]


def _add_entries(
    run: Run, parsed: Iterable[tuple[str, str, float]], keep: set | None, duplicates: str
) -> tuple[str, str] | int:
    """Each entry of a topic in ``keep`` (all if None) into ``run``, inlined (a run file has
    millions of lines); a document seen again for its topic is kept by the ``duplicates``
    policy. Returns how many entries repeated a (topic, document), or with ``error`` the first
    repeated pair."""
    docs: dict[str, float] = {}
    current = None
    repeated = 0
    for topic, doc, score in parsed:
        if topic != current:
            if keep is not None and topic not in keep:
                continue
            current, docs = topic, run.setdefault(topic, {})
        seen = docs.get(doc)
        if seen is None:
            docs[doc] = score
            continue
        if duplicates == "error":
            return topic, doc
        repeated += 1
        if duplicates == "max" and score > seen:
            docs[doc] = score
    return repeated


def _duplicate_lines(path: str | Path, run_format: str, topic: str, doc: str) -> list[int]:
    """The numbers of the lines listing ``doc`` for ``topic`` (for the error message only)."""
    found = []
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if _is_run_line(line):
                fields = _fields(line, run_format)
                pair = (fields[0], fields[2] if run_format == "trec" else fields[1])
                if pair == (topic, doc):
                    found.append(number)
    return found


def _check_block_lines(text: str, path: str | Path, first_line: int) -> None:
    """Each whole line of ``text`` within the line limit (only a block longer than the limit
    can hold a line longer than it)."""
    start = 0
    for offset in range(text.count("\n")):
        end = text.index("\n", start)
        check_line_length(path, first_line + offset, end - start)
        start = end + 1


def read_run(
    path: str | Path,
    topics: Iterable[str] | None = None,
    run_format: str | None = None,
    duplicates: str = "max",
) -> Run:
    """Read a TREC or ARQMath-TSV run (``.gz`` too), optionally keeping only ``topics``.

    ``run_format`` is ``trec``, ``arqmath`` or ``None`` to decide it from the first line; every
    line must then have that layout, so a TREC line that lost a column is an error, never an
    ARQMath line read with a wrong score. ``duplicates`` is one of :data:`DUPLICATE_POLICIES`.
    """
    if run_format is not None and run_format not in RUN_FORMATS:
        raise ConfigError(f"unknown run format {run_format!r}; choose {', '.join(RUN_FORMATS)}")
    if duplicates not in DUPLICATE_POLICIES:
        raise ConfigError(
            f"unknown duplicates policy {duplicates!r}; choose {', '.join(DUPLICATE_POLICIES)}"
        )
    keep = set(topics) if topics is not None else None
    run: Run = {}
    lines = 0
    repeated = 0
    first_line = 1
    pending = ""
    with open_text(path) as handle:
        while True:
            block = handle.read(_BLOCK_CHARS)
            text = pending + block
            cut = text.rfind("\n") + 1 if block else len(text)
            text, pending = text[:cut], text[cut:]
            check_line_length(path, first_line + text.count("\n"), len(pending))
            if len(text) > max_line_chars():
                _check_block_lines(text, path, first_line)
            if text:
                run_format = run_format or _first_format(text, path, first_line)
                if run_format is not None:
                    parsed = _block_entries(text, run_format, path, first_line)
                    lines += len(parsed)
                    added = _add_entries(run, parsed, keep, duplicates)
                    if isinstance(added, tuple):
                        topic, doc = added
                        numbers = _duplicate_lines(path, run_format, topic, doc)
                        raise InputFormatError(
                            path,
                            numbers[1] if len(numbers) > 1 else None,
                            f"document {quoted(doc)} listed again for topic {quoted(topic)} "
                            f"(lines {', '.join(map(str, numbers[:2]))}; duplicates: error)",
                        )
                    repeated += added
                first_line += text.count("\n")
            if not block:
                break
    if not lines:
        raise InputFormatError(path, None, "no run lines: the file is empty")
    if repeated:
        logging.warning(
            "%s: %d line(s) list a document already listed for their topic; kept %s "
            "(duplicates: %s; trec_eval refuses such a run)",
            path,
            repeated,
            _KEPT[duplicates],
            duplicates,
        )
    return run


def entries(run: Run, tag: str, k: int | None = None) -> Iterator[RunEntry]:
    for topic in sorted(run, key=topic_sort_key):
        for rank, (doc, score) in enumerate(ranked(run[topic], k), start=1):
            yield RunEntry(topic, doc, rank, score, tag)


def topic_sort_key(topic: str) -> tuple:
    """Natural order of topic ids (A.2 before A.10), so files read in a stable, human order."""
    parts = []
    for token in _split_digits(topic):
        parts.append((0, int(token), "") if _ascii_digit(token[0]) else (1, 0, token))
    return tuple(parts)


def _ascii_digit(char: str) -> bool:
    """ASCII digits only: str.isdigit also takes '²', which int() refuses."""
    return "0" <= char <= "9"


def _split_digits(text: str) -> list[str]:
    tokens, current = [], ""
    for char in text:
        if current and _ascii_digit(char) != _ascii_digit(current[-1]):
            tokens.append(current)
            current = ""
        current += char
    return tokens + ([current] if current else [])


LINE_FORMATS = {
    "trec": "{0.query_id} Q0 {0.doc_id} {0.rank} {1} {0.tag}\n",
    "arqmath": "{0.query_id}\t{0.doc_id}\t{0.rank}\t{1}\t{0.tag}\n",
}
"""Line layouts: TREC, and the ARQMath Task-1 submission TSV (topic, post, rank, score, run).
The score is written as Python's shortest repr of the float, which reads back as the same
float: two different scores never print alike, so trec_eval (which re-sorts by score, then by
document id) ranks as the writer did. Six decimals made ties of scores that differed beyond
them, which trec_eval then broke by document id, against the rank column."""


def write_run(
    run: Run, path: str | Path, tag: str, k: int | None = None, style: str = "trec"
) -> int:
    """Write a run in canonical order, each topic cut at ``k``; return the line count."""
    return write_entries(path, entries(run, tag, k), style)


def write_entries(path: str | Path, run_entries: Iterable[RunEntry], style: str = "trec") -> int:
    """Write run lines as given (a searcher's own ranking); return the line count."""
    if style not in LINE_FORMATS:
        raise ValueError(f"unknown run file style {style!r}; choose {', '.join(LINE_FORMATS)}")
    count = 0
    checked_tag = None
    with atomic_output(path) as out:
        for entry in run_entries:
            check_written_id(entry.query_id, path)
            check_written_id(entry.doc_id, path)
            if entry.tag != checked_tag:
                check_written_id(entry.tag, path)
                checked_tag = entry.tag
            if not math.isfinite(entry.score):  # a model that diverged: never a run file
                raise HybridIRError(
                    f"{path}: topic {entry.query_id}, document {entry.doc_id}: score "
                    f"{entry.score} is not a finite number"
                )
            out.write(LINE_FORMATS[style].format(entry, repr(float(entry.score))))
            count += 1
    return count
