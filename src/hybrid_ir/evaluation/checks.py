"""Reproduced scores against expected bands, in the style of pyserini's two-click reproductions.

An expected-scores file names a collection and its topic set, then for each run and qrels set
the expected value and tolerance of each metric, and for each index its expected statistics::

    collection: scifact
    topics: test
    runs:
      bm25-flat:
        test:
          nDCG@10: {value: 0.6789, tolerance: 0.00005}
    indexes:
      bm25-flat:
        documents: {value: 5183, tolerance: 0}
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import astuple, dataclass, fields
from pathlib import Path

from hybrid_ir import paths
from hybrid_ir.data.formats import atomic_output, load_yaml, open_text
from hybrid_ir.errors import CheckFailed, ConfigError, InputFormatError


@dataclass(frozen=True)
class Check:
    """One expected number and the file its reproduced value is read from."""

    collection: str
    run: str
    metric: str
    expected: float
    tolerance: float
    source: str
    key: str


@dataclass(frozen=True)
class CheckResult:
    collection: str
    run: str
    metric: str
    expected: float
    actual: float
    tolerance: float
    status: str


def checks_from_expected(document: dict) -> Iterator[Check]:
    """Every check an expected-scores document asks for, with the artifact it reads."""
    collection, topic_set = document["collection"], document.get("topics", "")
    published = document.get("published", {})
    for run, by_qrels in document.get("runs", {}).items():
        for qrels_set, metrics in by_qrels.items():
            source = paths.evaluation(collection, topic_set, run, qrels_set)
            for metric, band in metrics.items():
                label = f"{run} ({qrels_set} qrels)"
                if "value" in band:
                    value = band["value"]
                elif metric in published.get(run, {}):
                    value = published[run][metric]
                else:
                    raise ConfigError(
                        f"{document.get('path', 'expected scores')}: runs.{run}.{qrels_set}."
                        f"{metric}: no value, and no published {metric} for {run}"
                    )
                yield Check(collection, label, metric, value, band["tolerance"], source, metric)
    for index, statistics in document.get("indexes", {}).items():
        source = paths.index_stats(collection, index)
        for statistic, band in statistics.items():
            label = f"{index} (index)"
            yield Check(
                collection, label, statistic, band["value"], band["tolerance"], source, statistic
            )


def _reproduced(check: Check, root: Path) -> float:
    with open(root / check.source, encoding="utf-8") as handle:
        artifact = json.load(handle)
    values = artifact.get("aggregate", artifact)
    return float(values[check.key])


def within_band(actual: float, expected: float, tolerance: float) -> bool:
    """Whether ``actual`` lies within ``expected`` +- ``tolerance`` (NaN never does)."""
    # A slack of 1e-9 absorbs float noise when the band is exactly +-tolerance.
    return abs(actual - expected) <= tolerance + 1e-9


def run_checks(documents: list[dict], root: str | Path = ".") -> list[CheckResult]:
    results = []
    for document in documents:
        for check in checks_from_expected(document):
            actual = _reproduced(check, Path(root))
            passed = within_band(actual, check.expected, check.tolerance)
            results.append(
                CheckResult(
                    check.collection,
                    check.run,
                    check.metric,
                    check.expected,
                    actual,
                    check.tolerance,
                    "PASS" if passed else "FAIL",
                )  # fmt: skip
            )
    return results


def write_summary(results: list[CheckResult], path: str | Path) -> None:
    with atomic_output(path) as out:
        writer = csv.writer(out, delimiter="\t", lineterminator="\n")
        writer.writerow([field.name for field in fields(CheckResult)])
        for result in results:
            row = list(astuple(result))
            row[4] = f"{result.actual:.6f}"
            writer.writerow(row)


def read_summary(path: str | Path) -> list[dict]:
    """The rows of a summary :func:`write_summary` wrote; another header, or a row with another
    number of columns, is an error naming the line."""
    columns = [field.name for field in fields(CheckResult)]
    with open_text(path) as handle:
        lines = csv.reader(handle, delimiter="\t")
        header = next(lines, None)
        if header != columns:
            raise InputFormatError(
                path, 1, f"not a checks summary: the header must be {' '.join(columns)}"
            )
        rows = []
        for number, values in enumerate(lines, start=2):
            if len(values) != len(columns):
                raise InputFormatError(
                    path, number, f"{len(values)} columns where the header has {len(columns)}"
                )
            rows.append(dict(zip(columns, values, strict=True)))
    return rows


def summary_failure(row: dict[str, str]) -> str | None:
    """Why a summary row fails, or None when it passes. Its status is recomputed from expected,
    actual and tolerance, never taken from the file: a summary edited, or written by other
    code, cannot turn a value outside its band into a pass, and a status that disagrees with
    the band is itself a failure."""
    check = f"{row['collection']} {row['run']} {row['metric']}"
    try:
        expected, actual, tolerance = (
            float(row[key]) for key in ("expected", "actual", "tolerance")
        )
    except ValueError:
        return (
            f"{check}: expected {row['expected']!r}, actual {row['actual']!r} and tolerance "
            f"{row['tolerance']!r} are not all numbers"
        )
    band = f"{check}: expected {row['expected']} +- {row['tolerance']}, got {row['actual']}"
    passed = within_band(actual, expected, tolerance)
    if row["status"] != ("PASS" if passed else "FAIL"):
        verdict = "inside" if passed else "outside"
        return f"{band}, {verdict} the band, but its status says {row['status']!r}"
    return None if passed else band


def assert_all_passed(summary_path: str | Path) -> int:
    """Raise :class:`CheckFailed` naming every failed check (:func:`summary_failure`) with its
    line, or when the summary lists none; return how many passed."""
    rows = read_summary(summary_path)
    if not rows:
        raise CheckFailed(f"{summary_path} lists no checks: nothing was compared with its band")
    # read_summary keeps one row per line after the header, which is line 1.
    failures = [
        f"{summary_path}:{line}: {failure}"
        for line, row in enumerate(rows, start=2)
        if (failure := summary_failure(row)) is not None
    ]
    if failures:
        raise CheckFailed(f"{len(failures)} of {len(rows)} checks failed: {'; '.join(failures)}")
    return len(rows)


def topic_sets(experiment: dict) -> list[str]:
    """An experiment's topic sets: ``topics`` is one name or a list of names."""
    topics = experiment["topics"]
    return [topics] if isinstance(topics, str) else list(topics)


