"""NTCIR-12 MathIR Wiki-Formula browsing task: formula topics, qrels and the formula collection.

The formula collection (about 591k formulas from English Wikipedia) is not distributed with
the topics: without an ``articles`` or ``formulas`` source ``docs`` is ``None`` and the
collection serves to evaluate formula runs made elsewhere.

Roles:

* ``articles`` (optional): the collection as the organisers distribute it, the NTCIR-12 MathIR
  Wikipedia corpus (v0.2.1): one ``.tar.bz2`` (or ``.zip``) of XHTML articles, one file per
  article named ``<Article>.html`` (``MathTagArticles/wpmath0000001/Articles/Ring.html``, also
  ``Articles_LaTeXML_Errors/`` and ``TextArticles/``), where the per-directory ``.tar.bz2``
  archives the release nests inside are opened in turn. Each formula is a MathML ``<math>``
  element with its TeX in ``<annotation encoding="application/x-tex">`` or, failing that, in
  its ``alttext`` attribute. Its id, the one the qrels judge, is ``<Article>:<n>`` with ``n``
  the 0-based position of the ``<math>`` element in the article file: Tangent-CFT
  (``DataReader/wiki_data_reader.py``, by the task organisers' group) numbers the formulas it
  reads from ``MathTagArticles/*/Articles/*.html`` this way (``enumerate`` over every
  ``<math>...</math>`` of the file) and evaluates against the official judgments, whose ids it
  keeps (``Retrieval_Results/judge.dat`` holds pya0's 1,202 concrete-topic judgments). A
  formula without TeX keeps its position (so later ids stay right) but is not a document; such
  formulas are counted and logged with the first few ids. Articles are read one at a time, in
  archive order.
* ``formulas`` (optional, instead of ``articles``): the collection as the LaTeX list pya0's
  NTCIR-12 indexer reads (``corpus_reader__ntcir12_txt``), one formula per line: its id
  ``<Article>:<position>`` (the id the qrels judge, e.g. ``Binomial_coefficient:197``),
  whitespace, then its TeX, where LaTeXML's ``% `` line wraps are removed.

  Either way a document is ``id``, ``title`` (the article name, underscores as spaces) and
  ``text`` (the TeX, no delimiters, on one line).

* ``topics``: the official ``NTCIR12-MathWikiFormula-queries-participants.xml`` (40 topics, each
  one ``<formula>`` as MathML with a TeX annotation, in the MathML namespace). A topic is
  ``id`` (``<num>``, e.g. ``NTCIR12-MathWiki-1``), ``title`` (empty), ``text`` (the TeX),
  ``mathml`` (the ``<math>`` element as written) and ``wildcard`` (whether the query has query
  variables: ``<qvar>`` in MathML, ``\\qvar{*1*}`` in the TeX).
* ``qrels_<split>``, any number: TREC-style ``topic xxx docid relevance`` files, such as the
  MIR-MU ``NTCIR12_MathWikiFrm-qrels_agg-{train,validation,test}.dat`` (integer relevance
  0-4) or pya0's ``qrels.ntcir12-math-browsing.txt`` (the same judgments, written ``3.0``).

Sets: qrels for each split plus ``all``, their union (a (topic, doc) pair judged differently in
two places is an error), and ``concrete``, the union's judgments of the concrete topics;
topics for each split (the topics its qrels judge) plus ``all`` and ``concrete``, the topics
without query variables (20 of the 40, NTCIR12-MathWiki-1 to -20: the topics paper 000
searches, pya0's ``ntcir12-math-browsing-concrete`` topics and qrels). The qrels use the topic
ids of the XML (``NTCIR12-MathWiki-<n>``) as they are; a qrels topic the XML lacks is an error,
since it could only mean a mismatched file.
"""

from __future__ import annotations

import html
import logging
import re
import tarfile
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import IO

from hybrid_ir.data.collections import Collection, SourceRoles, reader
from hybrid_ir.data.collections.arqmath import parse_xml
from hybrid_ir.data.formats import read_whole
from hybrid_ir.data.qrels import Judgment, read_judgments
from hybrid_ir.errors import ConfigError, InputFormatError

