"""Reader for a corpus whose documents and queries each carry a language (paper 002).

Paper 002's release (the EPFL DIS 2024 retrieval project) has ``corpus.json``, a JSON array of
``{"docid", "text", "lang"}``, and one CSV file per query split with ``query_id``, ``query``,
``positive_docs`` (the relevant document id; a list is read too) and ``lang``. A BEIR-style
corpus with a language column (``corpus.jsonl`` with ``_id``, ``title``, ``text``,
``language``; ``queries.jsonl``; ``qrels/<split>.tsv``) loads with other field names and one
``qrels_<set>`` source per split in place of the positives column. The collection's ``fields``
maps each role to its name in the files (:data:`DEFAULT_FIELDS`, the paper's release, fills
the rest) and ``languages`` lists the languages (ISO 639-1 codes, as spaCy names them).

Sources: ``corpus`` (JSON array or JSON Lines, chosen by the first character), one
``topics_<set>`` per topic set (CSV when the name ends in ``.csv``, else JSON Lines) and,
optionally, ``qrels_<set>`` (BEIR's TSV). Output: the canonical corpus and topics with a
``language`` field, binary qrels (each positive relevant at grade 1) and the ``languages``
table (documents, queries per set, and positives in another language than their query, per
language).

Bad input: a document or query in a language the configuration does not list, a listed
language without documents, a positive that is not in the corpus, a repeated id or a missing
field is an error naming the file, line and value; a query whose positive is in another
language is a warning naming the file, line and both languages (a search in the query's own
language cannot find it), counted in the ``languages`` table.
"""

from __future__ import annotations

import ast
import csv
import json
import logging
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from hybrid_ir.data.collections import Collection, SourceRoles, reader
from hybrid_ir.data.collections.beir import read_beir_qrels
from hybrid_ir.data.formats import id_problem, json_lines, open_text
from hybrid_ir.data.qrels import Judgment
from hybrid_ir.errors import ConfigError, InputFormatError, quoted

LOGGER = logging.getLogger(__name__)

DEFAULT_FIELDS: dict[str, str | None] = {
    "doc_id": "docid",
    "title": None,
    "text": "text",
    "language": "lang",
    "query_id": "query_id",
    "query": "query",
    "query_language": "lang",
    "positives": "positive_docs",
}
"""Role -> field name in paper 002's release; a ``title`` of None means documents have none."""

LANGUAGES_TABLE = "languages"


