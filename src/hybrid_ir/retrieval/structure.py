"""Approach0 structure search (paper 000 §3.4): its documents and queries, in plain Python.

The engine itself (pya0 0.3.7's native index and search) is driven by
:mod:`hybrid_ir.retrieval.approach0`; this module prepares what it reads, with no pya0 import:

* Documents: a corpus record rendered by a template over its fields (for ARQMath, pya0's
  ``Title\\n\\nQuestion\\n\\n__ANSWER__\\n\\nAnswer``), each ``$...$`` formula written
  ``[imath]...[/imath]`` as pya0's corpus readers do, LaTeXML's ``%`` line wraps removed.
* Terms: words (``\\w+``) optionally Porter- or Lancaster-stemmed, the same way in documents
  and queries. pya0 tokenizes with NLTK's ``word_tokenize``, which needs the ``punkt_tab`` data
  set (a download): a regular expression does the job here, and NLTK's stemmers need no data.
* Queries: pya0's own keyword files where configured (ARQMath-1's ``kw`` JSON list, the refined
  ARQMath-2 TSV: first column one ``term`` keyword, each further column a ``tex`` keyword);
  otherwise built from the topic by :func:`built_query`.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hybrid_ir.data.pretok import MATH_PATTERN, formula_tex
from hybrid_ir.errors import ConfigError, InputFormatError

MATH_OPEN, MATH_CLOSE = "[imath]", "[/imath]"
_MARKED_MATH = re.compile(r"\[imath\](.*?)\[/imath\]", re.DOTALL)
# LaTeXML wraps long alttext with an unescaped ``%`` (a TeX comment hiding the line break).
_TEX_LINE_WRAP = re.compile(r"(?<!\\)%\s*")
_WORD = re.compile(r"\w+")
STEMMERS = ("porter", "lancaster")


def clean_tex(latex: str) -> str:
    """One formula's TeX on one line, without LaTeXML's ``%`` line wraps."""
    return " ".join(_TEX_LINE_WRAP.sub("", latex).split())


class Terms:
    """Word tokenization and optional stemming shared by documents and queries."""

    def __init__(self, stemmer: str | None):
        if stemmer is None:
            self._stem = None
        elif stemmer in STEMMERS:
            from nltk.stem import LancasterStemmer, PorterStemmer

            self._stem = (PorterStemmer() if stemmer == "porter" else LancasterStemmer()).stem
        else:
            raise ConfigError(f"unknown stemmer {stemmer!r}; choose {', '.join(STEMMERS)} or null")
        self._cache: dict[str, str] = {}

    def words(self, text: str) -> list[str]:
        words = _WORD.findall(text.lower())
        if self._stem is None:
            return words
        return [self._cached_stem(word) for word in words]

    def _cached_stem(self, word: str) -> str:
        stemmed = self._cache.get(word)
        if stemmed is None:
            stemmed = self._cache[word] = self._stem(word)  # type: ignore[misc]
        return stemmed

    def __call__(self, text: str) -> str:
        return " ".join(self.words(text))


def marked_math(text: str, terms: Terms) -> str:
    """``text`` with each formula as ``[imath]tex[/imath]`` and the words around it as terms."""
    pieces = []
    last = 0
    for match in MATH_PATTERN.finditer(text):
        pieces.append(terms(text[last : match.start()]))
        pieces.append(f"{MATH_OPEN}{clean_tex(formula_tex(match))}{MATH_CLOSE}")
        last = match.end()
    pieces.append(terms(text[last:]))
    return " ".join(piece for piece in pieces if piece)


def formulas_in(document: str) -> list[str]:
    """The TeX of every ``[imath]`` formula of a rendered document."""
    return _MARKED_MATH.findall(document)


@dataclass(frozen=True)
class DocumentTemplate:
    """How a corpus record becomes one Approach0 document.

    ``template`` is a Python format string over the record's fields, e.g.
    ``{title}\\n\\n{question}\\n\\n__ANSWER__\\n\\n{text}``; each field's text goes through
    :func:`marked_math`, and ``formula_fields`` are fields holding one bare formula each (the
    NTCIR-12 formula collection), written ``[imath]...[/imath]`` whole.
    """

    template: str
    formula_fields: tuple[str, ...] = ()

    def fields(self) -> list[str]:
        import string

        return [name for _, name, _, _ in string.Formatter().parse(self.template) if name]

    def render(self, record: Mapping, terms: Terms, where: str) -> str:
        values = {}
        for name in self.fields():
            value = record.get(name)
            if value is None:
                raise InputFormatError(
                    where,
                    None,
                    f"document {record.get('id')!r} has no field {name!r}, which the "
                    f"Approach0 document template {self.template!r} needs",
                )
            if name in self.formula_fields:
                values[name] = f"{MATH_OPEN}{clean_tex(str(value))}{MATH_CLOSE}"
            else:
                values[name] = marked_math(str(value), terms)
        return self.template.format(**values)


# Queries ------------------------------------------------------------------------------------


def keyword(kind: str, text: str, boosts: Mapping[str, float]) -> dict:
    # pya0 returns no hits at all when a boost is an int: always a float.
    return {"type": kind, "str": text, "boost": float(boosts[kind])}


@dataclass(frozen=True)
class QueryRule:
    """How a topic without a pya0 keyword file entry becomes a query (documented in the schema):
    one ``term`` keyword of the words of ``term_fields``; one ``tex`` keyword per distinct
    formula of ``formula_fields`` (``$...$`` in text) and per whole-formula field
    (``tex_fields``, e.g. NTCIR-12's TeX), at most ``max_formulas``, in order of appearance."""

    term_fields: tuple[str, ...] = ("title",)
    formula_fields: tuple[str, ...] = ("title", "text")
    tex_fields: tuple[str, ...] = ()
    max_formulas: int = 3

    @classmethod
    def from_entry(cls, entry: Mapping) -> QueryRule:
        return cls(
            term_fields=tuple(entry["term_fields"]),
            formula_fields=tuple(entry["formula_fields"]),
            tex_fields=tuple(entry["tex_fields"]),
            max_formulas=entry["max_formulas"],
        )


def built_query(topic: Mapping, rule: QueryRule, terms: Terms, boosts: Mapping[str, float]):
    query = []
    words = terms(" ".join(_without_math(str(topic.get(f) or "")) for f in rule.term_fields))
    if words:
        query.append(keyword("term", words, boosts))
    formulas: list[str] = []
    for name in rule.tex_fields:
        tex = clean_tex(str(topic.get(name) or ""))
        if tex:
            formulas.append(tex)
    for name in rule.formula_fields:
        for match in MATH_PATTERN.finditer(str(topic.get(name) or "")):
            formulas.append(clean_tex(formula_tex(match)))
    distinct = list(dict.fromkeys(f for f in formulas if f))[: rule.max_formulas]
    query += [keyword("tex", tex, boosts) for tex in distinct]
    return query


def _without_math(text: str) -> str:
    return MATH_PATTERN.sub(" ", text)


def read_keyword_file(path: str | Path, terms: Terms, boosts: Mapping[str, float]):
    """Topic id -> keywords from one of pya0's query files: a JSON list of ``{qid, kw}``
    (ARQMath-1's ``topics.arqmath-2020-task1.json``) or a refined TSV with a header line
    (``topics.arqmath-2021-task1-refined.txt``: id, terms, then one formula per column).
    Empty columns are skipped (pya0 would send them as empty ``tex`` keywords)."""
    path = Path(path)
    queries: dict[str, list[dict]] = {}
    if path.suffix == ".json":
        try:
            items = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise InputFormatError(path, error.lineno, f"not JSON: {error.msg}") from None
        if not isinstance(items, list):
            raise InputFormatError(path, None, "expected a JSON list of {qid, kw} objects")
        for number, item in enumerate(items, start=1):
            if not isinstance(item, dict) or "qid" not in item or "kw" not in item:
                raise InputFormatError(path, None, f"item {number}: needs 'qid' and 'kw'")
            keywords = []
            for kw in item["kw"]:
                if kw.get("type") not in ("term", "tex") or not isinstance(kw.get("str"), str):
                    raise InputFormatError(
                        path, None, f"topic {item['qid']!r}: a keyword needs type term|tex and str"
                    )
                text = terms(kw["str"]) if kw["type"] == "term" else clean_tex(kw["str"])
                if text:
                    keywords.append(keyword(kw["type"], text, boosts))
            _add_query(queries, str(item["qid"]), keywords, path, None)
        return queries
    with open(path, encoding="utf-8", newline="") as handle:
        for number, row in enumerate(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)):
            if number == 0 or not row or not "".join(row).strip():
                continue  # the header line
            topic, *columns = row
            keywords = []
            if columns and terms(columns[0]):
                keywords.append(keyword("term", terms(columns[0]), boosts))
            keywords += [
                keyword("tex", clean_tex(tex), boosts) for tex in columns[1:] if tex.strip()
            ]
            _add_query(queries, topic.strip(), keywords, path, number + 1)
    return queries


def _add_query(queries: dict, topic: str, keywords: list, path: Path, line: int | None) -> None:
    if topic in queries:
        raise InputFormatError(path, line, f"topic {topic!r} is listed twice")
    queries[topic] = keywords


def topic_queries(
    topics: Iterable[Mapping],
    keyword_file: Mapping[str, list[dict]] | None,
    rule: QueryRule,
    terms: Terms,
    boosts: Mapping[str, float],
    where: str,
) -> list[dict]:
    """One query per topic, ``{id, keywords, origin}``: from the keyword file when it lists
    the topic, else built by ``rule``. A topic with neither terms nor formulas is an error."""
    queries = []
    for topic in topics:
        topic_id = str(topic["id"])
        if keyword_file is not None and topic_id in keyword_file:
            keywords, origin = keyword_file[topic_id], "pya0 keyword file"
        else:
            keywords, origin = built_query(topic, rule, terms, boosts), "built from the topic"
        if not keywords:
            raise InputFormatError(
                where, None, f"topic {topic_id!r} has neither words nor formulas to search with"
            )
        queries.append({"id": topic_id, "keywords": keywords, "origin": origin})
    return queries
