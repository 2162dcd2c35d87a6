"""Evaluation views of a collection's qrels: the pool-restricted view of a sampled collection,
which keeps only the judgments of documents the corpus holds, and the per-language views of a
multilingual one, which keep the judgments of one language's queries (paper 002's Table 1
columns).

On a sample (paper 000's 3,395-answer ARQMath thread sample holds 230 of ARQMath-2's 1,961
answers judged relevant), the official qrels count every relevant document of the full
collection: the ideal DCG of nDCG', recall and MAP's denominator include documents no system
here can retrieve, so those scores are bounded far below 1 and not comparable with a paper's
on the full collection. The restricted view removes the absent documents from the judgments,
so a measure asks how well a system ranks what the sample holds. Measures that ignore
unretrieved relevant documents (P'@10, whose unjudged documents are removed either way) do not
change. The official view is the paper's definition and the one the expected scores pin.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hybrid_ir.data.formats import read_records
from hybrid_ir.data.qrels import Qrels, read_qrels, write_qrels
from hybrid_ir.errors import InputFormatError


def restrict_qrels(qrels: Qrels, doc_ids: set[str]) -> Qrels:
    """The judgments of documents in ``doc_ids``; a topic left without any is dropped (it has
    nothing to rank in this view, as trec_eval skips a topic without judgments)."""
    restricted = {
        topic: {doc: grade for doc, grade in judged.items() if doc in doc_ids}
        for topic, judged in qrels.items()
    }
    return {topic: judged for topic, judged in restricted.items() if judged}


def write_restricted_qrels(
    qrels_path: str | Path, corpus_path: str | Path, output: str | Path
) -> dict[str, int]:
    """Write the pool-restricted view of ``qrels_path`` for the corpus at ``corpus_path``;
    returns the counts of judgments and topics kept and dropped, for the log."""
    qrels = read_qrels(qrels_path)
    doc_ids = {str(record["id"]) for record in read_records(corpus_path)}
    restricted = restrict_qrels(qrels, doc_ids)
    if not restricted:
        raise InputFormatError(
            qrels_path,
            None,
            f"no judged document is in the corpus {corpus_path}: the pool-restricted view "
            "would be empty",
        )
    kept = write_qrels(restricted, output)
    return {
        "judgments": sum(len(judged) for judged in qrels.values()),
        "kept": kept,
        "topics": len(qrels),
        "topics_kept": len(restricted),
    }


def topic_languages(topics_path: str | Path) -> dict[str, str]:
    """Topic id -> language, from a canonical topics file whose topics carry one."""
    languages = {}
    for record in read_records(topics_path):
        if not isinstance(record.get("language"), str):
            raise InputFormatError(topics_path, None, f"topic {record['id']!r} has no language")
        languages[str(record["id"])] = record["language"]
    return languages


def language_qrels(qrels: Qrels, topics: Iterable[dict], language: str) -> Qrels:
    """The judgments of the topics whose ``language`` is ``language``."""
    chosen = {str(topic["id"]) for topic in topics if topic.get("language") == language}
    return {topic: judged for topic, judged in qrels.items() if topic in chosen}


def write_language_qrels(
    qrels_path: str | Path, topics_path: str | Path, language: str, output: str | Path
) -> dict[str, int]:
    """Write the judgments of ``language``'s topics (the topics file says each one's language);
    returns the counts of topics kept and in all, for the log."""
    qrels = read_qrels(qrels_path)
    kept = language_qrels(qrels, read_records(topics_path), language)
    if not kept:
        raise InputFormatError(
            topics_path,
            None,
            f"no judged topic has language {language!r}: the {language} view of {qrels_path} "
            "would be empty (a language without queries in this set)",
        )
    write_qrels(kept, output)
    return {"topics": len(qrels), "topics_kept": len(kept)}
