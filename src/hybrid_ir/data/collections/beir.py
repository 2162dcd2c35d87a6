"""Readers for collections in the BEIR format, and for SciFact from the allenai CSV export.

The official BEIR layout of a dataset ``<name>`` is ``<name>/corpus.jsonl`` (one
``{"_id", "title", "text", "metadata"?}`` object per line), ``<name>/queries.jsonl``
(``{"_id", "text", ...}``) and ``<name>/qrels/<split>.tsv`` (tab-separated ``query-id corpus-id
score`` with that header line). Both readers produce one topic set and one qrels set per split;
a split's topics are exactly the queries judged in its qrels, in ``queries.jsonl`` order, as
``{"id", "title": "", "text"}``.

Qrels: the first line is skipped when it does not parse (the header); any other line that does
not parse is an error. Scores go through :func:`hybrid_ir.data.qrels.parse_relevance`, as the
relevance of TREC qrels does, so ``3.0`` reads as 3. A (query, doc) pair listed twice keeps its
highest score, so one judgment survives per pair, as :func:`hybrid_ir.data.qrels.read_qrels`
keeps it.

Documents are yielded lazily, so corpora of millions of documents (BioASQ) never sit in memory;
format errors in a corpus therefore surface while the documents are being consumed.
"""

from __future__ import annotations

import ast
import csv
import io
import tokenize
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from hybrid_ir.data.collections import Collection, SourceRoles, reader
from hybrid_ir.data.formats import (
    ASCII_WHITESPACE,
    REQUIRED_KEYS,
    CheckedText,
    MemberText,
    UniqueIds,
    archive_errors,
    check_read_ids,
    id_problem,
    json_lines,
    open_text,
)
from hybrid_ir.data.qrels import Judgment, parse_relevance
from hybrid_ir.errors import ConfigError, InputFormatError, quoted

Source = Path | zipfile.Path  # a file on disk or a member of a zip archive

QRELS_PREFIX = "qrels_"
ALLENAI_CORPUS_MEMBER = "corpus_train.csv"
_ALLENAI_COLUMNS = ("doc_id", "title", "abstract")
# Token types that may surround the sentence strings in ``['a' 'b']`` or ``['a', 'b']``.
_ARRAY_LAYOUT = {tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER}
_ARRAY_PUNCTUATION = {"[", "]", ","}


# --- shared: opening, JSON Lines, queries, qrels, split sets -------------------------------------


def _open(source: Source) -> MemberText | CheckedText:
    if isinstance(source, zipfile.Path):
        return MemberText(source.open("rb"), str(source))
    return open_text(source)


def _json_objects(source: Source) -> Iterator[tuple[int, dict]]:
    with archive_errors(str(source)), _open(source) as handle:
        yield from json_lines(handle, str(source))


def _string(value: dict, key: str, source: Source, number: int) -> str:
    if not isinstance(value.get(key), str):
        raise InputFormatError(str(source), number, f"key {key!r} missing or not a string")
    return value[key]


def _identifier(value: dict, key: str, source: Source, number: int) -> str:
    identifier = _string(value, key, source, number)
    problem = id_problem(identifier)
    if problem:
        raise InputFormatError(str(source), number, f"key {key!r}: {problem}")
    return identifier


def _read_queries(source: Source) -> dict[str, str]:
    """Query id -> text, in file order."""
    queries: dict[str, str] = {}
    for number, value in _json_objects(source):
        query_id = _identifier(value, "_id", source, number)
        if query_id in queries:
            raise InputFormatError(str(source), number, f"duplicate query id {quoted(query_id)}")
        queries[query_id] = _string(value, "text", source, number)
    return queries


def _qrels_line(line: str, source: Source, number: int) -> Judgment:
    fields = [field.strip(ASCII_WHITESPACE) for field in line.rstrip("\r\n").split("\t")]
    if len(fields) != 3:
        raise InputFormatError(
            str(source),
            number,
            f"expected 3 tab-separated fields (query-id, corpus-id, score), got {len(fields)}",
        )
    query_id, doc_id, score = fields
    check_read_ids(str(source), number, query_id, doc_id)
    return Judgment(query_id, doc_id, parse_relevance(score, str(source), number))


