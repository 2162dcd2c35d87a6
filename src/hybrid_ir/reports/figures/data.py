"""What the figures show, computed without a plotting library: the topic labels and their panels
(paper 000 Fig. 2), the ranks of a fused run's top documents in its inputs (Fig. 3), two runs
compared topic by topic per label value (paper 001 Fig. 2), metric@k curves, and a sweep's run
at each value. Each TSV a figure writes beside its PNG comes from here;
:mod:`hybrid_ir.reports.figures.draw` draws."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_ir.data.formats import atomic_output, read_table, write_table
from hybrid_ir.data.qrels import Qrels
from hybrid_ir.data.runs import Run, ranked, topic_sort_key
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.evaluation.measures import evaluate
from hybrid_ir.fusion.methods import fuse

LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class LabelPanel:
    """One panel of :func:`by_label_bars`: a label column, its values in drawing order, each
    value's topic count, and each run's mean per value (NaN where it averaged no topic)."""

    column: str
    values: tuple[str, ...]
    counts: tuple[int, ...]
    means: dict[str, tuple[float, ...]]


def read_topic_labels(path: str | Path, topic_set: str | None = None) -> dict[str, dict[str, str]]:
    """``topic -> column -> value`` from a label table (``topic_id`` plus label columns, e.g. the
    ARQMath ``topic_labels`` table); with ``topic_set``, only the rows of that set when the table
    has a ``set`` column. A topic labelled twice within the rows kept is an error."""
    rows = read_table(path)
    if rows and "topic_id" not in rows[0]:
        raise InputFormatError(path, 1, "no topic_id column")
    labels: dict[str, dict[str, str]] = {}
    for row in rows:
        if topic_set is not None and row.get("set", topic_set) != topic_set:
            continue
        topic = row["topic_id"]
        if topic in labels:
            raise InputFormatError(path, None, f"topic {topic!r} is labelled twice")
        labels[topic] = {key: value for key, value in row.items() if key not in ("topic_id", "set")}
    return labels


def label_panels(
    scores: Mapping[str, Mapping[str, float]],
    topic_labels: Mapping[str, Mapping[str, str]],
    columns: Sequence[str],
    topics: Iterable[str],
    order: Mapping[str, Sequence[str]] | None = None,
) -> list[LabelPanel]:
    """Each run's mean score over the topics of each label value, one panel per label column.

    ``scores`` maps a run's label to its per-topic scores (the topics its measure averages
    over); ``topics`` are the topics counted (the qrels topics): a value's count is how many of
    them carry it. Topics without a label row are left out, with a log line counting them.
    Values are drawn in ``order[column]`` where given, the rest sorted alphabetically after it.
    """
    topics = sorted(set(topics) | {t for per_topic in scores.values() for t in per_topic})
    unlabelled = [
        topic for topic in sorted(topics, key=topic_sort_key) if topic not in topic_labels
    ]
    if unlabelled:
        shown = ", ".join(unlabelled[:10]) + (", ..." if len(unlabelled) > 10 else "")
        LOGGER.info(
            "%d of %d topics have no label row and are left out: %s",
            len(unlabelled),
            len(topics),
            shown,
        )
    labelled = [topic for topic in topics if topic in topic_labels]
    if not labelled:
        raise ConfigError("no topic of the runs and qrels has a row in the label table")
    panels = []
    for column in columns:
        missing = [topic for topic in labelled if column not in topic_labels[topic]]
        if missing:
            raise ConfigError(f"the label table has no {column!r} column (topic {missing[0]})")
        seen = {topic_labels[topic][column] for topic in labelled}
        first = [value for value in (order or {}).get(column, []) if value in seen]
        values = tuple(first + sorted(seen - set(first)))
        groups = {
            value: [topic for topic in labelled if topic_labels[topic][column] == value]
            for value in values
        }
        means = {}
        for run, per_topic in scores.items():
            run_means = []
            for value in values:
                averaged = [per_topic[topic] for topic in groups[value] if topic in per_topic]
                if len(averaged) < len(groups[value]):
                    LOGGER.info(
                        "%s, %s = %s: averaged over %d of its %d topics (the measure's own rule)",
                        run, column, value, len(averaged), len(groups[value]),
                    )  # fmt: skip
                run_means.append(sum(averaged) / len(averaged) if averaged else math.nan)
            means[run] = tuple(run_means)
        counts = tuple(len(groups[value]) for value in values)
        panels.append(LabelPanel(column, values, counts, means))
    return panels


@dataclass(frozen=True)
class RankRow:
    """One of the fused run's top documents: its rank there, its rank in each input run (None
    when the input does not have it) and its qrels relevance (None when unjudged)."""

    fused_rank: int
    doc_id: str
    ranks: dict[str, int | None]
    relevance: int | None


def fused_rank_rows(
    fused: Run,
    inputs: Mapping[str, Run],
    qrels: Qrels,
    topic: str,
    cutoff: int,
    fused_name: str = "the fused run",
) -> list[RankRow]:
    """The fused run's top ``cutoff`` documents of ``topic`` with their ranks in each input run
    (canonical order: score descending, document id descending) and their relevance.

    A topic the fused run lacks is an error naming the topic and ``fused_name`` (its file).
    """
    if not fused.get(topic):
        raise ConfigError(f"topic {topic!r} is not in the fused run {fused_name}")
    positions = {}
    for label, run in inputs.items():
        if not run.get(topic):
            LOGGER.warning("run %r has no result for topic %r: nothing retrieved", label, topic)
        positions[label] = {
            doc: rank for rank, (doc, _) in enumerate(ranked(run.get(topic, {})), 1)
        }
    if topic not in qrels:
        LOGGER.warning("the qrels do not judge topic %r: every document is unjudged", topic)
    judgments = qrels.get(topic, {})
    return [
        RankRow(
            rank,
            doc,
            {label: positions[label].get(doc) for label in inputs},
            judgments.get(doc),
        )
        for rank, (doc, _) in enumerate(ranked(fused[topic], cutoff), 1)
    ]


def write_rank_rows(rows: Sequence[RankRow], labels: Sequence[str], path: str | Path) -> Path:
    """The numbers behind :func:`rank_scatter`: ``fused_rank doc_id <label>_rank... relevance``,
    tab-separated, ``-`` for a document an input run lacks and for an unjudged document."""
    path = Path(path)
    header = ["fused_rank", "doc_id", *(f"{label}_rank" for label in labels), "relevance"]
    with atomic_output(path) as out:
        out.write("\t".join(name.replace("\t", " ") for name in header) + "\n")
        for row in rows:
            ranks = ["-" if row.ranks[label] is None else str(row.ranks[label]) for label in labels]
            relevance = "-" if row.relevance is None else str(row.relevance)
            out.write("\t".join([str(row.fused_rank), row.doc_id, *ranks, relevance]) + "\n")
    return path


@dataclass(frozen=True)
class HeadToHead:
    """One label value of :func:`head_to_head`: the topics compared (labelled with the value
    and scored by both runs), how many each run scores strictly higher, the ties, and each
    run's mean over those topics."""

    value: str
    topics: int
    higher: tuple[int, int]
    ties: int
    means: tuple[float, float]


