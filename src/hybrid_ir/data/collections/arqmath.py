"""ARQMath (Math StackExchange answer retrieval, CLEF 2020-2022): collection, topics, qrels, labels.

Two readers share one HTML renderer, so a document reads the same whichever official format it
came from:

* ``arqmath_html``: the ARQMath HTML thread pages (one ``<questionid>_<answerid>.html`` page per
  answer, as in the MathDowsers ``html_minimal`` sample), from a ``.tar.gz`` or a directory;
* ``arqmath_posts_xml``: the Math StackExchange dump format ``Posts.xml``. ARQMath's copy wraps
  each formula in a ``math-container`` span with a formula id (so does the approach0
  ``sample.xml`` it is tested on, a 13-row excerpt whose titles hold spans too); the raw
  Stack Exchange dump has bare ``$...$``/``$$...$$`` instead. Both are read.

Both emit one document per answer: ``id`` (answer post id), ``title`` (question title),
``text`` (answer body), ``question_id``, ``question`` (question body), ``tags`` and
``formulas``; the Posts.xml reader adds, where the dump has them, ``score``, ``accepted``,
``date`` and ``question_date`` (the answer's and question's ``CreationDate``, as written), and
with a PostLinks.xml source, ``duplicates`` (the ids of the questions linked to the answer's
question as duplicates, ``LinkTypeId`` 3).
Bodies become plain text, one line per HTML block, each formula written ``$<latex>$``.
``formulas`` lists ``{"id", "latex"}`` for the title, question and answer formulas in that
order; ``id`` is the ARQMath formula id of the ``math-container`` span, ``None`` where the
source has none (raw ``$...$`` text, some unconverted spans).

Roles: ``threads`` (HTML reader) or ``posts`` and optionally ``post_links`` (Posts.xml
reader); optionally, for any set name
such as ``arqmath1``/``arqmath2``: ``topics_<set>`` (Task-1 topics XML), ``qrels_<set>`` (TREC
qrels) and ``labels_<set>`` (topic labels: MathDowsers ``.json`` or ARQMath ``.csv``). The
labels of all sets go to the ``topic_labels`` table with columns ``topic_id``, ``set``,
``category``, ``difficulty``, ``dependency``; values are kept as the organisers wrote them,
which differ between years (ARQMath-1: Easy/Medium/Hard and Computation; ARQMath-2:
Low/Medium/High and Calculation).
"""

from __future__ import annotations

import csv
import json
import logging
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from xml.parsers import expat

from hybrid_ir.data.collections import Collection, SourceRoles, reader
from hybrid_ir.data.collections.arqmath_html import (
    Rendered,
    answer_doc,
    numeric_id,
    read_threads,
    render_html,
)
from hybrid_ir.data.formats import open_text
from hybrid_ir.data.qrels import Judgment, read_judgments
from hybrid_ir.errors import ConfigError, InputFormatError, quoted

logger = logging.getLogger(__name__)

_OPTIONAL_ROLE = re.compile(r"(topics|qrels|labels)_(\w+)")
_QUESTION, _ANSWER = "1", "2"


# --------------------------------------------------------------------------- HTML rendering


# --------------------------------------------------------------------------- documents


# --------------------------------------------------------------------------- HTML threads


# --------------------------------------------------------------------------- Posts.xml


@dataclass
class PostsStats:
    """What a pass over Posts.xml found; ``orphans`` are answers whose question was not seen."""

    answers: int = 0
    orphans: int = 0


@dataclass(frozen=True, slots=True)
class _Question:
    """What an answer takes from its question. Every question of the file stays in memory until
    the end (a million for ARQMath), so it is kept compact: plain texts, and its title's and
    body's formulas as one JSON string rather than a list of dicts (less than half the size)."""

    title: str
    body: str
    formulas: str
    tags: tuple[str, ...]
    accepted_answer_id: str | None
    date: str | None


_NO_QUESTION = _Question("", "", "[]", (), None, None)


def _split_tags(tags: str) -> list[str]:
    """``<a><b>`` (Posts.xml) into ``["a", "b"]``, each name interned (a few thousand names
    shared by a million questions)."""
    return [sys.intern(tag) for tag in re.split(r"[<>]", tags) if tag]


