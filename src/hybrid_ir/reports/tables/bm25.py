"""The BM25 reproduction table: each experiment's runs against its qrels, with the
expected-score band each number must fall in (CSV and Markdown)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from hybrid_ir import paths
from hybrid_ir.data.formats import atomic_output
from hybrid_ir.evaluation.checks import evaluation_pairs
from hybrid_ir.evaluation.measures import (
    JUDGED_TOPICS,
    resolve_measures,
)
from hybrid_ir.reports.tables.results import markdown_footer


@dataclass(frozen=True)
class ScoreRow:
    collection: str
    topics: str
    run: str
    qrels: str
    metric: str
    reproduced: float
    expected: float | None
    tolerance: float | None
    status: str


def _expected_band(expected: list[dict], collection: str, run: str, qrels: str, metric: str):
    for document in expected:
        if document["collection"] != collection:
            continue
        band = document.get("runs", {}).get(run, {}).get(qrels, {}).get(metric)
        if band is not None:
            return band
    return None


def bm25_rows(experiments: dict, expected: list[dict], root: str | Path = ".") -> list[ScoreRow]:
    """One row per collection, layout, qrels set and metric of the configured BM25 runs."""

    rows = []
    for collection, experiment in experiments.items():
        for layout in experiment["layouts"]:
            run = f"bm25-{layout}"
            for topic_set, qrels_set in evaluation_pairs(experiment):
                columns = resolve_measures(experiment["qrels"][qrels_set])
                path = Path(root) / paths.evaluation(collection, topic_set, run, qrels_set)
                with open(path, encoding="utf-8") as handle:
                    aggregate = json.load(handle)["aggregate"]
                for column in columns:
                    metric = column.name
                    band = _expected_band(expected, collection, run, qrels_set, metric)
                    # A count is a whole number, printed as one (118, not 118.0000).
                    whole: Callable[[float], float] = round if column.total else float
                    value = whole(aggregate[metric])
                    status = "-"
                    if band is not None:
                        ok = abs(value - band["value"]) <= band["tolerance"] + 1e-9
                        status = "PASS" if ok else "FAIL"
                    rows.append(
                        ScoreRow(
                            collection,
                            topic_set,
                            run,
                            qrels_set,
                            metric,
                            value,
                            whole(band["value"]) if band else None,
                            band["tolerance"] if band else None,
                            status,
                        )  # fmt: skip
                    )
    return rows


def bm25_averaging_notes(experiments: dict) -> list[str]:
    """How each collection's BM25 numbers are averaged, from its measures' own rules."""

    notes = []
    for collection, experiment in experiments.items():
        columns = [
            column
            for measures in experiment["qrels"].values()
            for column in resolve_measures(measures)
        ]
        judged = [column.name for column in columns if column.averaging == JUDGED_TOPICS]
        totals = [column.name for column in columns if column.total]
        rest = [c.name for c in columns if c.averaging != JUDGED_TOPICS and not c.total]
        parts = []
        if rest:
            parts.append(
                f"{', '.join(dict.fromkeys(rest))} averaged over every qrels topic "
                "(trec_eval -c: an unanswered topic counts 0)"
            )
        if judged:
            parts.append(
                f"{', '.join(dict.fromkeys(judged))} averaged over the topics where the run "
                "keeps a judged document (the ARQMath organisers' rule), not over every qrels topic"
            )
        if totals:
            parts.append(f"{', '.join(dict.fromkeys(totals))} summed over topics")
        notes.append(f"{collection}: " + "; ".join(parts) + ".")
    return notes


def write_csv(rows: list[ScoreRow], path: str | Path) -> None:
    with atomic_output(path) as out:
        writer = csv.DictWriter(
            out, fieldnames=[field.name for field in fields(ScoreRow)], lineterminator="\n"
        )
        writer.writeheader()
        for row in rows:
            record = asdict(row)
            record["reproduced"] = _csv_number(row.reproduced)
            writer.writerow(record)


def write_markdown(
    rows: list[ScoreRow], path: str | Path, title: str, notes: list[str], footer: str = ""
) -> None:
    """A block per collection and topic set: runs as rows, each metric as a reproduced /
    expected pair; ``footer`` (provenance) closes the file."""
    lines = [f"# {title}", ""]
    for collection, topics in dict.fromkeys((row.collection, row.topics) for row in rows):
        block = [row for row in rows if (row.collection, row.topics) == (collection, topics)]
        metrics = list(dict.fromkeys((row.qrels, row.metric) for row in block))
        lines += [f"## {collection} ({topics} topics)", ""]
        header = ["run"]
        for qrels, metric in metrics:
            header += [f"{metric} ({qrels})", "expected"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * (1 + 2 * len(metrics)))
        for run in dict.fromkeys(row.run for row in block):
            cells = {(row.qrels, row.metric): row for row in block if row.run == run}
            values = []
            for key in metrics:
                row = cells.get(key)
                values += [_number(row.reproduced), _number(row.expected)] if row else ["", ""]
            lines.append("| " + " | ".join([run, *values]) + " |")
        lines.append("")
    lines += [f"- {note}" for note in notes]
    with atomic_output(path) as out:
        out.write("\n".join(lines).rstrip() + "\n" + markdown_footer(footer))


def _number(value: float | None) -> str:
    if value is None:
        return "–"
    return str(value) if isinstance(value, int) else f"{value:.4f}"


def _csv_number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.6f}"