def read_beir_qrels(source: Source) -> list[Judgment]:
    """A BEIR qrels TSV (``query-id corpus-id score``, header line first) as judgments, each
    (query, doc) pair once with its highest score, in the order pairs first appear."""
    best: dict[tuple[str, str], int] = {}
    with archive_errors(str(source)), _open(source) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                judgment = _qrels_line(line, source, number)
            except InputFormatError:
                if number == 1:
                    continue  # the header line
                raise
            pair = (judgment.query_id, judgment.doc_id)
            best[pair] = max(best.get(pair, judgment.relevance), judgment.relevance)
    if not best:
        raise InputFormatError(str(source), None, "no judgments: every score against it would be 0")
    return [Judgment(query_id, doc_id, score) for (query_id, doc_id), score in best.items()]


def _split_sets(
    queries_source: Source, qrels_sources: Mapping[str, Source]
) -> tuple[dict[str, list[dict]], dict[str, list[Judgment]]]:
    """Topics and qrels per split; every judged query must be in the queries file."""
    queries = _read_queries(queries_source)
    topics: dict[str, list[dict]] = {}
    qrels: dict[str, list[Judgment]] = {}
    for split, source in qrels_sources.items():
        judgments = read_beir_qrels(source)
        judged = {judgment.query_id for judgment in judgments}
        unknown = sorted(judged - queries.keys())
        if unknown:
            raise InputFormatError(
                str(source),
                None,
                f"{len(unknown)} query id(s) not in {queries_source}, e.g. {quoted(unknown[0])}",
            )
        topics[split] = [
            {"id": query_id, "title": "", "text": text}
            for query_id, text in queries.items()
            if query_id in judged
        ]
        qrels[split] = judgments
    return topics, qrels


def _role(sources: Mapping[str, Path], role: str, reader_name: str) -> Path:
    if role not in sources:
        raise ConfigError(f"the {reader_name} reader needs a {role!r} source")
    return Path(sources[role])


def _qrels_roles(sources: Mapping[str, Path]) -> dict[str, Source]:
    return {
        role.removeprefix(QRELS_PREFIX): Path(path)
        for role, path in sources.items()
        if role.startswith(QRELS_PREFIX)
    }


# --- SciFact from the allenai CSV export ------------------------------------------------------


