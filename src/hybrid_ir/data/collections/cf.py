"""Reader for the Cystic Fibrosis (CF) collection in its original tagged-text format.

Why the original and not the XML copy: the XML ``cfquery.xml`` lost query 93 (its judgments were
merged into query 92), so only the original files give the real 100 queries and 4,819 judgments.

Roles: ``cf74`` .. ``cf79`` (the six document files, read in that order) and ``cfquery``.

The format: every line starts either with a two-letter field code and a space (``TI``, ``AB``...)
or, for continuation lines, with indentation; continuation lines are joined with single spaces.
Four abstract lines of record 1150 (cf79) are continuation lines that lost their indentation, so
any line that does not start with a two-letter upper-case code continues the current field;
an unknown code is an error. Records follow each other; a record starts at its first code
(``PN``, ``QN``) or where a code repeats. The latter keeps a record whose ``PN`` line is missing:
cf75, cf77 and cf79 end in a line of DOS end-of-file bytes (``^Z``, 0x1A), the last two without
a final newline, so a plain concatenation of the files glues that padding onto the ``PN`` line of
the next file's first record (``RN 00782`` when cf77 and cf78 are joined). ``^Z`` bytes at either
end of a line are therefore dropped and a line of nothing else is skipped. The files are pure
ASCII; they are decoded as latin-1 so that no stray byte can stop the parse.

Documents: ``id`` is the record number ``RN`` without leading zeros, ``title`` is ``TI``, ``text``
is the abstract ``AB`` or, for records without one (454 in the real collection; none has both),
the extract ``EX``; ``text_from`` says which (empty if neither). Optional fields:
``major_subjects`` / ``minor_subjects`` (``MJ`` / ``MN`` split at the ``.`` that ends each MeSH
heading; terms kept as written, only runs of spaces collapsed: ``"CYSTIC-FIBROSIS: co"``),
``authors`` (``AU``, split at the double spaces between names), ``source`` (``SO``),
``medline_an`` (``AN``) and ``paper_number`` (``PN``). ``AN`` is the MEDLINE accession number
(``75051687``), not a PubMed id, so it is not called ``pmid``. Missing optional fields are empty
(30 records have no ``AU``, 3 no ``MJ``).

Topics: one set ``all`` with the 100 queries, ``id`` = ``QN`` without leading zeros, ``text`` =
``QU``, empty ``title``.

Judgments: ``RD`` lists pairs of a record number and a 4-digit code, one score 0..2 per judge
(REW, REW's colleagues, a post-doctoral associate, JBW); ``NR`` must equal the number of pairs.
They give the table ``judgments`` (``query_id``, ``doc_id``, ``judge1`` .. ``judge4``) and two
qrels sets:

* ``binary``: relevance 1 when any judge gave 1 or more, else 0;
* ``graded``: relevance = the sum of the four scores (0..8). That is 4 times the mean judge score,
  and nDCG with linear gains is invariant to scaling all gains, so it equals nDCG with the mean
  score as gain, as used in the CF literature.

No pair in the real data has code ``0000``, so every one of the 4,819 lines of both sets is
relevant and nothing is dropped; a ``0000`` pair would stay as a judged non-relevant line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from hybrid_ir.data.collections import Collection, SourceRoles, reader
from hybrid_ir.data.qrels import Judgment
from hybrid_ir.errors import ConfigError, InputFormatError, quoted

DOC_ROLES = ("cf74", "cf75", "cf76", "cf77", "cf78", "cf79")
QUERY_ROLE = "cfquery"

_DOC_CODES = frozenset({"PN", "RN", "AN", "AU", "TI", "SO", "MJ", "MN", "AB", "EX", "RF", "CT"})
_QUERY_CODES = frozenset({"QN", "QU", "NR", "RD"})
_FIELD_START = re.compile(r"([A-Z]{2})(?: |$)")
_NUMBER = re.compile(r"[0-9]+")
_SCORE_CODE = re.compile(r"[0-2]{4}")
_SUBJECT_END = re.compile(r"\.(?:\s+|(?=[A-Z])|$)")  # "co.PNEUMOTHORAX" occurs: no space after "."
_EOF_PADDING = "\x1a"


@dataclass
class _Field:
    """One field of a record with its physical lines, kept apart for line-exact errors."""

    code: str
    lines: list[tuple[int, str]]  # (line number, text without code and indentation)

    @property
    def line(self) -> int:
        return self.lines[0][0]

    @property
    def text(self) -> str:
        return " ".join(text for _, text in self.lines if text)


_Record = dict[str, _Field]


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines without line ends and without ``^Z`` padding at either end."""
    with open(path, encoding="latin-1") as handle:
        for number, line in enumerate(handle, start=1):
            yield number, line.rstrip("\r\n").strip(_EOF_PADDING)


def _fields(path: Path, codes: frozenset[str]) -> Iterator[_Field]:
    field: _Field | None = None
    for number, line in _lines(path):
        if not line.strip():
            continue
        start = _FIELD_START.match(line)
        if start:
            if start[1] not in codes:
                raise InputFormatError(path, number, f"unknown field code {quoted(start[1])}")
            if field:
                yield field
            field = _Field(start[1], [(number, line[3:].strip())])
        elif field is None:
            raise InputFormatError(path, number, "text before the first field code")
        else:
            field.lines.append((number, line.strip()))
    if field:
        yield field


