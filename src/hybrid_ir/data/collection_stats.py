"""Basic statistics of test collections, as paper 004 Fig. 3 (after BEIR's Table 1) prints them.

Per collection, from its canonical files (corpus and topics JSON Lines, TREC qrels):

* ``queries``: the topics of the topic set that the qrels judge (the queries evaluated);
* ``documents``: corpus records;
* ``relevant per query`` (BEIR's "Avg. D/Q"): judgments with relevance >= ``min_relevance``
  over those queries;
* ``query words`` and ``document words``: mean whitespace-separated words of a query's
  ``query_fields`` and of a document's ``sections`` (BEIR counts a document's title and text);
* ``sections``: the document fields counted as sections (e.g. title and abstract), and
  ``sections per document``, the mean number of them a document has non-empty (paper 004's
  AskMe scores each section separately, so a document without an abstract is one section).

Words are counted on whitespace, so LaTeX and punctuation stuck to a word count as part of it;
BEIR's own table counts one word fewer per titled document (title and text joined without a
space), e.g. SciFact 213.63 against 214.63 here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hybrid_ir.data.formats import atomic_output, read_records, write_table
from hybrid_ir.errors import ConfigError, InputFormatError

Qrels = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class CollectionStats:
    """One line of the statistics table (module docstring)."""

    name: str
    queries: int
    documents: int
    relevant_per_query: float
    query_words: float
    document_words: float
    sections: tuple[str, ...]
    sections_per_document: float


def _words(record: Mapping, fields: Sequence[str], path: str | Path, kind: str) -> list[str]:
    """Whitespace words of the record's ``fields``; a field that is absent or not text is an
    error naming the file and record."""
    texts = []
    for field in fields:
        value = record.get(field)
        if not isinstance(value, str):
            raise InputFormatError(
                path, None, f"{kind} {record['id']!r} has no text field {field!r}"
            )
        texts.append(value)
    return " ".join(texts).split()


def collection_stats(
    name: str,
    corpus: Iterable[Mapping],
    topics: Iterable[Mapping],
    qrels: Qrels,
    sections: Sequence[str],
    query_fields: Sequence[str],
    min_relevance: int = 1,
    names: tuple[str, str] = ("the corpus", "the topics"),
) -> CollectionStats:
    """The statistics of one collection from its records (``names``: the corpus and topics
    files, for messages). A topic set none of whose topics the qrels judge is an error."""
    documents = words = sectioned = 0
    for document in corpus:
        words += len(_words(document, sections, names[0], "document"))
        sectioned += sum(bool(document[field].strip()) for field in sections)
        documents += 1
    if not documents:
        raise ConfigError(f"{name}: {names[0]} has no documents")
    judged = [topic for topic in topics if topic["id"] in qrels]
    if not judged:
        raise ConfigError(f"{name}: the qrels judge none of the topics of {names[1]}")
    relevant = sum(
        sum(grade >= min_relevance for grade in qrels[topic["id"]].values()) for topic in judged
    )
    query_words = sum(len(_words(topic, query_fields, names[1], "topic")) for topic in judged)
    return CollectionStats(
        name=name,
        queries=len(judged),
        documents=documents,
        relevant_per_query=relevant / len(judged),
        query_words=query_words / len(judged),
        document_words=words / documents,
        sections=tuple(sections),
        sections_per_document=sectioned / documents,
    )


def collection_stats_of_files(
    name: str,
    corpus: str | Path,
    topics: str | Path,
    qrels: Qrels,
    sections: Sequence[str],
    query_fields: Sequence[str],
    min_relevance: int = 1,
) -> CollectionStats:
    """:func:`collection_stats` of canonical corpus and topics files, read as they stream."""
    return collection_stats(
        name, read_records(corpus), read_records(topics), qrels, sections, query_fields,
        min_relevance, (str(corpus), str(topics)),
    )  # fmt: skip


HEADER = (
    "Collection",
    "#Queries",
    "#Documents",
    "Avg. D/Q",
    "Avg. words, query",
    "Avg. words, document",
    "Sections",
    "Avg. sections per document",
)


def table_rows(stats: Sequence[CollectionStats]) -> list[list[str]]:
    """The table's cells as printed: counts with thousands separators, means to 2 decimals."""
    return [
        [
            one.name,
            f"{one.queries:,}",
            f"{one.documents:,}",
            f"{one.relevant_per_query:.2f}",
            f"{one.query_words:.2f}",
            f"{one.document_words:.2f}",
            ", ".join(one.sections),
            f"{one.sections_per_document:.2f}",
        ]
        for one in stats
    ]


def write_stats_tsv(stats: Sequence[CollectionStats], path: str | Path) -> Path:
    """Machine-readable statistics: plain numbers, means to 4 decimals."""
    write_table(
        path,
        [
            {
                "collection": one.name,
                "queries": one.queries,
                "documents": one.documents,
                "relevant_per_query": f"{one.relevant_per_query:.4f}",
                "query_words": f"{one.query_words:.4f}",
                "document_words": f"{one.document_words:.4f}",
                "sections": ",".join(one.sections),
                "sections_per_document": f"{one.sections_per_document:.4f}",
            }
            for one in stats
        ],
    )
    return Path(path)


def write_stats_markdown(
    stats: Sequence[CollectionStats], path: str | Path, title: str, notes: Sequence[str] = ()
) -> Path:
    """The table as Markdown under ``title``, the ``notes`` as a list below it."""
    lines = [f"# {title}", "", "| " + " | ".join(HEADER) + " |", "|---" * len(HEADER) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in table_rows(stats)]
    if notes:
        lines += ["", *(f"- {note}" for note in notes)]
    with atomic_output(path) as out:
        out.write("\n".join(lines) + "\n")
    return Path(path)