def evaluation_pairs(experiment: dict) -> list[tuple[str, str]]:
    """(topic set, qrels set) pairs an experiment evaluates.

    With one topic set, every listed qrels set judges it (CF: ``all`` with ``binary`` and
    ``graded``); with several, each topic set is judged by the qrels set of the same name
    (ARQMath: ``arqmath1`` and ``arqmath2``).
    """
    sets = topic_sets(experiment)
    if len(sets) == 1:
        return [(sets[0], qrels) for qrels in experiment["qrels"]]
    return [(topics, topics) for topics in sets if topics in experiment["qrels"]]


def load_expected(paths: list[str | Path]) -> list[dict]:
    """Expected-score files (pyserini 2CR style), each with its own path for messages."""
    documents = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            document = load_yaml(handle)
        if not isinstance(document, dict) or "collection" not in document:
            raise ConfigError(f"{path}: an expected-scores file needs a 'collection' key")
        if document.get("runs") and "topics" not in document:
            raise ConfigError(
                f"{path}: an expected-scores file with 'runs' needs a 'topics' key (the topic "
                "set the runs were made on)"
            )
        documents.append({**document, "path": str(path)})
    return documents


def _stems(directory: Path, extensions: tuple[str, ...]) -> list[str]:
    """Names of the results in ``directory`` written in any of ``extensions`` (a table's md,
    tex and csv count once)."""
    if not directory.is_dir():
        return []
    return sorted(
        {
            path.name.removesuffix(f".{extension}")
            for path in directory.iterdir()
            for extension in extensions
            if path.name.endswith(f".{extension}")
        }
    )


def run_summary(root: str | Path = ".", succeeded: bool = True) -> str:
    """The closing lines of a workflow run: whether it finished, the expected-score checks
    passed and failed (from the checks summary, when the run wrote one), and how many tables and
    figures there are where; what a reader needs after thousands of lines of job log."""
    root = Path(root)
    lines = [
        "hybrid-ir: the workflow finished."
        if succeeded
        else "hybrid-ir: the workflow stopped with an error (the failed job and its log are named "
        "above); the results below may be incomplete or from an earlier run."
    ]
    summary = paths.checks("summary.tsv")
    if (root / summary).is_file():
        rows = read_summary(root / summary)
        failures = [failure for row in rows if (failure := summary_failure(row)) is not None]
        passed = len(rows) - len(failures)
        lines.append(f"Checks: {passed} passed, {len(failures)} failed ({summary}).")
        lines += [f"  FAILED {failure}" for failure in failures]
    else:
        lines.append(f"Checks: not run ({summary} does not exist).")
    for kind, directory, extensions in (
        ("Tables", f"{paths.RESULTS}/tables", ("md", "tex", "csv")),
        ("Figures", f"{paths.RESULTS}/figures", ("png", "svg")),
    ):
        names = _stems(root / directory, extensions)
        lines.append(
            f"{kind}: {len(names)} in {directory}/ ({', '.join(extensions)})."
            if names
            else f"{kind}: none in {directory}/."
        )
    reports = [f"{paths.RESULTS}/report.{ext}" for ext in ("html", "zip")]
    written = [report for report in reports if (root / report).is_file()]
    lines.append(
        f"Report: {written[0]}." if written else f"Report: `make report` writes {reports[0]}."
    )
    lines.append("What produced a result: hybrid-ir provenance FILE.")
    return "\n".join(lines)