def _iter_rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line, attributes)`` of each ``<row>``, streamed: a real Posts.xml is about 15 GB.

    Expat rather than ElementTree, because it tells the line of each row, so that a bad value
    is reported where it is.
    """
    rows: list[tuple[int, dict[str, str]]] = []
    parser = expat.ParserCreate()

    def start(tag: str, attributes: dict[str, str]) -> None:
        if tag == "row":
            rows.append((parser.CurrentLineNumber, attributes))

    parser.StartElementHandler = start
    with open_text(path) as handle:
        try:
            for chunk in iter(lambda: handle.read(1 << 20), ""):
                parser.Parse(chunk, False)
                yield from rows
                rows.clear()
            parser.Parse("", True)
        except expat.ExpatError as error:
            raise InputFormatError(path, error.lineno, f"malformed XML: {error}") from None
        except LookupError as error:
            raise InputFormatError(path, 1, f"malformed XML: {error}") from None
    yield from rows


def read_posts_answers(
    path: Path, stats: PostsStats | None = None, duplicates: Mapping[str, list[str]] | None = None
) -> Iterator[dict]:
    """Answer documents of a Posts.xml file, lazily, in file order.

    A question must come before its answers, as in the dumps (sorted by post id, and an answer
    is always younger than its question); only questions are kept in memory. An answer whose
    question was not seen is kept with an empty title, question and tags, no ``accepted``, and
    is counted in ``stats.orphans`` and logged. Rows of other post types (tag wikis...) are
    skipped. With ``duplicates`` (question id -> its duplicate questions, from
    :func:`read_post_links`), every answer lists its question's duplicates in ``duplicates``.
    """
    stats = stats if stats is not None else PostsStats()
    questions: dict[str, _Question] = {}
    for line, row in _iter_rows(path):
        post_id, post_type = row.get("Id"), row.get("PostTypeId")
        if not post_id or not post_type:
            raise InputFormatError(path, line, "row lacks Id or PostTypeId")
        if post_type == _QUESTION:
            questions[post_id] = _read_question(path, line, row)
        elif post_type == _ANSWER:
            stats.answers += 1
            doc = _post_doc(path, line, row, questions, stats)
            if duplicates is not None:
                doc["duplicates"] = duplicates.get(doc["question_id"], [])
            yield doc
    if stats.orphans:
        logger.warning(
            "%s: %d of %d answers have no question in the file; kept with an empty title",
            path,
            stats.orphans,
            stats.answers,
        )


def _read_question(path: Path, line: int, row: Mapping[str, str]) -> _Question:
    label = f"question {row.get('Id')}"
    title = render_html(row.get("Title", ""), path, label)
    body = render_html(row.get("Body", ""), path, label)
    return _Question(
        title=title.text,
        body=body.text,
        formulas=json.dumps(title.formulas + body.formulas),
        tags=tuple(_split_tags(row.get("Tags", ""))),
        accepted_answer_id=row.get("AcceptedAnswerId"),
        date=_date(path, line, row),
    )


def _post_doc(
    path: Path,
    line: int,
    row: Mapping[str, str],
    questions: Mapping[str, _Question],
    stats: PostsStats,
) -> dict:
    answer_id, question_id = row["Id"], row.get("ParentId")
    if not question_id:
        raise InputFormatError(path, line, f"answer {answer_id} has no ParentId")
    question = questions.get(question_id)
    if question is None:
        stats.orphans += 1
        question = _NO_QUESTION
    doc = answer_doc(
        answer_id,
        render_html(row.get("Body", ""), path, f"answer {answer_id}"),
        question_id,
        # The title's and the body's formulas, in that order, travel with the title.
        Rendered(question.title, json.loads(question.formulas)),
        Rendered(question.body, []),
        list(question.tags),
    )
    if "Score" in row:
        doc["score"] = _score(path, line, answer_id, row["Score"])
    if question_id in questions:
        doc["accepted"] = question.accepted_answer_id == answer_id
    date = _date(path, line, row)
    if date is not None:
        doc["date"] = date
    if question.date is not None:
        doc["question_date"] = question.date
    return doc


def _score(path: Path, line: int, answer_id: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InputFormatError(path, line, f"answer {answer_id}: Score {quoted(value)}") from None


def _date(path: Path, line: int, row: Mapping[str, str]) -> str | None:
    """A row's ``CreationDate`` as written (ISO 8601, e.g. ``2010-07-20T19:09:27.200``)."""
    value = row.get("CreationDate")
    if value is None:
        return None
    try:
        datetime.fromisoformat(value)
    except ValueError:
        problem = f"post {row.get('Id')}: CreationDate {quoted(value)} is not an ISO 8601 date"
        raise InputFormatError(path, line, problem) from None
    return value


