"""NTCIR-12 MathIR Wiki-Formula browsing task: formula topics, qrels and the formula collection.

The formula collection (about 591k formulas from English Wikipedia) is not distributed with
the topics: without a ``formulas`` source ``docs`` is ``None`` and the collection serves to
evaluate formula runs made elsewhere.

Roles:

* ``formulas`` (optional): the collection as the LaTeX list pya0's NTCIR-12 indexer reads
  (``corpus_reader__ntcir12_txt``), one formula per line: its id ``<Article>:<position>``
  (the id the qrels judge, e.g. ``Binomial_coefficient:197``), whitespace, then its TeX, where
  LaTeXML's ``% `` line wraps are removed. A document is ``id``, ``title`` (the article name,
  underscores as spaces) and ``text`` (the TeX, no delimiters).

* ``topics``: the official ``NTCIR12-MathWikiFormula-queries-participants.xml`` (40 topics, each
  one ``<formula>`` as MathML with a TeX annotation, in the MathML namespace). A topic is
  ``id`` (``<num>``, e.g. ``NTCIR12-MathWiki-1``), ``title`` (empty), ``text`` (the TeX),
  ``mathml`` (the ``<math>`` element as written) and ``wildcard`` (whether the query has query
  variables: ``<qvar>`` in MathML, ``\\qvar{*1*}`` in the TeX).
* ``qrels_<split>``, any number: TREC-style ``topic xxx docid relevance`` files, such as the
  MIR-MU ``NTCIR12_MathWikiFrm-qrels_agg-{train,validation,test}.dat`` (integer relevance
  0-4) or pya0's ``qrels.ntcir12-math-browsing.txt`` (the same judgments, written ``3.0``).

Sets: qrels for each split plus ``all``, their union (a (topic, doc) pair judged differently in
two places is an error); topics for each split (the topics its qrels judge) plus ``all``. The
qrels use the topic ids of the XML (``NTCIR12-MathWiki-<n>``) as they are; a qrels topic the
XML lacks is an error, since it could only mean a mismatched file.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path

from hybrid_ir.collections import Collection, SourceRoles, reader
from hybrid_ir.collections.arqmath import parse_xml
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.formats import Judgment, read_qrels

MATHML_NAMESPACE = "http://www.w3.org/1998/Math/MathML"
_TEX_ENCODING = "application/x-tex"
_ALL = "all"
_QRELS_ROLE = re.compile(r"qrels_(\w+)")
# LaTeXML wraps long TeX with ``%`` + newline; an unescaped ``%`` there only hides the newline.
_TEX_LINE_WRAP = re.compile(r"(?<!\\)%\n[ \t]*")


def _local_name(tag: str) -> str:
    return tag.rpartition("}")[2]


def _descendants(element: ET.Element, name: str) -> Iterator[ET.Element]:
    """Descendants with local name ``name``, whether or not the file uses the namespace."""
    return (child for child in element.iter() if _local_name(child.tag) == name)


def _unwrap_tex(tex: str) -> str:
    """The TeX on one line, as in pya0's topic file: line wraps removed, whitespace collapsed."""
    return " ".join(_TEX_LINE_WRAP.sub("", tex).split())


def _topic(element: ET.Element, number: int, path: Path) -> dict:
    topic_id = next((num.text or "" for num in _descendants(element, "num")), "").strip()
    formulas = list(_descendants(element, "formula"))
    if not topic_id or len(formulas) != 1:
        problem = f"topic number {number}: expected a <num> and one <formula>"
        raise InputFormatError(path, None, problem)
    maths = list(_descendants(formulas[0], "math"))
    tex = [
        note.text or ""
        for note in _descendants(formulas[0], "annotation")
        if note.get("encoding") == _TEX_ENCODING
    ]
    if len(maths) != 1 or len(tex) != 1:
        raise InputFormatError(path, None, f"{topic_id}: expected one <math> with a TeX annotation")
    return {
        "id": topic_id,
        "title": "",
        "text": _unwrap_tex(tex[0]),
        "mathml": _serialise(maths[0]),
        "wildcard": any(True for _ in _descendants(formulas[0], "qvar")),
    }


def _serialise(math: ET.Element) -> str:
    """The ``<math>`` element as MathML text, in the default namespace (no ``ns0:`` prefixes)."""
    plain = _without_namespace(math)
    plain.tail = None
    plain.set("xmlns", MATHML_NAMESPACE)
    return ET.tostring(plain, encoding="unicode")


def _without_namespace(element: ET.Element) -> ET.Element:
    copy = ET.Element(_local_name(element.tag), element.attrib)
    copy.text, copy.tail = element.text, element.tail
    copy.extend(_without_namespace(child) for child in element)
    return copy


