"""Readers that turn each raw collection into the canonical formats of
:mod:`hybrid_ir.data.formats`.

A reader is a function ``read(sources: Mapping[str, Path], **options) -> Collection``
registered under a name with :func:`reader`, with the collection settings it takes as
``options`` (e.g. a multilingual corpus's ``languages`` and ``fields``). ``sources`` maps the
role names a reader documents (``corpus``, ``queries``, ``qrels_test``...) to local,
checksum-verified raw files. Nothing downstream of a reader knows where a collection came from.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from hybrid_ir.data.formats import write_records, write_table
from hybrid_ir.data.qrels import Judgment, write_judgments
from hybrid_ir.errors import ConfigError


@dataclass
class Collection:
    """A collection in canonical form.

    ``docs`` may be lazy (a generator) and is ``None`` when the raw corpus is not distributed
    (NTCIR-12 Wiki-Formula topics and qrels only). ``topics`` and ``qrels`` map a set name
    (``test``, ``arqmath1``...) to its records. ``tables`` holds extra per-topic or
    per-judgment tables (e.g. CF per-judge scores, ARQMath topic labels) as lists of dicts that
    share their keys.
    """

    docs: Iterable[dict] | None
    topics: dict[str, list[dict]] = field(default_factory=dict)
    qrels: dict[str, list[Judgment]] = field(default_factory=dict)
    tables: dict[str, list[dict]] = field(default_factory=dict)


Reader = Callable[..., Collection]


@dataclass(frozen=True)
class SourceRoles:
    """The source roles a reader takes, so that a configuration is checked when the workflow's
    DAG is built rather than half-way through a run.

    ``main``: the alternative sets of fixed roles (exactly one must be configured);
    ``optional``: fixed roles that may be configured beside them. Per listed
    set, ``topics_<set>`` / ``qrels_<set>`` are required when ``per_set_topics`` /
    ``per_set_qrels``, and ``labels_<set>`` is optional when ``per_set_labels``; sets in
    ``derived_sets`` are made by the reader itself, and when a ``sets_inside`` role is
    configured, that file carries the sets (an official BEIR zip); with
    ``optional_set_qrels``, ``qrels_<set>`` may be configured for any listed qrels set.
    """

    main: tuple[frozenset[str], ...]
    optional: frozenset[str] = frozenset()
    per_set_topics: bool = False
    per_set_qrels: bool = False
    per_set_labels: bool = False
    derived_sets: frozenset[str] = frozenset()
    sets_inside: frozenset[str] = frozenset()
    optional_set_qrels: bool = False

    def problems(self, where: str, collection: Mapping) -> tuple[list[str], list[str]]:
        """``(errors, warnings)`` of a collection's configuration, each naming its key."""
        sources, topic_sets, qrels_sets = (
            collection["sources"],
            collection["topics"],
            collection["qrels"],
        )
        main = next((roles for roles in self.main if roles <= set(sources)), None)
        if main is None:
            choices = " or ".join(", ".join(sorted(roles)) for roles in self.main)
            return [f"{where}.sources: the reader needs {choices}"], []
        carried = bool(main & self.sets_inside)
        required: dict[str, str] = {}
        if self.per_set_topics and not carried:
            required |= {f"topics_{s}": f"topic set {s!r}" for s in topic_sets}
        if self.per_set_qrels and not carried:
            required |= {
                f"qrels_{s}": f"qrels set {s!r}" for s in qrels_sets if s not in self.derived_sets
            }
        labels = {f"labels_{s}" for s in topic_sets} if self.per_set_labels else set()
        optional = labels | self.optional
        if self.optional_set_qrels:
            optional |= {f"qrels_{s}" for s in qrels_sets}
        errors = [
            f"{where}.sources.{role}: no listed set uses this source (topic sets "
            f"{list(topic_sets)}, qrels sets {list(qrels_sets)}); a typo, or a set missing "
            "from the collection's topics/qrels lists?"
            for role in sources
            if role not in main | required.keys() | optional
        ]
        errors += [
            f"{where}: {what} has no source {role!r}"
            for role, what in required.items()
            if role not in sources
        ]
        warnings = []
        if labels & set(sources):
            warnings = [
                f"{where}: topic set {s!r} has no 'labels_{s}' source, so its topics have no "
                "category, difficulty or dependency labels"
                for s in topic_sets
                if f"labels_{s}" not in sources
            ]
        return errors, warnings


