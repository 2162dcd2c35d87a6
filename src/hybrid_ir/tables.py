"""Result tables: reproduced numbers beside the expected (published or pinned) ones."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from hybrid_ir import paths
from hybrid_ir.formats import atomic_output


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
            for qrels_set, measures in experiment["qrels"].items():
                path = Path(root) / paths.evaluation(
                    collection, experiment["topics"], run, qrels_set
                )
                with open(path, encoding="utf-8") as handle:
                    aggregate = json.load(handle)["aggregate"]
                for metric in measures:
                    band = _expected_band(expected, collection, run, qrels_set, metric)
                    value = aggregate[metric]
                    status = "-"
                    if band is not None:
                        ok = abs(value - band["value"]) <= band["tolerance"] + 1e-9
                        status = "PASS" if ok else "FAIL"
                    rows.append(
                        ScoreRow(
                            collection,
                            experiment["topics"],
                            run,
                            qrels_set,
                            metric,
                            value,
                            band["value"] if band else None,
                            band["tolerance"] if band else None,
                            status,
                        )  # fmt: skip
                    )
    return rows


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def write_csv(rows: list[ScoreRow], path: str | Path) -> None:
    with atomic_output(path) as out:
        writer = csv.DictWriter(
            out, fieldnames=[field.name for field in fields(ScoreRow)], lineterminator="\n"
        )
        writer.writeheader()
        for row in rows:
            record = asdict(row)
            record["reproduced"] = f"{row.reproduced:.6f}"
            writer.writerow(record)


def write_markdown(rows: list[ScoreRow], path: str | Path, title: str, notes: list[str]) -> None:
    """A block per collection: runs as rows, each metric as a reproduced / expected pair."""
    lines = [f"# {title}", ""]
    for collection in dict.fromkeys(row.collection for row in rows):
        block = [row for row in rows if row.collection == collection]
        metrics = list(dict.fromkeys((row.qrels, row.metric) for row in block))
        lines += [f"## {collection} ({block[0].topics} topics)", ""]
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
        out.write("\n".join(lines).rstrip() + "\n")
