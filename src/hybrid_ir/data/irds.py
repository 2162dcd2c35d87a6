"""ir_datasets ids as qrels and topics: a dataset of ir_datasets (``beir/scifact/test``) read
into this package's in-memory qrels (:data:`~hybrid_ir.data.qrels.Qrels`) and canonical topic
records (``id``, ``title``, ``text``), where ir_datasets is installed (it comes with the
``[pyterrier]`` extra).

ir_datasets is imported on the first call that needs it, not with this module, and its files
stay where ir_datasets keeps them (``$IR_DATASETS_HOME``, default ``~/.ir_datasets``): nothing is
cached here. A dataset not in that cache yet is downloaded by ir_datasets itself, as any use of
ir_datasets would; an id ir_datasets does not know is no dataset (:func:`has` is False)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hybrid_ir.data.qrels import Qrels
from hybrid_ir.errors import HybridIRError, quoted

ENTITIES = {"qrels": "has_qrels", "topics": "has_queries"}
"""What a dataset must have to be read as each kind, by the ir_datasets method that says so."""


def installed() -> bool:
    """Whether ir_datasets can be imported here (without importing it)."""
    return importlib.util.find_spec("ir_datasets") is not None


def dataset(dataset_id: str) -> Any | None:
    """The ir_datasets dataset ``dataset_id``, or None when ir_datasets is not installed or
    does not know the id. Looking an id up downloads nothing."""
    if not installed():
        return None
    import ir_datasets  # deferred: ir_datasets imports its whole catalogue

    try:
        return ir_datasets.registry[dataset_id]
    except KeyError:
        return None


def has(dataset_id: str, kind: str) -> bool:
    """Whether ``dataset_id`` is an ir_datasets dataset with ``kind`` (``qrels`` or
    ``topics``: its queries)."""
    found = dataset(dataset_id)
    return found is not None and bool(getattr(found, ENTITIES[kind])())


def home() -> Path:
    """Where ir_datasets keeps its files ($IR_DATASETS_HOME, default ~/.ir_datasets)."""
    import ir_datasets

    return Path(ir_datasets.util.home_path())


def _read(dataset_id: str, kind: str, iterate: str) -> list:
    found = dataset(dataset_id)
    if found is None or not getattr(found, ENTITIES[kind])():
        raise HybridIRError(f"ir_datasets has no {kind} {quoted(dataset_id)}")
    try:
        return list(getattr(found, iterate)())
    except HybridIRError:
        raise
    except Exception as error:  # a download refused, a file ir_datasets cannot parse
        raise HybridIRError(
            f"ir_datasets {quoted(dataset_id)}: its {kind} could not be read: "
            f"{type(error).__name__}: {error}"
        ) from error


def qrels(dataset_id: str) -> Qrels:
    """The dataset's qrels as ``{query: {document: relevance}}``; a (query, document) pair
    judged twice keeps its highest relevance, as :func:`~hybrid_ir.data.qrels.read_qrels`
    keeps it. A dataset without any judgment is an error, as every score against it would
    be 0."""
    found: Qrels = {}
    for judgment in _read(dataset_id, "qrels", "qrels_iter"):
        judged = found.setdefault(str(judgment.query_id), {})
        doc, relevance = str(judgment.doc_id), int(judgment.relevance)
        judged[doc] = max(relevance, judged.get(doc, relevance))
    if not found:
        raise HybridIRError(f"ir_datasets {quoted(dataset_id)}: no judgments")
    return found


def topics(dataset_id: str) -> list[dict[str, str]]:
    """The dataset's queries as canonical topic records: ``id``, an empty ``title`` and
    ``text``, the query's default text (ir_datasets' ``default_text()``: a TREC topic's
    title, a BEIR query's text)."""
    records = []
    for query in _read(dataset_id, "topics", "queries_iter"):
        text = query.default_text() if hasattr(query, "default_text") else query.text
        records.append({"id": str(query.query_id), "title": "", "text": str(text)})
    if not records:
        raise HybridIRError(f"ir_datasets {quoted(dataset_id)}: no queries")
    return records