_DUPLICATE_LINK = "3"  # LinkTypeId 1 is "linked", a weaker relation pya0 does not train on


def read_post_links(path: Path) -> dict[str, list[str]]:
    """Duplicate questions from PostLinks.xml (``<row PostId RelatedPostId LinkTypeId>``):
    question id -> the ids of the questions linked to it as duplicates, either way round,
    sorted numerically."""
    duplicates: dict[str, set[str]] = {}
    for line, row in _iter_rows(path):
        values = [row.get(key) for key in ("PostId", "RelatedPostId", "LinkTypeId")]
        if not all(values):
            raise InputFormatError(path, line, "row lacks PostId, RelatedPostId or LinkTypeId")
        post, related, kind = values
        assert post and related  # checked just above, for the type checker
        if kind == _DUPLICATE_LINK and post != related:
            duplicates.setdefault(post, set()).add(related)
            duplicates.setdefault(related, set()).add(post)
    return {post: sorted(linked, key=numeric_id) for post, linked in duplicates.items()}


# --------------------------------------------------------------------------- topics and labels


def parse_xml(path: Path) -> ET.Element:
    """The root of a small XML file; a syntax error names the file and the parser's line."""
    with open_text(path) as handle:
        try:
            return ET.parse(handle).getroot()
        except ET.ParseError as error:
            raise InputFormatError(path, error.position[0], f"malformed XML: {error}") from None
        except LookupError as error:  # an encoding declaration Python does not know
            raise InputFormatError(path, 1, f"malformed XML: {error}") from None


def read_topics(path: Path) -> list[dict]:
    """ARQMath Task-1 topics (``<Topic number><Title><Question><Tags>``, HTML in the text)."""
    topics = []
    first: dict[str, int] = {}
    for number, element in enumerate(parse_xml(path).iter("Topic"), start=1):
        topic_id = element.get("number")
        if not topic_id:
            raise InputFormatError(path, None, f"<Topic> number {number} has no number attribute")
        earlier = first.setdefault(topic_id, number)
        if earlier != number:
            raise InputFormatError(
                path,
                _topic_line(path, number),
                f"topic {quoted(topic_id)} repeats the one on line {_topic_line(path, earlier)}: "
                "topic numbers must be unique",
            )
        title = render_html(element.findtext("Title", ""), path, f"topic {topic_id}")
        question = render_html(element.findtext("Question", ""), path, f"topic {topic_id}")
        tags = element.findtext("Tags", "")
        topics.append(
            {
                "id": topic_id,
                "title": title.text,
                "text": question.text,
                "tags": [tag.strip() for tag in tags.split(",") if tag.strip()],
                "formulas": title.formulas + question.formulas,
            }
        )
    if not topics:
        raise InputFormatError(path, None, "no <Topic> elements")
    return topics


_TOPIC_TAG = re.compile(r"<Topic[\s>/]")


def _topic_line(path: Path, position: int) -> int | None:
    """The line of the ``position``-th ``<Topic>`` start tag, for an error about that topic
    (ElementTree keeps no line numbers)."""
    seen = 0
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            seen += len(_TOPIC_TAG.findall(line))
            if seen >= position:
                return number
    return None


# Label columns under the names the organisers (CSV) and MathDowsers (JSON) gave them,
# compared after lower-casing and dropping everything but letters.
_LABEL_COLUMNS = {
    "topic": "topic_id",
    "topicid": "topic_id",
    "category": "category",
    "topictype": "category",
    "difficulty": "difficulty",
    "dependency": "dependency",
    "dependence": "dependency",
}
_LABELS = ("category", "difficulty", "dependency")


def _column(name: str) -> str | None:
    return _LABEL_COLUMNS.get(re.sub(r"[^a-z]", "", name.lower()))


def _label_row(entry: Mapping[str, object], set_name: str, where: tuple[Path, int | None]) -> dict:
    values = {_column(key): str(value) for key, value in entry.items() if _column(key)}
    missing = [name for name in ("topic_id", *_LABELS) if name not in values]
    if missing:
        raise InputFormatError(*where, f"no {', '.join(missing)} column")
    return {"topic_id": values["topic_id"], "set": set_name, **{k: values[k] for k in _LABELS}}