_READERS: dict[str, Reader] = {}
_ROLES: dict[str, SourceRoles] = {}
_OPTIONS: dict[str, tuple[str, ...]] = {}

# Modules whose import registers readers; imported lazily so that light commands stay light.
_READER_MODULES = (
    "hybrid_ir.data.collections.cf",
    "hybrid_ir.data.collections.beir",
    "hybrid_ir.data.collections.arqmath",
    "hybrid_ir.data.collections.ntcir",
    "hybrid_ir.data.collections.stackmathqa",
    "hybrid_ir.data.collections.multilingual",
)


def reader(
    name: str, roles: SourceRoles, options: tuple[str, ...] = ()
) -> Callable[[Reader], Reader]:
    """Register a reader function under ``name`` (the ``reader:`` key of a collection);
    ``options`` are the collection settings it takes as keyword arguments."""

    def register(function: Reader) -> Reader:
        _READERS[name] = function
        _ROLES[name] = roles
        _OPTIONS[name] = options
        return function

    return register


def source_problems(where: str, collection: Mapping) -> tuple[list[str], list[str]]:
    """``(errors, warnings)`` of a configured collection's sources against its reader's roles."""
    get_reader(collection["reader"])
    return _ROLES[collection["reader"]].problems(where, collection)


def reader_options(name: str, collection: Mapping) -> dict:
    """The settings of a configured collection that its reader takes."""
    get_reader(name)
    return {option: collection[option] for option in _OPTIONS[name] if option in collection}


def get_reader(name: str) -> Reader:
    for module in _READER_MODULES:
        importlib.import_module(module)
    if name not in _READERS:
        known = ", ".join(sorted(_READERS))
        raise ConfigError(f"unknown collection reader {name!r}; known readers: {known}")
    return _READERS[name]


def convert(
    reader_name: str,
    sources: Mapping[str, Path],
    outputs: Mapping[str, Path],
    label: str = "collection",
    options: Mapping | None = None,
) -> dict:
    """Read a raw collection and write every canonical file named in ``outputs``.

    ``outputs`` keys are ``corpus``, ``topics_<set>``, ``qrels_<set>`` and ``table_<set>``; the
    sets the reader returns must be exactly the configured ones, so that a typo in the
    configuration fails here instead of producing a missing file later. ``options`` are the
    reader's settings (:func:`reader_options`). Returns the counts.
    """
    read = get_reader(reader_name)
    collection = read({role: Path(path) for role, path in sources.items()}, **(options or {}))
    produced = {f"topics_{name}" for name in collection.topics}
    produced |= {f"qrels_{name}" for name in collection.qrels}
    produced |= {f"table_{name}" for name in collection.tables}
    if collection.docs is not None:
        produced.add("corpus")
    if produced != set(outputs):
        raise ConfigError(
            f"{label}: reader {reader_name!r} produces {sorted(produced)} but the configuration "
            f"asks for {sorted(outputs)}; set the collection's corpus/topics/qrels/tables to match"
        )
    counts = {}
    for key, path in outputs.items():
        kind, _, name = key.partition("_")
        if kind == "corpus":
            documents = tqdm(collection.docs, desc="documents", mininterval=5)
            counts[key] = write_records(path, documents)
        elif kind == "topics":
            counts[key] = write_records(path, collection.topics[name])
        elif kind == "qrels":
            counts[key] = write_judgments(path, collection.qrels[name])
        else:
            counts[key] = write_table(path, collection.tables[name])
    return counts