def head_to_head(
    scores: Mapping[str, Mapping[str, float]],
    topic_labels: Mapping[str, Mapping[str, str]],
    column: str,
    order: Sequence[str] = (),
) -> list[HeadToHead]:
    """Two runs' per-topic scores compared within each value of label ``column``.

    Only topics both runs score are compared (a measure averaged over judged topics leaves a
    run's unanswered topics out, and so does the comparison), and only labelled ones: each
    topic left out is counted in a log line. Values come in ``order``, the rest alphabetically.
    """
    if len(scores) != 2:
        raise ConfigError(f"a head-to-head comparison takes exactly 2 runs, got {len(scores)}")
    (first, a), (second, b) = scores.items()
    shared = sorted(set(a) & set(b), key=topic_sort_key)
    for run, own in ((first, a), (second, b)):
        alone = sorted(set(own) - set(shared), key=topic_sort_key)
        if alone:
            LOGGER.info("%d topics scored by %s only are left out: %s", len(alone), run,
                        ", ".join(alone))  # fmt: skip
    unlabelled = [topic for topic in shared if topic not in topic_labels]
    if unlabelled:
        LOGGER.info("%d topics have no label row and are left out: %s", len(unlabelled),
                    ", ".join(unlabelled))  # fmt: skip
    labelled = [topic for topic in shared if topic in topic_labels]
    if not labelled:
        raise ConfigError("no topic scored by both runs has a row in the label table")
    missing = [topic for topic in labelled if column not in topic_labels[topic]]
    if missing:
        raise ConfigError(f"the label table has no {column!r} column (topic {missing[0]})")
    seen = {topic_labels[topic][column] for topic in labelled}
    first_values = [value for value in order if value in seen]
    rows = []
    for value in first_values + sorted(seen - set(first_values)):
        topics = [topic for topic in labelled if topic_labels[topic][column] == value]
        higher = (
            sum(a[topic] > b[topic] for topic in topics),
            sum(b[topic] > a[topic] for topic in topics),
        )
        means = (
            sum(a[topic] for topic in topics) / len(topics),
            sum(b[topic] for topic in topics) / len(topics),
        )
        rows.append(HeadToHead(value, len(topics), higher, len(topics) - sum(higher), means))
    return rows


