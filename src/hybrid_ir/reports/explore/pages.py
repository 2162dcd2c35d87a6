"""Per-topic explorer pages: why one system beats another, topic by topic.

Two entry points build the same page (:mod:`hybrid_ir.reports.explore.page`): :func:`table_explorer`
for a table of the workflow (its rows are the systems, its columns the measures, its per-topic
scores and t-tests the numbers; rule ``explore_table``), and :func:`runs_explorer` for one's own
run files (``hybrid-ir explore``), scored here with :func:`hybrid_ir.evaluation.measures.evaluate`.
:func:`write_explorer` writes a page whole or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.data.qrels import read_qrels
from hybrid_ir.data.runs import read_run, topic_sort_key
from hybrid_ir.errors import HybridIRError
from hybrid_ir.evaluation.measures import evaluate, measures_for
from hybrid_ir.reports.explore.data import (
    ExplorerInput,
    ExplorerSettings,
    Measure,
    System,
    View,
    explorer_data,
    read_per_query,
)
from hybrid_ir.reports.explore.inputs import (
    PER_QUERY,
    explored_groups,
    fusion_key,
    row_key,
    view_key,
)
from hybrid_ir.reports.explore.katex import DEBIAN_KATEX, load_katex
from hybrid_ir.reports.explore.page import explorer_page
from hybrid_ir.reports.explore.rankings import FusionSource, RunSource, Source
from hybrid_ir.reports.tables.spec import column_key, row_sources, table_groups


def table_input(name: str, table: Mapping[str, Any], inputs: Mapping[str, str]) -> ExplorerInput:
    """What the explorer of table ``name`` (its configuration entry ``table``) shows, from the
    files the rule reads (:func:`hybrid_ir.reports.explore.inputs.explorer_inputs`)."""
    groups = explored_groups(table)
    names = [group["name"] for group in table_groups(table)]
    views, measures = [], []
    for group in groups:
        group_name = group["name"]
        views.append(
            View(
                name=group_name,
                space=f"{group['collection']}/{group['topics']}",
                qrels=inputs[view_key("qrels", group_name)],
                topics=inputs[view_key("topics", group_name)],
                corpus=inputs.get(view_key("corpus", group_name)),
                labels=inputs.get(view_key("labels", group_name)),
                label_set=group["topics"],
            )
        )
        measures += [
            Measure(column_key(group_name, column), group_name, column)
            for column in group["columns"]
        ]
    systems = []
    for block in table["blocks"]:
        for row in block["rows"]:
            sources: dict[str, Source] = {}
            for where, (kind, source) in row_sources(row, names).items():
                path = inputs.get(row_key(where, row["label"]))
                if path is None:
                    continue
                if kind == "crossval":
                    sources[where] = FusionSource(
                        path,
                        inputs[fusion_key("dense", source)],
                        inputs[fusion_key("base", source)],
                    )
                else:
                    sources[where] = RunSource(path)
            if sources:
                systems.append(System(row["label"], block.get("name", ""), sources))
    scores = read_per_query(inputs[PER_QUERY])
    missing = [system.label for system in systems if system.label not in scores]
    notes = []
    if missing:
        notes.append(
            f"{inputs[PER_QUERY]} has no per-topic scores for {', '.join(missing)}: "
            "they have rankings here but nothing to compare."
        )
    about = (
        f"Table {name}: per-topic scores from {inputs[PER_QUERY]} (the table's own, as its "
        "t-tests use them); rankings from the rows' run files, and for a cross-validated row the "
        "fusion each topic was scored on."
    )
    return ExplorerInput(
        title=str(table.get("title", name)),
        about=about,
        systems=tuple(systems),
        views=tuple(views),
        measures=tuple(measures),
        scores={system.label: scores.get(system.label, {}) for system in systems},
        system=table.get("reference"),
        baseline=None,
        notes=tuple(notes),
    )


def table_explorer(
    name: str,
    table: Mapping[str, Any],
    inputs: Mapping[str, str],
    settings: ExplorerSettings,
    katex: str | Path = DEBIAN_KATEX,
    footer: str = "",
) -> str:
    """The explorer page of table ``name``."""
    data = explorer_data(table_input(name, table, inputs), settings)
    return explorer_page(data, load_katex(katex), footer)


def runs_explorer(
    runs: Sequence[str],
    qrels: str,
    topics: str,
    corpus: str | None,
    settings: ExplorerSettings,
    measures: Sequence[str] | None = None,
    labels: str | None = None,
    label_set: str | None = None,
    title: str | None = None,
    katex: str | Path = DEBIAN_KATEX,
    run_format: str | None = None,
    duplicates: str = "max",
) -> tuple[str, str | None]:
    """The explorer page of one's own ``runs`` (two or more; the first is the system the page
    opens with, the second its baseline), scored against ``qrels`` with ``measures`` (None:
    chosen from the qrels, as ``hybrid-ir evaluate`` does), and the line saying which
    measures were chosen, if they were."""
    if len(runs) < 2:
        raise HybridIRError(f"explore needs two runs or more to compare, got {len(runs)}")
    judgments = read_qrels(qrels)
    chosen, note = measures_for(judgments, measures, qrels)
    names = _run_labels(runs)
    scores: dict[str, dict[str, dict[str, float]]] = {}
    columns: list[str] = []
    notes = []
    for path, label in zip(runs, names, strict=True):
        run = read_run(path, run_format=run_format, duplicates=duplicates)
        evaluation = evaluate(judgments, run, chosen, (qrels, path))
        scores[label] = evaluation.per_query
        columns += [column for column in evaluation.per_query if column not in columns]
        unanswered = sorted(judgments.keys() - run.keys(), key=topic_sort_key)
        if unanswered:
            shown = ", ".join(unanswered[:8]) + (" ..." if len(unanswered) > 8 else "")
            notes.append(
                f"{label}: {path} has no ranking for {len(unanswered)} topic(s) of the qrels "
                f"({shown}); each scores 0 there where the measure counts every topic."
            )
    view = View("", "runs", qrels, topics, corpus, labels, label_set)
    source = ExplorerInput(
        title=title or " vs ".join(names),
        about=f"Runs {', '.join(runs)} scored against {qrels} with {' '.join(chosen)}.",
        systems=tuple(
            System(label, "runs", {"": RunSource(path)})
            for path, label in zip(runs, names, strict=True)
        ),  # fmt: skip
        views=(view,),
        measures=tuple(Measure(column, "", column) for column in columns),
        scores=scores,
        system=names[0],
        baseline=names[1],
        notes=tuple(notes),
    )
    return explorer_page(explorer_data(source, settings), load_katex(katex)), note


def _run_labels(runs: Sequence[str]) -> list[str]:
    """Each run's name on the page: its file name without the extension, or its path where two
    runs share a name."""
    stems = [Path(path).name.split(".")[0] or path for path in runs]
    return [
        stem if stems.count(stem) == 1 else path for stem, path in zip(stems, runs, strict=True)
    ]


def write_explorer(page: str, path: str | Path) -> None:
    """The page, written whole or not at all."""
    with atomic_output(path) as out:
        out.write(page)