MATHML_NAMESPACE = "http://www.w3.org/1998/Math/MathML"
_TEX_ENCODING = "application/x-tex"
_ALL = "all"
_CONCRETE = "concrete"
_CORPUS_ROLES = ("articles", "formulas")
_QRELS_ROLE = re.compile(r"qrels_(\w+)")
# LaTeXML wraps long TeX with ``%`` + newline; an unescaped ``%`` there only hides the newline.
_TEX_LINE_WRAP = re.compile(r"(?<!\\)%\n[ \t]*")
# A <math> element, namespace prefix or not, as Tangent's MathExtractor.math_tokens finds them.
_MATH_OPEN = re.compile(r"<(?:[^<>\s:/]+:)?math(?=[\s>])")
_MATH = re.compile(r"<(?:[^<>\s:/]+:)?math[\s>].*?</(?:[^<>\s:/]+:)?math\s*>", re.DOTALL)
_TEX_ANNOTATION = re.compile(
    r"<(?:[^<>\s:/]+:)?annotation\s[^>]*encoding\s*=\s*[\"']application/x-tex[\"'][^>]*>"
    r"(.*?)</(?:[^<>\s:/]+:)?annotation\s*>",
    re.DOTALL,
)
_ALTTEXT = re.compile(r"^<[^>]*\salttext\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_ARTICLE_SUFFIX = ".html"
_NESTED_ARCHIVES = (".tar.bz2", ".tbz2", ".tar.gz", ".tgz", ".tar.xz", ".tar")
_SHOWN = 5

logger = logging.getLogger(__name__)


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
            # pya0's order: whitespace collapsed first, so a wrap's indentation goes too.
            tex = " ".join("".join(rest).split()).replace("% ", "")
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


def _math_tex(element: str) -> str:
    """The TeX of one ``<math>`` element: its TeX annotation, else its ``alttext``; may be
    empty."""
    annotation = _TEX_ANNOTATION.search(element)
    if annotation is not None and annotation.group(1).strip():
        return _unwrap_tex(html.unescape(annotation.group(1)))
    alttext = _ALTTEXT.match(element)
    if alttext is None:
        return ""
    return _unwrap_tex(html.unescape(alttext.group(1) or alttext.group(2) or ""))


def _article_formulas(article: str, content: str, where: str) -> Iterator[tuple[str, str]]:
    """``(formula id, TeX)`` of each ``<math>`` of one article in document order; the id's
    position counts every ``<math>``, with TeX or not (the TeX is then empty)."""
    elements = list(_MATH.finditer(content))
    opened = list(_MATH_OPEN.finditer(content))
    if len(opened) != len(elements):
        starts = {element.start() for element in elements}
        stray = next(tag.start() for tag in opened if tag.start() not in starts)
        # An unclosed element's match runs on to the next element's </math>, swallowing its start.
        owner = next((e.start() for e in elements if e.start() < stray < e.end()), stray)
        line = content.count("\n", 0, owner) + 1
        problem = "a <math> element is not closed (no </math> before the next <math> or the end)"
        raise InputFormatError(where, line, problem)
    for position, element in enumerate(elements):
        yield f"{article}:{position}", _math_tex(element.group(0))


def _archive_members(path: Path) -> Iterator[tuple[str, str, bytes]]:
    """``(where, file name, bytes)`` of every article file in a tar or zip archive and in the
    archives it nests, in archive order, one at a time."""
    where = str(path)
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    if not info.is_dir():
                        with archive.open(info) as handle:
                            yield from _member(where, info.filename, handle)
            return
        with tarfile.open(path, mode="r|*") as tar:
            yield from _tar_members(where, tar)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as error:
        raise InputFormatError(path, None, f"not a readable tar or zip archive: {error}") from None


def _tar_members(where: str, tar: tarfile.TarFile) -> Iterator[tuple[str, str, bytes]]:
    for info in tar:
        if info.isfile():
            handle = tar.extractfile(info)
            if handle is not None:
                yield from _member(where, info.name, handle)


def _member(where: str, name: str, handle: IO[bytes]) -> Iterator[tuple[str, str, bytes]]:
    """An article (``.html``), the articles of a nested tar archive, or nothing (a README)."""
    if name.endswith(_ARTICLE_SUFFIX):
        yield f"{where}[{name}]", PurePosixPath(name).name, read_whole(handle, f"{where}[{name}]")
    elif name.endswith(_NESTED_ARCHIVES):
        try:
            with tarfile.open(fileobj=handle, mode="r|*") as nested:
                yield from _tar_members(f"{where}[{name}]", nested)
        except (tarfile.TarError, EOFError, OSError) as error:
            raise InputFormatError(
                f"{where}[{name}]", None, f"not a readable tar archive: {error}"
            ) from None
    else:
        logger.info("%s[%s]: not an article (.html) or an archive of them, not read", where, name)


def read_articles(path: Path) -> Iterator[dict]:
    """The formulas of the official corpus archive, one document per formula with TeX, article
    by article in archive order; the formulas without TeX are logged once at the end."""
    articles: dict[str, str] = {}
    formulas = 0
    without_tex: list[str] = []
    for where, file_name, raw in _archive_members(path):
        article = file_name[: -len(_ARTICLE_SUFFIX)]
        if article in articles:
            raise InputFormatError(where, None, f"article {article!r} also in {articles[article]}")
        articles[article] = where
        try:
            content = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            line = raw.count(b"\n", 0, error.start) + 1
            raise InputFormatError(where, line, f"not UTF-8: {error.reason}") from None
        title = article.replace("_", " ")
        for formula_id, tex in _article_formulas(article, content, where):
            formulas += 1
            if tex:
                yield {"id": formula_id, "title": title, "text": tex}
            else:
                without_tex.append(formula_id)
    if not formulas:
        raise InputFormatError(path, None, "no <math> element in any .html article")
    logger.info("%s: %d articles, %d formulas", path, len(articles), formulas)
    if without_tex:
        shown = ", ".join(without_tex[:_SHOWN]) + (" ..." if len(without_tex) > _SHOWN else "")
        logger.warning(
            "%s: %d of %d formulas have no TeX (no x-tex annotation, no alttext) and are not "
            "documents: %s",
            path,
            len(without_tex),
            formulas,
            shown,
        )


def _qrels_paths(sources: Mapping[str, Path]) -> dict[str, Path]:
    """The ``qrels_<split>`` roles by split; any role but those, ``topics``, ``articles`` and
    ``formulas`` is an error."""
    paths = {}
    for role, path in sources.items():
        if role == "topics" or role in _CORPUS_ROLES:
            continue
        match = _QRELS_ROLE.fullmatch(role)
        if match is None or match.group(1) in (_ALL, _CONCRETE):
            raise ConfigError(
                f"unknown role {role!r}: expected topics, articles, formulas or qrels_<split> "
                f"(not qrels_{_ALL} or qrels_{_CONCRETE}, which the reader makes)"
            )
        paths[match.group(1)] = Path(path)
    return paths


@reader(
    "ntcir12_wiki_formula",
    SourceRoles(
        main=(
            frozenset({"topics", "articles"}),
            frozenset({"topics", "formulas"}),
            frozenset({"topics"}),
        ),
        per_set_qrels=True,
        derived_sets=frozenset({_ALL, _CONCRETE}),
    ),
)
def read_ntcir12_wiki_formula(sources: Mapping[str, Path]) -> Collection:
    """NTCIR-12 Wiki-Formula topics (role ``topics``), qrels (roles ``qrels_<split>``) and,
    when given, the formula collection (role ``articles``, the official archive, or
    ``formulas``, pya0's LaTeX list)."""
    if "topics" not in sources:
        raise ConfigError("the ntcir12_wiki_formula reader needs a 'topics' source")
    if all(role in sources for role in _CORPUS_ROLES):
        raise ConfigError("give the formula collection once: an 'articles' or a 'formulas' source")
    topics = read_topics(Path(sources["topics"]))
    topic_ids = {topic["id"] for topic in topics}
    paths = _qrels_paths(sources)
    qrels = {split: read_judgments(path) for split, path in paths.items()}
    for split, judgments in qrels.items():
        _check_topic_ids(paths[split], judgments, topic_ids)
    topic_sets = {split: _judged(topics, judgments) for split, judgments in qrels.items()}
    concrete = [topic for topic in topics if not topic["wildcard"]]
    if qrels:
        qrels[_ALL] = _union(qrels, paths)
        concrete_ids = {topic["id"] for topic in concrete}
        qrels[_CONCRETE] = [j for j in qrels[_ALL] if j.query_id in concrete_ids]
    docs: Iterator[dict] | list[dict] | None = None
    if "articles" in sources:
        docs = read_articles(Path(sources["articles"]))
    elif "formulas" in sources:
        docs = read_formulas(Path(sources["formulas"]))
    return Collection(
        docs=docs, topics={**topic_sets, _ALL: topics, _CONCRETE: concrete}, qrels=qrels
    )