def write_head_to_head(
    rows: Sequence[HeadToHead], runs: Sequence[str], column: str, metric: str, path: str | Path
) -> Path:
    """The numbers behind :func:`head_to_head_bars`, one line per label value."""
    first, second = runs
    write_table(
        path,
        [
            {
                column: row.value,
                "topics": row.topics,
                f"{first} higher": row.higher[0],
                f"{second} higher": row.higher[1],
                "ties": row.ties,
                f"{first} mean {metric}": f"{row.means[0]:.4f}",
                f"{second} mean {metric}": f"{row.means[1]:.4f}",
            }
            for row in rows
        ],
    )
    return Path(path)


def metric_at_k(qrels: Qrels, run: Run, measure: str, max_k: int) -> dict[int, float]:
    """``measure``@k (an ir_measures name taking a cutoff, e.g. nDCG) for k = 1 ... ``max_k``,
    averaged over every qrels topic (trec_eval ``-c``)."""
    names = {k: f"{measure}@{k}" for k in range(1, max_k + 1)}
    aggregate = evaluate(qrels, run, list(names.values())).aggregate
    return {k: aggregate[name] for k, name in names.items()}


def write_curves(curves: Mapping[str, Mapping[Any, float]], x_name: str, path: str | Path) -> Path:
    """The numbers behind a figure of curves: one line per x value, one column per curve."""
    xs = sorted({x for points in curves.values() for x in points})
    write_table(
        path,
        [
            {x_name: x, **{label: f"{points[x]:.4f}" for label, points in curves.items()}}
            for x in xs
        ],
    )
    return Path(path)


def sweep_runs(
    sweep: Mapping[str, Any], runs: Sequence[Run], values: Sequence[float], label: str
) -> dict[str, Run]:
    """The fused run at each of ``values`` of a configured sweep (``method``, ``parameter``,
    ``params`` as in ``sweeps.<name>``) over its input ``runs``, by curve label: ``label`` with
    ``{parameter}`` and ``{value}`` filled in (e.g. ``lambda = {value}``)."""
    unknown = [value for value in values if value not in sweep["values"]]
    if unknown:
        raise ConfigError(f"sweep values {unknown} are not among the sweep's {sweep['values']}")
    parameter, params = sweep["parameter"], sweep["params"]
    return {
        label.format(parameter=parameter, value=value): fuse(
            sweep["method"], runs, **{**params, parameter: value}
        )
        for value in values
    }