def _records(path: Path, codes: frozenset[str], first: str) -> Iterator[_Record]:
    """Group fields into records, starting a new one at ``first`` or at a repeated code."""
    record: _Record = {}
    for field in _fields(path, codes):
        if record and (field.code == first or field.code in record):
            yield record
            record = {}
        record[field.code] = field
    if record:
        yield record


def _required(record: _Record, code: str, path: Path) -> _Field:
    if code not in record:
        first_line = min(field.line for field in record.values())
        raise InputFormatError(path, first_line, f"record has no {code} field")
    return record[code]


def _integer(field: _Field, path: Path) -> int:
    if not _NUMBER.fullmatch(field.text):
        problem = f"{field.code} {quoted(field.text)} is not a number"
        raise InputFormatError(path, field.line, problem)
    return int(field.text)


def _text(record: _Record, code: str) -> str:
    return record[code].text if code in record else ""


def _subjects(record: _Record, code: str) -> list[str]:
    terms = _SUBJECT_END.split(_text(record, code))
    return [" ".join(term.split()) for term in terms if term.strip()]


def _authors(record: _Record) -> list[str]:
    """Names are separated by two spaces; a line break also ends a name, hence per line."""
    field = record.get("AU")
    lines = field.lines if field else []
    return [name for _, text in lines for name in re.split(r"\s{2,}", text) if name]


def _document(record: _Record, path: Path) -> dict:
    number = _integer(_required(record, "RN", path), path)
    text_from = next((code for code in ("AB", "EX") if code in record), "")
    return {
        "id": str(number),
        "title": _text(record, "TI"),
        "text": _text(record, text_from),
        "text_from": text_from,
        "major_subjects": _subjects(record, "MJ"),
        "minor_subjects": _subjects(record, "MN"),
        "authors": _authors(record),
        "source": _text(record, "SO"),
        "medline_an": _text(record, "AN"),
        "paper_number": _text(record, "PN"),
    }


def _documents(paths: list[Path]) -> Iterator[dict]:
    for path in paths:
        for record in _records(path, _DOC_CODES, "PN"):
            yield _document(record, path)


def _relevance_pairs(field: _Field, path: Path) -> list[tuple[str, tuple[int, ...]]]:
    """``RD`` as (doc id, four judge scores); a pair may in principle wrap across lines."""
    tokens = [(number, token) for number, text in field.lines for token in text.split()]
    if len(tokens) % 2:
        raise InputFormatError(
            path, tokens[-1][0], "RD has an odd number of tokens: each doc needs a score code"
        )
    pairs = []
    for (doc_line, doc), (code_line, code) in zip(tokens[::2], tokens[1::2], strict=True):
        if not _NUMBER.fullmatch(doc):
            problem = f"RD document number {quoted(doc)} is not a number"
            raise InputFormatError(path, doc_line, problem)
        if not _SCORE_CODE.fullmatch(code):
            raise InputFormatError(
                path, code_line, f"RD score code {quoted(code)} is not four digits 0, 1 or 2"
            )
        pairs.append((str(int(doc)), tuple(int(digit) for digit in code)))
    return pairs


def _query(record: _Record, path: Path) -> tuple[dict, list[dict]]:
    """One query as its topic record and its per-judge judgment rows."""
    query_id = str(_integer(_required(record, "QN", path), path))
    topic = {"id": query_id, "title": "", "text": _required(record, "QU", path).text}
    pairs = _relevance_pairs(record["RD"], path) if "RD" in record else []
    declared = _required(record, "NR", path)
    if _integer(declared, path) != len(pairs):
        problem = f"NR says {declared.text} relevant documents but RD lists {len(pairs)}"
        raise InputFormatError(path, declared.line, problem)
    rows = [
        {"query_id": query_id, "doc_id": doc_id}
        | {f"judge{judge}": score for judge, score in enumerate(scores, start=1)}
        for doc_id, scores in pairs
    ]
    return topic, rows


def _scores(row: dict) -> list[int]:
    return [row[f"judge{judge}"] for judge in range(1, 5)]


@reader("cf", SourceRoles(main=(frozenset({*DOC_ROLES, QUERY_ROLE}),)))
def read_cf(sources: Mapping[str, Path]) -> Collection:
    """Read CF; see the module docstring for the roles and the sets returned."""
    missing = [role for role in (*DOC_ROLES, QUERY_ROLE) if role not in sources]
    if missing:
        raise ConfigError(f"the cf reader needs the role(s) {', '.join(missing)}")
    query_path = Path(sources[QUERY_ROLE])
    topics, judgments = [], []
    for record in _records(query_path, _QUERY_CODES, "QN"):
        topic, rows = _query(record, query_path)
        topics.append(topic)
        judgments.extend(rows)
    binary = [Judgment(r["query_id"], r["doc_id"], int(max(_scores(r)) >= 1)) for r in judgments]
    graded = [Judgment(r["query_id"], r["doc_id"], sum(_scores(r))) for r in judgments]
    return Collection(
        docs=_documents([Path(sources[role]) for role in DOC_ROLES]),
        topics={"all": topics},
        qrels={"binary": binary, "graded": graded},
        tables={"judgments": judgments},
    )
