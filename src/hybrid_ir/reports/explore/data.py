"""What an explorer page knows, as one JSON-ready dictionary: the systems and measures one can
pick, every system's per-topic scores, the paired statistics of every two systems, each topic's
text and labels, every ranking's top documents with their grades and their ranks in the other
rankings, and the documents' text, each cut to the configured size; and, where an input lacks
something, what and where, for the page to say.

The inputs are described by :class:`ExplorerInput` (a table's rows and column groups, or one's
own runs: :mod:`hybrid_ir.reports.explore.pages`). A *view* is one column group: a topic set scored
with one qrels; views of the same collection and topic set share a *space* (topic texts, labels,
rankings), so a run scored with two qrels (ARQMath's official and in-sample views) is read and
shown once. Everything is built in a fixed order, so the same inputs give the same bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from hybrid_ir.data.formats import open_text, read_records
from hybrid_ir.data.qrels import Qrels, read_qrels
from hybrid_ir.data.runs import topic_sort_key
from hybrid_ir.errors import InputFormatError, quoted
from hybrid_ir.reports.explore.rankings import (
    FusionSource,
    Ranking,
    RunCache,
    RunSource,
    Source,
    fold_alphas,
    fused_ranking,
    rank_table,
    ranking,
    read_report,
    top_documents,
)
from hybrid_ir.reports.explore.stats import pair_stats, t_quantiles
from hybrid_ir.reports.explore.text import truncate
from hybrid_ir.reports.figures.data import read_topic_labels

LOGGER = logging.getLogger(__name__)

TOP_K = 10
TEXT_CHARS = 1000
RANK_DEPTH = 1000
"""Ranks are recorded down to this depth (a run's usual length); a document further down, or
not retrieved, shows as outside the other ranking."""


@dataclass(frozen=True)
class ExplorerSettings:
    """How much a page holds: each ranking's top ``top_k`` documents, and every document and
    topic text cut to ``text_chars`` characters (never inside a formula); and the order a topic
    label's values are listed in (``label_order``: label column -> its first values, the rest
    alphabetically after them)."""

    top_k: int = TOP_K
    text_chars: int = TEXT_CHARS
    label_order: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class View:
    """One column group: its topics scored with one qrels. ``space`` names its collection and
    topic set (views sharing it share texts and rankings); ``labels`` is a topic label table
    (``topic_id`` and label columns, e.g. ARQMath's category, difficulty and dependency),
    ``label_set`` the value of its ``set`` column to keep."""

    name: str
    space: str
    qrels: str
    topics: str | None
    corpus: str | None
    labels: str | None = None
    label_set: str | None = None


@dataclass(frozen=True)
class Measure:
    """A column one can pick: its key (as in the per-topic scores), its view, and its name in
    that view (a cross-validation report's column)."""

    key: str
    view: str
    column: str


@dataclass(frozen=True)
class System:
    """A row: its label, its block, and its ranking's source in each view it has one in."""

    label: str
    block: str
    sources: Mapping[str, Source]


@dataclass(frozen=True)
class ExplorerInput:
    """Everything a page is built from. ``scores`` is ``label -> measure key -> topic -> score``
    (the topics each score averages over), ``notes`` what the page says about its inputs."""

    title: str
    about: str
    systems: tuple[System, ...]
    views: tuple[View, ...]
    measures: tuple[Measure, ...]
    scores: Mapping[str, Mapping[str, Mapping[str, float]]]
    system: str | None = None
    baseline: str | None = None
    notes: tuple[str, ...] = ()


@dataclass
class _Space:
    """What the views of one collection and topic set share while the data is built."""

    key: str
    views: list[int] = field(default_factory=list)
    rankers: list[dict[str, Any]] = field(default_factory=list)
    rankings: list[Ranking] = field(default_factory=list)
    keys: dict[tuple, int] = field(default_factory=dict)


def read_per_query(path: str) -> dict[str, dict[str, dict[str, float]]]:
    """A table's per-topic scores (``run``, ``column``, ``topic``, ``value``, as
    :func:`hybrid_ir.reports.tables.results.write_per_query` writes them):
    ``run -> column -> topic -> value``; a line that is not four fields with a number last is an
    error naming the file and line."""
    scores: dict[str, dict[str, dict[str, float]]] = {}
    with open_text(path) as handle:
        header = handle.readline().rstrip("\n")
        if header.split("\t") != ["run", "column", "topic", "value"]:
            raise InputFormatError(path, 1, "expected the header run, column, topic, value")
        for number, line in enumerate(handle, start=2):
            fields = line.rstrip("\n").split("\t")
            if fields == [""]:
                continue
            if len(fields) != 4:
                raise InputFormatError(path, number, f"{len(fields)} fields where 4 are expected")
            run, column, topic, value = fields
            try:
                score = float(value)
            except ValueError:
                raise InputFormatError(
                    path, number, f"score {quoted(value)} is no number"
                ) from None
            scores.setdefault(run, {}).setdefault(column, {})[topic] = score
    return scores


def explorer_data(source: ExplorerInput, settings: ExplorerSettings) -> dict[str, Any]:
    """The page's data (see the module's description)."""
    systems = list(source.systems)
    index = {system.label: i for i, system in enumerate(systems)}
    views = list(source.views)
    view_index = {view.name: i for i, view in enumerate(views)}
    measures = [m for m in source.measures if m.view in view_index]
    qrels = [read_qrels(view.qrels) for view in views]
    runs = RunCache()
    reports: dict[str, dict] = {}

    spaces: dict[str, _Space] = {}
    for number, view in enumerate(views):
        spaces.setdefault(view.space, _Space(view.space)).views.append(number)
    choices: list[dict[str, Any]] = [{} for _ in systems]
    unjudged: dict[tuple[int, tuple[str, ...]], list[str]] = {}
    for space in spaces.values():
        for number in space.views:
            view = views[number]
            for s, system in enumerate(systems):
                chosen = system.sources.get(view.name)
                if isinstance(chosen, RunSource):
                    choices[s][str(number)] = _ranker(
                        space, ("run", chosen.path), {"system": s},
                        lambda path=chosen.path: ranking(runs.run(path), RANK_DEPTH),
                    )  # fmt: skip
                    extra = sorted(runs.run(chosen.path).keys() - qrels[number].keys(),
                                   key=topic_sort_key)  # fmt: skip
                    if extra:
                        unjudged.setdefault((number, tuple(extra)), []).append(system.label)
                elif isinstance(chosen, FusionSource):
                    if chosen.report not in reports:
                        reports[chosen.report] = read_report(chosen.report)
                    choices[s][str(number)] = _fusion_choice(
                        space, s, chosen, reports[chosen.report], runs,
                        [m for m in measures if m.view == view.name],
                    )  # fmt: skip

    space_list = list(spaces.values())
    space_of_view = {n: i for i, space in enumerate(space_list) for n in space.views}
    corpora: dict[str, dict[str, Any]] = {}
    space_data = []
    space_ranks: list[dict[str, dict[str, Any]]] = []
    for space in space_list:
        first = views[space.views[0]]
        topic_ids = _space_topics(space, views, qrels, source.scores, measures)
        documents = {
            topic: top_documents(space.rankings, topic, settings.top_k) for topic in topic_ids
        }
        ranks: dict[str, dict[str, Any]] = {
            topic: {"docs": docs, "ranks": rank_table(space.rankings, topic, docs)}
            for topic, docs in documents.items()
        }
        space_ranks.append(ranks)
        if first.corpus is not None:
            wanted = corpora.setdefault(first.corpus, {"path": first.corpus, "ids": {}})["ids"]
            for docs in documents.values():
                wanted.update(dict.fromkeys(docs))
        space_data.append(
            {
                "key": space.key,
                "corpus": first.corpus,
                "topics_file": first.topics,
                "order": topic_ids,
                "topics": _topic_texts(first.topics, topic_ids, settings.text_chars),
                "labels": _labels(first, topic_ids, settings.label_order),
                "rankers": space.rankers,
                "ranks": ranks,
            }
        )
    corpus_data = {
        path: _documents(path, list(entry["ids"]), settings.text_chars)
        for path, entry in corpora.items()
    }
    view_data = []
    for number, view in enumerate(views):
        shown = space_ranks[space_of_view[number]]
        view_data.append(
            {
                "name": view.name,
                "space": space_of_view[number],
                "qrels_file": view.qrels,
                "grades": _grades(qrels[number], shown),
                "judged": _judged(qrels[number], shown),
            }
        )

    scores: dict[str, dict[str, dict[str, float]]] = {}
    pairs: dict[str, dict[str, list]] = {}
    most_topics = 2
    for measure in measures:
        by_system = {
            str(s): dict(sorted(source.scores[system.label][measure.key].items(),
                                key=lambda item: topic_sort_key(item[0])))
            for s, system in enumerate(systems)
            if measure.key in source.scores.get(system.label, {})
        }  # fmt: skip
        scores[measure.key] = by_system
        pairs[measure.key] = {
            f"{a},{b}": pair_stats(by_system[a], by_system[b]).row()
            for a, b in combinations(by_system, 2)
        }
        most_topics = max([most_topics, *(len(values) for values in by_system.values())])

    opening, baseline = _defaults(source, systems, index)
    return {
        "title": source.title,
        "about": source.about,
        "settings": {
            "top_k": settings.top_k,
            "text_chars": settings.text_chars,
            "rank_depth": RANK_DEPTH,
        },  # fmt: skip
        "systems": [
            {"label": s.label, "block": s.block, "rankers": choices[i]}
            for i, s in enumerate(systems)
        ],
        "measures": [
            {"key": m.key, "view": view_index[m.view], "column": m.column} for m in measures
        ],
        "views": view_data,
        "spaces": space_data,
        "corpora": corpus_data,
        "scores": scores,
        "pairs": pairs,
        "t975": t_quantiles(most_topics),
        "defaults": {"system": opening, "baseline": baseline},
        "notes": [
            *source.notes,
            *(
                _unjudged_note(labels, extra, views[number])
                for (number, extra), labels in unjudged.items()
            ),
            *_missing_notes(space_data, corpus_data, settings.top_k),
        ],
    }


def _ranker(space: _Space, key: tuple, about: dict[str, Any], load) -> int:
    """The index of a ranking in ``space``, loaded (by ``load``) the first time ``key`` is
    met."""
    if key not in space.keys:
        space.keys[key] = len(space.rankings)
        space.rankings.append(load())
        space.rankers.append(about)
    return space.keys[key]


def _fusion_choice(
    space: _Space,
    system: int,
    source: FusionSource,
    report: Mapping,
    runs: RunCache,
    measures: Sequence[Measure],
) -> dict[str, Any]:
    """A cross-validated row's ranking per measure and topic: the fusion with the alpha its
    fold was scored with for that measure, one ranking per alpha used."""
    by_measure: dict[str, dict[str, int]] = {}
    for measure in measures:
        alphas = fold_alphas(report, measure.column, source.report)
        chosen = {}
        for topic in sorted(alphas, key=topic_sort_key):
            alpha = alphas[topic]
            chosen[topic] = _ranker(
                space, ("fusion", source.report, alpha), {"system": system, "alpha": alpha},
                lambda a=alpha: fused_ranking(
                    runs.run(source.dense), runs.run(source.base), a, RANK_DEPTH
                ),
            )  # fmt: skip
        by_measure[measure.key] = chosen
    return {"by_measure": by_measure}


def _unjudged_note(labels: Sequence[str], extra: Sequence[str], view: View) -> str:
    """What the page says of runs ranking topics the qrels do not judge."""
    shown = ", ".join(extra[:8]) + (f" and {len(extra) - 8} more" if len(extra) > 8 else "")
    where = f" in {view.name}" if view.name else ""
    who = labels[0] if len(labels) == 1 else f"{len(labels)} runs ({'; '.join(labels)})"
    verb = "ranks" if len(labels) == 1 else "rank"
    return (
        f"{who}{where} {verb} {len(extra)} topic(s) that {view.qrels} does not judge "
        f"({shown}): they have no scores and are not shown."
    )


def _missing_notes(
    spaces: Sequence[Mapping[str, Any]], corpora: Mapping[str, Mapping[str, Any]], k: int
) -> list[str]:
    """What the page says of shown documents the corpus lacks and topics without a text."""
    notes = []
    for path, corpus in corpora.items():
        missing = [doc for doc, record in corpus["docs"].items() if record is None]
        if missing:
            notes.append(
                f"{len(missing)} document(s) of the rankings' top {k} are not in {path} (e.g. "
                f"{', '.join(missing[:3])}): they are listed without a text."
            )
    for space in spaces:
        untold = [topic for topic in space["order"] if topic not in space["topics"]]
        if untold and space["topics_file"] is not None:
            notes.append(
                f"{len(untold)} topic(s) have no text in {space['topics_file']} "
                f"({', '.join(untold[:8])}{' ...' if len(untold) > 8 else ''})."
            )
    return notes


def _space_topics(
    space: _Space,
    views: Sequence[View],
    qrels: Sequence[Qrels],
    scores: Mapping[str, Mapping[str, Mapping[str, float]]],
    measures: Sequence[Measure],
) -> list[str]:
    """The topics a space shows: its views' qrels topics and every topic scored in them."""
    names = {views[n].name for n in space.views}
    topics = {topic for n in space.views for topic in qrels[n]}
    for by_key in scores.values():
        for measure in measures:
            if measure.view in names:
                topics |= set(by_key.get(measure.key, {}))
    return sorted(topics, key=topic_sort_key)


def _topic_texts(path: str | None, topics: Sequence[str], limit: int) -> dict[str, Any]:
    """Topic -> ``[title, title cut, text, text cut]`` for the topics shown (missing from the
    file: not listed; the page says so)."""
    if path is None:
        return {}
    wanted = set(topics)
    found = {}
    for record in read_records(path):
        topic = str(record["id"])
        if topic in wanted:
            found[topic] = _cut(record, limit)
    return {topic: found[topic] for topic in topics if topic in found}


def _cut(record: Mapping[str, Any], limit: int) -> list:
    title, title_cut = truncate(str(record.get("title") or ""), limit)
    text, text_cut = truncate(str(record.get("text") or ""), limit)
    return [title, title_cut, text, text_cut]


def _documents(path: str, ids: Sequence[str], limit: int) -> dict[str, Any]:
    """The shown documents of a corpus: ``{"path", "docs": id -> [title, cut, text, cut]}``;
    an id the corpus lacks maps to None."""
    wanted = set(ids)
    found: dict[str, list] = {}
    for record in read_records(path):
        doc = str(record["id"])
        if doc in wanted:
            found[doc] = _cut(record, limit)
    missing = [doc for doc in ids if doc not in found]
    if missing:
        LOGGER.warning("%s lacks %d shown document(s), e.g. %s", path, len(missing), missing[0])
    return {"path": path, "docs": {doc: found.get(doc) for doc in sorted(ids)}}


def _labels(
    view: View, topics: Sequence[str], label_order: Mapping[str, Sequence[str]]
) -> dict[str, Any] | None:
    """The label columns, each shown topic's values (in column order), each column's values in
    the order they are listed, and the shown topics without a row; None without a label
    table."""
    if view.labels is None:
        return None
    labels = read_topic_labels(view.labels, view.label_set)
    columns = list(dict.fromkeys(column for row in labels.values() for column in row))
    values = {
        topic: [labels[topic].get(column, "") for column in columns]
        for topic in topics
        if topic in labels
    }
    order = {}
    for number, column in enumerate(columns):
        seen = {row[number] for row in values.values()}
        first = [value for value in label_order.get(column, ()) if value in seen]
        order[column] = first + sorted(seen - set(first))
    return {
        "file": view.labels,
        "columns": columns,
        "values": values,
        "order": order,
        "missing": [topic for topic in topics if topic not in labels],
    }


def _grades(qrels: Qrels, shown: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Topic -> the grade of each shown document the qrels judge."""
    grades = {}
    for topic, entry in shown.items():
        judged = qrels.get(topic, {})
        grades[topic] = {doc: judged[doc] for doc in entry["docs"] if doc in judged}
    return grades


def _judged(qrels: Qrels, shown: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Topic -> grade -> how many documents the qrels give it (highest grade first)."""
    counts = {}
    for topic in shown:
        judged: dict[str, int] = {}
        for grade in sorted(qrels.get(topic, {}).values(), reverse=True):
            judged[str(grade)] = judged.get(str(grade), 0) + 1
        counts[topic] = judged
    return counts


def _defaults(
    source: ExplorerInput, systems: Sequence[System], index: Mapping[str, int]
) -> tuple[int | None, int | None]:
    """The systems the page opens with: the given ones where they exist, else the first two."""
    if not systems:
        return None, None
    system = index.get(source.system or "", 0)
    others = [i for i in range(len(systems)) if i != system]
    baseline = index.get(source.baseline or "", others[0] if others else None)
    if baseline == system:
        baseline = others[0] if others else None
    return system, baseline
