"""What a compiled library prints on the process's standard error, counted into lines of the log.

A C extension writes to file descriptor 2 directly, past Python's logging: pya0's tokenizer
prints ``<number> is too long to cast into float number (len=61).`` for each number longer
than a double holds, untimestamped, once per occurrence, between the job's own lines.
:func:`counted_stderr` sends descriptor 2 to a temporary file while a block runs, then logs one
line per kind of note it knows (how many, with the first example) and every other line as
it was written.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from hybrid_ir.errors import cut


@dataclass(frozen=True)
class Note:
    """A kind of line a library prints: how to recognise it, and what it means here."""

    pattern: re.Pattern[str]
    meaning: str


@contextlib.contextmanager
def counted_stderr(source: str, notes: Mapping[str, Note]) -> Iterator[None]:
    """Count what ``source`` (a library's name) prints on descriptor 2 into the log."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            report(source, captured.read().decode("utf-8", errors="replace"), notes)


def report(source: str, text: str, notes: Mapping[str, Note]) -> None:
    """Log ``text`` (what ``source`` printed): each known note counted, other lines as they are."""
    counts: dict[str, int] = {}
    first: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        kind = next((name for name, note in notes.items() if note.pattern.search(line)), None)
        if kind is None:
            logging.warning("%s: %s", source, line)
            continue
        counts[kind] = counts.get(kind, 0) + 1
        first.setdefault(kind, line)
    for kind, count in counts.items():
        logging.info(
            "%s printed %d %r note(s): %s; the first: %s",
            source,
            count,
            kind,
            notes[kind].meaning,
            cut(first[kind], 120),
        )