def read_labels_csv(path: Path, set_name: str) -> list[dict]:
    """ARQMath topic information CSV (``Topic, ..., Dependency, Difficulty, Category, ...``)."""
    with open_text(path) as handle:
        rows = csv.DictReader(handle)
        dropped = [name for name in rows.fieldnames or [] if not _column(name)]
        if dropped:
            logger.info("%s: column(s) not read: %s", path, ", ".join(dropped))
        return [_label_row(row, set_name, (path, rows.line_num)) for row in rows]


def read_labels_json(path: Path, set_name: str) -> list[dict]:
    """MathDowsers topic information JSON: ``{topic_id: {"TopicType", "Difficulty", ...}}``.

    The ARQMath-1 file also holds a header-like entry (key ``Topic id``, each value the column's
    title, e.g. ``"Difficulty": "Difficulty"``): such entries are skipped, with a log line.
    """
    with open_text(path) as handle:
        try:
            entries = json.load(handle)
        except json.JSONDecodeError as error:
            raise InputFormatError(path, error.lineno, f"invalid JSON: {error.msg}") from None
    rows = []
    for topic_id, entry in entries.items():
        if _is_header_like(entry):
            logger.info("%s: skipped the header-like entry %r", path, topic_id)
            continue
        rows.append(_label_row({**entry, "topic": topic_id}, set_name, (path, None)))
    return rows


def _is_header_like(entry: Mapping[str, object]) -> bool:
    """Whether some label column holds its own column title instead of a value."""
    return any(
        _column(key) in _LABELS and _column(str(value)) == _column(key)
        for key, value in entry.items()
    )


def _read_labels(path: Path, set_name: str) -> list[dict]:
    kind = Path(path.name.removesuffix(".gz")).suffix
    if kind == ".json":
        return read_labels_json(path, set_name)
    if kind == ".csv":
        return read_labels_csv(path, set_name)
    raise ConfigError(f"labels_{set_name}: {path} is neither .json (MathDowsers) nor .csv")


# --------------------------------------------------------------------------- readers


def _collection(
    docs: Iterable[dict], sources: Mapping[str, Path], main_roles: frozenset[str]
) -> Collection:
    """A collection of ``docs`` plus the topics, qrels and labels of every optional role."""
    topics: dict[str, list[dict]] = {}
    qrels: dict[str, list[Judgment]] = {}
    labels: list[dict] = []
    for role, path in sources.items():
        if role in main_roles:
            continue
        match = _OPTIONAL_ROLE.fullmatch(role)
        if match is None:
            raise ConfigError(
                f"unknown role {role!r}: expected {', '.join(sorted(main_roles))}, "
                "topics_<set>, qrels_<set> or labels_<set>"
            )
        kind, set_name = match.groups()
        if kind == "topics":
            topics[set_name] = read_topics(Path(path))
        elif kind == "qrels":
            qrels[set_name] = read_judgments(path)
        else:
            labels.extend(_read_labels(Path(path), set_name))
    tables = {"topic_labels": labels} if labels else {}
    return Collection(docs=docs, topics=topics, qrels=qrels, tables=tables)


def _roles(main_role: str, optional: frozenset[str] = frozenset()) -> SourceRoles:
    return SourceRoles(
        main=(frozenset({main_role}),),
        optional=optional,
        per_set_topics=True,
        per_set_qrels=True,
        per_set_labels=True,
    )


def _main_source(sources: Mapping[str, Path], role: str) -> Path:
    if role not in sources:
        raise ConfigError(f"the ARQMath reader needs a {role!r} source")
    return Path(sources[role])


@reader("arqmath_html", _roles("threads"))
def read_arqmath_html(sources: Mapping[str, Path]) -> Collection:
    """ARQMath from HTML thread pages (role ``threads``: a ``.tar.gz`` or a directory)."""
    docs = read_threads(_main_source(sources, "threads"))
    return _collection(docs, sources, frozenset({"threads"}))


@reader("arqmath_posts_xml", _roles("posts", optional=frozenset({"post_links"})))
def read_arqmath_posts_xml(sources: Mapping[str, Path]) -> Collection:
    """ARQMath from a Posts.xml dump (role ``posts``) and, optionally, its PostLinks.xml (role
    ``post_links``: each answer then lists its question's ``duplicates``); documents are
    streamed lazily."""
    links = sources.get("post_links")
    duplicates = read_post_links(Path(links)) if links is not None else None
    docs = read_posts_answers(_main_source(sources, "posts"), duplicates=duplicates)
    return _collection(docs, sources, frozenset({"posts", "post_links"}))