def read_topics(path: Path) -> list[dict]:
    """The Wiki-Formula topics XML, one topic per ``<topic>``, in file order."""
    elements = _descendants(parse_xml(path), "topic")
    topics = [_topic(element, number, path) for number, element in enumerate(elements, start=1)]
    if not topics:
        raise InputFormatError(path, None, "no <topic> elements")
    return topics


def _union(splits: Mapping[str, list[Judgment]], paths: Mapping[str, Path]) -> list[Judgment]:
    """All judgments once each, in split order; the same pair judged twice must agree."""
    seen: dict[tuple[str, str], tuple[Judgment, str]] = {}
    for split, judgments in splits.items():
        for judgment in judgments:
            key = (judgment.query_id, judgment.doc_id)
            first, first_split = seen.setdefault(key, (judgment, split))
            if first.relevance != judgment.relevance:
                problem = (
                    f"{key[0]} {key[1]} has relevance {judgment.relevance} here and "
                    f"{first.relevance} in {paths[first_split]}"
                )
                raise InputFormatError(paths[split], None, problem)
    return [judgment for judgment, _ in seen.values()]


def _check_topic_ids(path: Path, judgments: list[Judgment], topic_ids: set[str]) -> None:
    unknown = sorted({judgment.query_id for judgment in judgments} - topic_ids)
    if unknown:
        shown = ", ".join(unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        raise InputFormatError(path, None, f"topic(s) not in the topics file: {shown}")


def _judged(topics: list[dict], judgments: list[Judgment]) -> list[dict]:
    """The topics that ``judgments`` judge, in topic order."""
    judged = {judgment.query_id for judgment in judgments}
    return [topic for topic in topics if topic["id"] in judged]


def read_formulas(path: Path) -> list[dict]:
    """The formula collection's LaTeX list, one document per formula, in file order."""
    documents: list[dict] = []
    seen: set[str] = set()
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            formula_id, *rest = line.split(None, 1)
            tex = " ".join("".join(rest).replace("% ", "").split())
            article, colon, position = formula_id.rpartition(":")
            if not colon or not article or not position.isdigit():
                problem = f"expected '<Article>:<position> <TeX>', got {line.strip()[:80]!r}"
                raise InputFormatError(path, number, problem)
            if not tex:
                raise InputFormatError(path, number, f"formula {formula_id} has no TeX")
            if formula_id in seen:
                raise InputFormatError(path, number, f"formula {formula_id} is listed twice")
            seen.add(formula_id)
            documents.append({"id": formula_id, "title": article.replace("_", " "), "text": tex})
    if not documents:
        raise InputFormatError(path, None, "no formulas")
    return documents


def _qrels_paths(sources: Mapping[str, Path]) -> dict[str, Path]:
    """The ``qrels_<split>`` roles by split; any role but those, ``topics`` and ``formulas`` is
    an error."""
    paths = {}
    for role, path in sources.items():
        if role in ("topics", "formulas"):
            continue
        match = _QRELS_ROLE.fullmatch(role)
        if match is None or match.group(1) == _ALL:
            raise ConfigError(
                f"unknown role {role!r}: expected topics, formulas or qrels_<split> (not "
                f"qrels_{_ALL}, which is the union the reader makes)"
            )
        paths[match.group(1)] = Path(path)
    return paths


@reader(
    "ntcir12_wiki_formula",
    SourceRoles(
        main=(frozenset({"topics", "formulas"}), frozenset({"topics"})),
        per_set_qrels=True,
        derived_sets=frozenset({_ALL}),
    ),
)
def read_ntcir12_wiki_formula(sources: Mapping[str, Path]) -> Collection:
    """NTCIR-12 Wiki-Formula topics (role ``topics``), qrels (roles ``qrels_<split>``) and,
    when given, the formula collection (role ``formulas``)."""
    if "topics" not in sources:
        raise ConfigError("the ntcir12_wiki_formula reader needs a 'topics' source")
    topics = read_topics(Path(sources["topics"]))
    topic_ids = {topic["id"] for topic in topics}
    paths = _qrels_paths(sources)
    qrels = {split: read_qrels(path) for split, path in paths.items()}
    for split, judgments in qrels.items():
        _check_topic_ids(paths[split], judgments, topic_ids)
    topic_sets = {split: _judged(topics, judgments) for split, judgments in qrels.items()}
    if qrels:
        qrels[_ALL] = _union(qrels, paths)
    docs = read_formulas(Path(sources["formulas"])) if "formulas" in sources else None
    return Collection(docs=docs, topics={**topic_sets, _ALL: topics}, qrels=qrels)