def _sentences(array: str, source: Source, number: int) -> list[str]:
    """The sentences of a numpy-array (or list) repr such as ``['First.'\\n 'Second.']``.

    numpy separates the elements by whitespace only, which ``ast.literal_eval`` would read as
    one concatenated string; tokenizing keeps each string literal apart.
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(array).readline))
    except (tokenize.TokenError, SyntaxError) as error:
        raise InputFormatError(str(source), number, f"abstract unreadable: {error}") from None
    sentences = []
    for token in tokens:
        if token.type == tokenize.STRING:
            sentences.append(ast.literal_eval(token.string))
        elif token.type not in _ARRAY_LAYOUT and token.string not in _ARRAY_PUNCTUATION:
            problem = f"abstract is not a list of strings: found {quoted(token.string)}"
            raise InputFormatError(str(source), number, problem)
    return sentences


def _allenai_documents(archive: Path) -> Iterator[dict]:
    with archive_errors(archive):
        yield from _allenai_rows(archive)


def _allenai_rows(archive: Path) -> Iterator[dict]:
    member = zipfile.Path(archive, ALLENAI_CORPUS_MEMBER)
    if not member.exists():
        raise InputFormatError(archive, None, f"no member {ALLENAI_CORPUS_MEMBER}")
    with MemberText(member.open("rb"), str(member), newline="") as handle:
        rows = csv.reader(handle)
        header = next(rows, [])
        missing = [column for column in _ALLENAI_COLUMNS if column not in header]
        if missing:
            raise InputFormatError(str(member), 1, f"missing column(s) {', '.join(missing)}")
        columns = [header.index(column) for column in _ALLENAI_COLUMNS]
        end = rows.line_num
        for row in rows:
            start, end = end + 1, rows.line_num  # a row spans lines: report where it starts
            if len(row) != len(header):
                raise InputFormatError(
                    str(member), start, f"expected {len(header)} columns, got {len(row)}"
                )
            doc_id, title, abstract = (row[column] for column in columns)
            text = " ".join(_sentences(abstract, member, start))
            yield {"id": doc_id, "title": title, "text": text}


@reader(
    "scifact_allenai_csv",
    SourceRoles(main=(frozenset({"corpus", "queries"}),), per_set_qrels=True),
)
def read_scifact_allenai_csv(sources: Mapping[str, Path]) -> Collection:
    """SciFact with the corpus rebuilt from the allenai HF CSV export, as BEIR builds it.

    Roles: ``corpus`` (the export zip, member ``corpus_train.csv`` with columns ``doc_id``,
    ``title``, ``abstract``), ``queries`` (BEIR ``queries.jsonl``) and ``qrels_<split>`` (BEIR
    qrels TSVs). The document text is the abstract's sentences joined by one space, which is
    exactly the BEIR ``corpus.jsonl`` text (that file is not in the mirror).
    """
    name = "scifact_allenai_csv"
    topics, qrels = _split_sets(_role(sources, "queries", name), _qrels_roles(sources))
    return Collection(
        docs=_allenai_documents(_role(sources, "corpus", name)), topics=topics, qrels=qrels
    )


# --- generic official BEIR -------------------------------------------------------------------


def _corpus_documents(source: Source) -> Iterator[dict]:
    ids = UniqueIds()
    for number, value in _json_objects(source):
        metadata = value.get("metadata", {})
        if not isinstance(metadata, dict):
            raise InputFormatError(str(source), number, "'metadata' is not a JSON object")
        clashes = [key for key in REQUIRED_KEYS if key in metadata]
        if clashes:
            raise InputFormatError(
                str(source), number, f"metadata key(s) {', '.join(clashes)} clash with fields"
            )
        document = {
            "id": _identifier(value, "_id", source, number),
            "title": _string(value, "title", source, number),
            "text": _string(value, "text", source, number),
            **metadata,
        }
        ids.add(document["id"], str(source), number)
        yield document
    if not ids:
        raise InputFormatError(str(source), None, "no documents: an empty corpus")


def _dataset_root(path: Path) -> Source:
    """The folder holding ``corpus.jsonl``: the zip or directory itself or its only folder."""
    if path.is_dir():
        root: Source = path
    elif zipfile.is_zipfile(path):
        with archive_errors(path):
            root = zipfile.Path(path)
    else:
        raise InputFormatError(path, None, "a BEIR dataset must be a zip file or a directory")
    with archive_errors(path):
        entries: list[Source] = list(root.iterdir())
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return root


def _first_file(root: Source, names: tuple[str, ...], dataset: Path) -> Source:
    for name in names:
        if (root / name).is_file():
            return root / name
    raise InputFormatError(dataset, None, f"no {' or '.join(names)} in the dataset")


def _dataset_files(path: Path) -> tuple[Source, Source, dict[str, Source]]:
    """Corpus, queries and qrels per split of an official BEIR zip or unpacked directory."""
    root = _dataset_root(path)
    corpus = _first_file(root, ("corpus.jsonl", "corpus.jsonl.gz"), path)
    queries = _first_file(root, ("queries.jsonl",), path)
    qrels_dir = root / "qrels"
    entries: list[Source] = list(qrels_dir.iterdir()) if qrels_dir.is_dir() else []
    qrels = {
        entry.name.removesuffix(".tsv"): entry
        for entry in sorted(entries, key=lambda entry: entry.name)
        if entry.name.endswith(".tsv")
    }
    return corpus, queries, qrels


@reader(
    "beir",
    SourceRoles(
        main=(frozenset({"dataset"}), frozenset({"corpus", "queries"})),
        per_set_qrels=True,
        sets_inside=frozenset({"dataset"}),
    ),
)
def read_beir(sources: Mapping[str, Path]) -> Collection:
    """Any dataset in the official BEIR format (NFCorpus, TREC-COVID, BioASQ, SciFact...).

    Roles: either ``dataset`` (an official BEIR zip such as ``scifact.zip`` or its unpacked
    directory; splits are the ``qrels/<split>.tsv`` files present), or ``corpus``
    (``corpus.jsonl`` or ``corpus.jsonl.gz``), ``queries`` and ``qrels_<split>``. Documents map
    ``_id`` to ``id``, keep ``title`` and ``text`` as they are and lift the ``metadata`` keys to
    optional fields.
    """
    if "dataset" in sources:
        if set(sources) != {"dataset"}:
            raise ConfigError("the beir reader takes either 'dataset' or separate roles, not both")
        corpus, queries, qrels_sources = _dataset_files(Path(sources["dataset"]))
    else:
        corpus = _role(sources, "corpus", "beir")
        queries = _role(sources, "queries", "beir")
        qrels_sources = _qrels_roles(sources)
    topics, qrels = _split_sets(queries, qrels_sources)
    return Collection(docs=_corpus_documents(corpus), topics=topics, qrels=qrels)