def _json_array(path: Path) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` of each element of a JSON array file, the line being where the
    element starts; a bad element names the file and its line."""
    with open_text(path) as handle:
        text = handle.read()
    decoder = json.JSONDecoder()
    position, line = text.index("[") + 1, 1 + text.count("\n", 0, text.index("["))
    while True:
        start = position
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        line += text.count("\n", start, position)
        if position >= len(text):
            raise InputFormatError(path, line, "the JSON array is not closed")
        if text[position] == "]":
            return
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise InputFormatError(path, line, f"invalid JSON: {error.msg}") from None
        if not isinstance(value, dict):
            raise InputFormatError(path, line, "expected a JSON object")
        yield line, value
        line += text.count("\n", position, end)
        position = end


def _records(path: Path) -> Iterator[tuple[int, dict]]:
    """Rows of a JSON array, JSON Lines or (by its ``.csv`` name) CSV file, with line numbers."""
    if path.name.lower().endswith(".csv"):
        with open_text(path) as handle:
            rows = csv.DictReader(handle)
            for row in rows:
                yield rows.line_num, row
        return
    with open_text(path) as handle:
        first = handle.read(4096).lstrip()
    if first.startswith("["):
        yield from _json_array(path)
    else:
        with open_text(path) as handle:
            yield from json_lines(handle, path)


def _field(row: Mapping, name: str, path: Path, line: int, role: str) -> str:
    value = row.get(name)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise InputFormatError(path, line, f"{role} field {name!r} missing or not a string")
    return value


def _identifier(row: Mapping, name: str, path: Path, line: int, role: str) -> str:
    value = _field(row, name, path, line, role).strip()
    problem = id_problem(value)
    if problem:
        raise InputFormatError(path, line, f"{role} field {name!r}: {problem}")
    return value


def _unique_id(
    row: Mapping, name: str, path: Path, line: int, role: str, seen: dict[str, int]
) -> str:
    """The row's id, recorded in ``seen`` (id -> line); an id seen before is an error."""
    identifier = _identifier(row, name, path, line, role)
    if identifier in seen:
        raise InputFormatError(
            path, line, f"{role} {quoted(identifier)} repeats line {seen[identifier]}"
        )
    seen[identifier] = line
    return identifier


def _language(
    row: Mapping, name: str, path: Path, line: int, languages: Sequence[str], what: str
) -> str:
    language = _field(row, name, path, line, f"{what} language").strip().lower()
    if language not in languages:
        raise InputFormatError(
            path,
            line,
            f"{what} language {quoted(language)} is not among the configured languages "
            f"({', '.join(languages)}); add it to the collection's languages or drop the {what}",
        )
    return language


def _positive_ids(value: object, path: Path, line: int) -> list[str]:
    """A positives cell: one id, a JSON or Python list of ids, or ids separated by spaces."""
    if isinstance(value, list):
        items: list = value
    elif isinstance(value, str) and value.strip().startswith("["):
        try:
            items = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise InputFormatError(
                path, line, f"positives {quoted(value)} are not a list"
            ) from None
    elif isinstance(value, (str, int)):
        items = str(value).replace(",", " ").split()
    else:
        raise InputFormatError(path, line, "positives missing or not an id or a list of ids")
    ids = [str(item).strip() for item in items]
    for identifier in ids:
        problem = id_problem(identifier)
        if problem:
            raise InputFormatError(path, line, f"positive document id: {problem}")
    return ids


def _read_corpus(
    path: Path, fields: Mapping[str, str | None], languages: Sequence[str]
) -> tuple[list[dict], dict[str, str]]:
    documents: list[dict] = []
    language_of: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for line, row in _records(path):
        doc_id = _unique_id(row, str(fields["doc_id"]), path, line, "document id", first_line)
        language = _language(row, str(fields["language"]), path, line, languages, "document")
        title = fields["title"]
        documents.append(
            {
                "id": doc_id,
                "title": _field(row, title, path, line, "title") if title else "",
                "text": _field(row, str(fields["text"]), path, line, "text"),
                "language": language,
            }
        )
        language_of[doc_id] = language
    missing = [language for language in languages if language not in language_of.values()]
    if missing:
        raise InputFormatError(
            path,
            None,
            f"no document has language(s) {', '.join(missing)}, which the collection's "
            "languages list: every listed language needs documents to search",
        )
    return documents, language_of


def _read_topics(
    path: Path,
    fields: Mapping[str, str | None],
    languages: Sequence[str],
    with_positives: bool,
) -> tuple[list[dict], dict[str, list[str]], dict[str, int]]:
    """The topics, each topic's positive ids (when the file carries them) and each topic's line."""
    topics: list[dict] = []
    positives: dict[str, list[str]] = {}
    lines: dict[str, int] = {}
    for line, row in _records(path):
        topic_id = _unique_id(row, str(fields["query_id"]), path, line, "query id", lines)
        language = _language(row, str(fields["query_language"]), path, line, languages, "query")
        text = _field(row, str(fields["query"]), path, line, "query")
        topics.append({"id": topic_id, "title": "", "text": text, "language": language})
        if with_positives:
            positives[topic_id] = _positive_ids(row.get(str(fields["positives"])), path, line)
    return topics, positives, lines


def read_multilingual(
    sources: Mapping[str, Path],
    languages: Sequence[str] = (),
    fields: Mapping[str, str | None] | None = None,
) -> Collection:
    if not languages:
        raise ConfigError("the multilingual reader needs the collection's languages")
    names = {**DEFAULT_FIELDS, **(fields or {})}
    unknown = sorted(set(names) - set(DEFAULT_FIELDS))
    if unknown:
        raise ConfigError(
            f"unknown field role(s) {', '.join(unknown)}; known: {', '.join(DEFAULT_FIELDS)}"
        )
    corpus_path = sources["corpus"]
    documents, language_of = _read_corpus(corpus_path, names, languages)
    collection = Collection(docs=documents)
    crossed: Counter[str] = Counter()
    queries: dict[str, Counter[str]] = {}
    for role in sorted(sources):
        if not role.startswith("topics_"):
            continue
        name = role.removeprefix("topics_")
        path = sources[role]
        qrels_path = sources.get(f"qrels_{name}")
        topics, positives, lines = _read_topics(path, names, languages, qrels_path is None)
        if qrels_path is not None:
            judgments = read_beir_qrels(qrels_path)
            for judgment in judgments:
                positives.setdefault(judgment.query_id, []).append(judgment.doc_id)
        topic_language = {topic["id"]: topic["language"] for topic in topics}
        collection.topics[name] = topics
        collection.qrels[name] = []
        for topic_id, doc_ids in positives.items():
            where = qrels_path if qrels_path is not None else path
            line = lines.get(topic_id) if qrels_path is None else None
            if topic_id not in topic_language:
                raise InputFormatError(where, None, f"query {quoted(topic_id)} is not in {path}")
            for doc_id in dict.fromkeys(doc_ids):
                if doc_id not in language_of:
                    raise InputFormatError(
                        where,
                        line,
                        f"positive document {quoted(doc_id)} of query {quoted(topic_id)} is not "
                        f"in the corpus {corpus_path}",
                    )
                if language_of[doc_id] != topic_language[topic_id]:
                    crossed[topic_language[topic_id]] += 1
                    LOGGER.warning(
                        "%s, line %s: query %s (language %s) has positive %s in language %s: "
                        "a search in the query's own language cannot find it",
                        where,
                        line if line is not None else "?",
                        topic_id,
                        topic_language[topic_id],
                        doc_id,
                        language_of[doc_id],
                    )
                collection.qrels[name].append(Judgment(topic_id, doc_id, 1))
        queries[name] = Counter(topic_language.values())
    documents_per_language = Counter(language_of.values())
    collection.tables[LANGUAGES_TABLE] = [
        {
            "language": language,
            "documents": documents_per_language[language],
            **{f"queries_{name}": counts[language] for name, counts in queries.items()},
            "positives_in_another_language": crossed[language],
        }
        for language in languages
    ]
    return collection


reader(
    "multilingual",
    SourceRoles(main=(frozenset({"corpus"}),), per_set_topics=True, optional_set_qrels=True),
    options=("languages", "fields"),
)(read_multilingual)
