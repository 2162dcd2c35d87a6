"""Text with TeX in it, as the explorer page shows it: where its formulas are, and where it may
be cut without splitting one.

A formula is delimited as in the canonical corpus and topic files (ARQMath's readers write
``$...$`` and ``$$...$$``), or by ``\\(...\\)`` and ``\\[...\\]``; ``\\$`` is a dollar sign.
An opening delimiter with no closing one is text. The page's script splits text by the same
rules (:data:`hybrid_ir.reports.explore.script.SCRIPT`, ``splitMath``) and hands each formula to the
math renderer; this module finds the same formulas so that a text cut to its size limit never ends
inside one, which would leave a dangling ``$`` and shift every formula after it.
"""

from __future__ import annotations

from dataclasses import dataclass

_PAIRS = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"))
"""Opening and closing delimiters, longest first (``$$`` before ``$``)."""


@dataclass(frozen=True)
class Segment:
    """A stretch of text: a formula (``tex`` set, ``display`` for ``$$`` and ``\\[``) or plain
    text; ``start`` and ``end`` index the original string, delimiters included."""

    start: int
    end: int
    tex: str | None = None
    display: bool = False


def _opening(text: str, at: int) -> tuple[str, str] | None:
    for opening, closing in _PAIRS:
        if text.startswith(opening, at):
            return opening, closing
    return None


def _closing(text: str, closing: str, start: int) -> int:
    """Where ``closing`` next occurs from ``start``, not escaped by a backslash (for ``$``);
    -1 if nowhere."""
    at = start
    while True:
        found = text.find(closing, at)
        if found < 0 or closing[0] != "$" or not _escaped(text, found):
            return found
        at = found + 1


def _escaped(text: str, at: int) -> bool:
    """Whether the character at ``at`` follows an odd number of backslashes."""
    count = 0
    while at - count - 1 >= 0 and text[at - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def segments(text: str) -> list[Segment]:
    """``text`` as plain and formula segments, in order, covering it whole."""
    found: list[Segment] = []
    plain = 0
    at = 0
    while at < len(text):
        char = text[at]
        if char == "\\" and at + 1 < len(text) and text[at + 1] not in "[(":
            at += 2  # an escaped character (\$ among them) is text
            continue
        pair = _opening(text, at) if char in "$\\" else None
        if pair is None:
            at += 1
            continue
        opening, closing = pair
        end = _closing(text, closing, at + len(opening))
        if end < 0 or end == at + len(opening):  # unclosed, or empty ($$ read as $ + $)
            at += len(opening)
            continue
        if plain < at:
            found.append(Segment(plain, at))
        stop = end + len(closing)
        found.append(Segment(at, stop, text[at + len(opening) : end], opening in ("$$", "\\[")))
        plain = at = stop
    if plain < len(text):
        found.append(Segment(plain, len(text)))
    return found


def formulas(text: str) -> list[str]:
    """The TeX of every formula of ``text``, in order."""
    return [segment.tex for segment in segments(text) if segment.tex is not None]


def truncate(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to at most ``limit`` characters, never inside a formula (the cut moves back
    to before the formula it would split; a first formula longer than ``limit`` is then cut
    as text, which the page shows as TeX source), and how many characters were left out."""
    if len(text) <= limit:
        return text, 0
    cut = limit
    for segment in segments(text):
        if segment.tex is not None and segment.start < limit < segment.end:
            cut = segment.start if segment.start > 0 else limit
            break
    kept = text[:cut].rstrip()
    return kept, len(text) - len(kept)
