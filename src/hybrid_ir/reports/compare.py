"""Runs against a baseline: per-measure scores, paired t-test and randomization test p-values
(Holm–Bonferroni-adjusted across runs if asked), as a Markdown, CSV or LaTeX table, or JSON for
programs.

Each run is compared with the baseline on their *shared topics*: the qrels topics both answer.
A measure then pairs the shared topics for which both have a value (the ARQMath prime measures
have none where a run keeps no judged document), and its scores are means over those paired
topics (sums for counts such as ``Rel_Ret``), so that the difference printed is the one tested.

A score is undefined (``None``: ``–`` in a table, ``null`` in JSON, an empty CSV cell) when the
measure pairs no topic, or when none of the paired topics has a document relevant at the
measure's level (:attr:`~hybrid_ir.evaluation.measures.Column.relevance_level`): 0 against 0 would
read as "no difference". Its tests are undefined with it, and so are the tests of fewer than 2
paired topics. Diagnostic columns (Judged@k, counts) are compared but never marked significant.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hybrid_ir.data.qrels import Qrels
from hybrid_ir.data.runs import Run
from hybrid_ir.errors import EvaluationError, ParameterError
from hybrid_ir.evaluation.measures import evaluate, resolve_measures
from hybrid_ir.evaluation.significance import (
    RandomizationTest,
    TTest,
    holm,
    marker,
    paired_ttest,
    randomization_test,
)
from hybrid_ir.reports.tables.results import _LATEX_SPECIAL, _latex_star, format_value

DIGITS = 4
"""Digits of scores, as ``hybrid-ir evaluate`` prints them."""


@dataclass(frozen=True)
class Coverage:
    """How many of the qrels topics a run is compared on with the baseline."""

    run: str
    shared: int
    qrels: int

    @property
    def dropped(self) -> int:
        return self.qrels - self.shared


@dataclass(frozen=True)
class Comparison:
    """One run against the baseline on one measure, over ``topics`` paired topics; a score or
    test that is undefined there is ``None`` (module docstring)."""

    measure: str
    run: str
    path: str
    topics: int
    score: float | None
    baseline: float | None
    count: bool
    ttest: TTest | None
    randomization: RandomizationTest | None
    diagnostic: bool = False
    ttest_holm: float | None = None
    randomization_holm: float | None = None

    @property
    def difference(self) -> float | None:
        if self.score is None or self.baseline is None:
            return None
        return self.score - self.baseline

    @property
    def marker(self) -> str:
        """``*`` / ``**`` from the t-test's p, Holm-adjusted when the table is; none on a
        diagnostic column or without a test."""
        if self.diagnostic or self.ttest is None:
            return ""
        return marker(self.ttest.pvalue if self.ttest_holm is None else self.ttest_holm)


@dataclass(frozen=True)
class CompareTable:
    baseline: str
    baseline_path: str
    qrels: str
    rows: tuple[Comparison, ...]
    coverage: tuple[Coverage, ...]
    permutations: int
    seed: int
    holm: bool


def short_names(paths: Sequence[str | Path]) -> list[str]:
    """A short, unambiguous name per run file: its stem (``.gz`` and then one suffix dropped),
    with as many parent folders as it takes to tell apart files of the same stem, and the full
    path for files that differ only in their suffix. The same file given twice is an error."""
    resolved = [Path(path).resolve() for path in paths]
    seen: dict[Path, str] = {}
    for path, given in zip(resolved, paths, strict=True):
        if path in seen:
            raise ParameterError(f"{given} is given twice (also as {seen[path]})")
        seen[path] = str(given)

    def name(path: Path, depth: int) -> str:
        stem = Path(path.name.removesuffix(".gz")).stem
        parents = path.parent.parts[1:]  # without the root, which no name needs
        if depth > len(parents) + 1:
            return str(path)
        return "/".join([*parents[len(parents) - depth + 1 :], stem])

    depths = [1] * len(resolved)
    while True:
        names = [name(path, depth) for path, depth in zip(resolved, depths, strict=True)]
        clashes = {n for n in names if names.count(n) > 1}
        if not clashes:
            return names
        depths = [d + 1 if n in clashes else d for n, d in zip(names, depths, strict=True)]


def _answered(run: Run, qrels: Qrels) -> set[str]:
    return {topic for topic, docs in run.items() if docs and topic in qrels}


def compare_runs(
    qrels_file: tuple[str, Qrels],
    baseline: tuple[str, Run],
    runs: Sequence[tuple[str, Run]],
    measures: Sequence[str],
    permutations: int,
    seed: int,
    adjust: bool = False,
) -> CompareTable:
    """Every run of ``runs`` against ``baseline`` on every column of ``measures``, on their
    shared topics; runs, baseline and qrels come as (path, contents) pairs. Fewer than 2 shared
    topics is an error naming the runs; ``adjust`` adds Holm–Bonferroni-adjusted p-values
    across the runs of each measure."""
    qrels_name, qrels = qrels_file
    columns = resolve_measures(measures)
    names = short_names([baseline[0], *(path for path, _ in runs)])
    base_name, run_names = names[0], names[1:]
    base_topics = _answered(baseline[1], qrels)
    shared: dict[str, set[str]] = {}
    for (path, run), run_name in zip(runs, run_names, strict=True):
        shared[run_name] = _answered(run, qrels) & base_topics
        if len(shared[run_name]) < 2:
            raise EvaluationError(
                f"{run_name} ({path}) and the baseline {base_name} ({baseline[0]}) share "
                f"{len(shared[run_name])} topic(s) with {qrels_name}: at least 2 are needed"
            )

    # A topic's scores do not depend on the other topics: each run is scored on the qrels of
    # the topics it answers, so that evaluate does not warn of unanswered topics scoring 0.
    def scored(path: str, run: Run) -> dict[str, dict[str, float]]:
        answered = {topic: qrels[topic] for topic in _answered(run, qrels)}
        return evaluate(answered, run, measures, (qrels_name, path)).per_query

    base_scores = scored(baseline[0], baseline[1])
    rows: list[Comparison] = []
    for (path, run), run_name in zip(runs, run_names, strict=True):
        scores = scored(path, run)
        for column in columns:
            topics = scores[column.name].keys() & base_scores[column.name].keys()
            mine = {t: scores[column.name][t] for t in topics & shared[run_name]}
            theirs = {t: base_scores[column.name][t] for t in mine}
            defined = bool(mine) and _has_relevant(qrels, mine, column.relevance_level)
            tested = defined and len(mine) >= 2
            rows.append(
                Comparison(
                    column.name,
                    run_name,
                    str(path),
                    len(mine),
                    _aggregate(mine, column.total) if defined else None,
                    _aggregate(theirs, column.total) if defined else None,
                    column.total,
                    paired_ttest(mine, theirs) if tested else None,
                    randomization_test(mine, theirs, permutations, seed) if tested else None,
                    column.diagnostic,
                )
            )
    if adjust:
        rows = _holm_adjusted(rows)
    order = {column.name: index for index, column in enumerate(columns)}
    rows.sort(key=lambda row: order[row.measure])  # stable: runs keep their order per measure
    coverage = tuple(Coverage(name, len(shared[name]), len(qrels)) for name in run_names)
    return CompareTable(
        base_name, str(baseline[0]), qrels_name, tuple(rows), coverage, permutations, seed, adjust
    )


def _has_relevant(qrels: Qrels, topics: dict[str, float], level: int | None) -> bool:
    """Whether some topic of ``topics`` has a document relevant at ``level`` (a column without
    a level, a diagnostic, is defined without one)."""
    if level is None:
        return True
    return any(grade >= level for topic in topics for grade in qrels[topic].values())


def _aggregate(scores: dict[str, float], total: bool) -> float:
    return sum(scores.values()) if total else sum(scores.values()) / len(scores)


def _holm_adjusted(rows: list[Comparison]) -> list[Comparison]:
    """The rows with their p-values adjusted across the runs of each measure that have a test."""
    adjusted = list(rows)
    for measure in dict.fromkeys(row.measure for row in rows):
        tests = [
            (index, row.ttest.pvalue, row.randomization.pvalue)
            for index, row in enumerate(rows)
            if row.measure == measure and row.ttest is not None and row.randomization is not None
        ]
        indices = [index for index, _, _ in tests]
        ttests = holm([pvalue for _, pvalue, _ in tests])
        randomized = holm([pvalue for _, _, pvalue in tests])
        for index, ttest_p, randomized_p in zip(indices, ttests, randomized, strict=True):
            adjusted[index] = replace(
                rows[index], ttest_holm=ttest_p, randomization_holm=randomized_p
            )
    return adjusted


# --- rendering -------------------------------------------------------------------------------


def _p_text(pvalue: float | None) -> str:
    if pvalue is None:
        return "–"
    return "<0.0001" if pvalue < 0.0001 else f"{pvalue:.4f}"


def _headers(table: CompareTable) -> list[str]:
    headers = ["measure", "run", "topics", "score", table.baseline, "Δ", "t-test p", "rand. p"]
    return headers + (["t-test p (Holm)", "rand. p (Holm)"] if table.holm else [])


def _cells(
    table: CompareTable, row: Comparison, star: Callable[[str], str] = lambda mark: mark
) -> list[str]:
    digits = 0 if row.count else DIGITS
    cells = [
        str(row.topics),
        format_value(row.score, digits) + star(row.marker),
        format_value(row.baseline, digits),
        format_value(row.difference, digits, signed=True),
        _p_text(row.ttest.pvalue if row.ttest else None),
        _p_text(row.randomization.pvalue if row.randomization else None),
    ]
    if table.holm:
        cells += [_p_text(row.ttest_holm), _p_text(row.randomization_holm)]
    return cells


def _blocks(table: CompareTable) -> list[tuple[str, list[Comparison]]]:
    measures = dict.fromkeys(row.measure for row in table.rows)
    return [(m, [row for row in table.rows if row.measure == m]) for m in measures]


def title(table: CompareTable) -> str:
    return f"Runs against the baseline {table.baseline} (qrels {Path(table.qrels).name})"


def legend(table: CompareTable) -> list[str]:
    """What the columns mean, the test settings and the topics compared per run."""
    adjusted = ", Holm–Bonferroni-adjusted across the runs of each measure" if table.holm else ""
    lines = [
        "score and the baseline's: the mean over the topics paired for the measure (topics "
        "column), a sum for counts; Δ: score minus the baseline's.",
        f"`*` / `**`: p < 0.05 / p < 0.01 in the two-tailed paired t-test (scipy's ttest_rel, "
        f"as the papers){adjusted}.",
        f"rand. p: two-tailed paired randomization test of the mean difference, "
        f"{table.permutations} random sign flips of the per-topic differences, seed "
        f"{table.seed}; p = (1 + flips at least as extreme) / (1 + flips), or exact over all "
        f"2^n flips when 2^n <= {table.permutations}.",
    ]
    if table.holm:
        lines.append(
            "(Holm): the p-value adjusted by Holm–Bonferroni across the runs of each measure."
        )
    diagnostics = list(dict.fromkeys(row.measure for row in table.rows if row.diagnostic))
    if diagnostics:
        lines.append(
            f"{', '.join(diagnostics)}: diagnostics of the runs and their judgments, not "
            "effectiveness: never marked."
        )
    if any(row.ttest is None for row in table.rows):
        lines.append(
            "–: undefined: no paired topic, or none with a document relevant at the measure's "
            "level; a p-value also with fewer than 2 paired topics."
        )
    qrels = table.coverage[0].qrels
    counts = ", ".join(f"{c.run} {c.shared} ({c.dropped} dropped)" for c in table.coverage)
    lines.append(
        f"Topics compared with the baseline, of the {qrels} qrels topics (a topic is dropped "
        f"unless both runs answer it): {counts}."
    )
    files = "; ".join(
        f"{name} = {path}"
        for name, path in dict.fromkeys(
            [(table.baseline, table.baseline_path), *((row.run, row.path) for row in table.rows)]
        )
    )
    return [*lines, f"Files: {files}; qrels = {table.qrels}"]


def render_markdown(table: CompareTable) -> str:
    headers = _headers(table)
    lines = [f"# {title(table)}", "", "| " + " | ".join(headers) + " |"]
    lines.append("|" + "---|" * len(headers))
    for measure, rows in _blocks(table):
        for position, row in enumerate(rows):
            first = measure if position == 0 else ""
            lines.append("| " + " | ".join([first, row.run, *_cells(table, row)]) + " |")
    lines += ["", *(f"- {line}" for line in legend(table))]
    return "\n".join(lines) + "\n"


# Text that LaTeX sets only in math mode, after _LATEX_SPECIAL has escaped the rest.
_LATEX_MATH = (
    ("<=", r"$\le$"), ("<", "$<$"), (r"2\textasciicircum{}n", "$2^n$"), ("Δ", r"$\Delta$"),
    ("–", "--"),
)  # fmt: skip


def _latex(text: str, escape: bool = True) -> str:
    text = text.translate(_LATEX_SPECIAL) if escape else text
    for plain, latex in _LATEX_MATH:
        text = text.replace(plain, latex)
    return text


def render_latex(table: CompareTable) -> str:
    """A booktabs table as the workflow's LaTeX tables, the legend in the caption."""
    headers = _headers(table)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\begin{tabular}{ll" + "r" * (len(headers) - 2) + "}",
        r"\toprule",
        " & ".join(_latex(header) for header in headers) + r" \\",
        r"\midrule",
    ]
    for index, (measure, rows) in enumerate(_blocks(table)):
        if index:
            lines.append(r"\midrule")
        for position, row in enumerate(rows):
            cells = [_latex(cell, escape=False) for cell in _cells(table, row, _latex_star)]
            first = _latex(measure) if position == 0 else ""
            lines.append(" & ".join([first, _latex(row.run), *cells]) + r" \\")
    caption = " ".join([f"{title(table)}.", *legend(table)[:-1]]).replace("`", "")
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        rf"\caption{{{_latex(caption)}}}",
        r"\label{tab:compare}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


def render_csv(table: CompareTable) -> str:
    """Long format, one line per measure and run, every number unrounded (p-values too)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["measure", "run", "file", "baseline", "topics", "shared_topics", "dropped_topics",
              "score", "baseline_score", "difference", "t_statistic", "ttest_p",
              "randomization_p", "permutations", "exact", "seed"]  # fmt: skip
    writer.writerow(header + (["ttest_p_holm", "randomization_p_holm"] if table.holm else []))
    coverage = {c.run: c for c in table.coverage}
    for row in table.rows:
        ttest, test = row.ttest, row.randomization
        values = [
            row.measure, row.run, row.path, table.baseline, row.topics,
            coverage[row.run].shared, coverage[row.run].dropped, _csv(row.score),
            _csv(row.baseline), _csv(row.difference), _csv(ttest.statistic if ttest else None),
            _csv(ttest.pvalue if ttest else None), _csv(test.pvalue if test else None),
            test.permutations if test else "", test.exact if test else "", table.seed,
        ]  # fmt: skip
        if table.holm:
            values += [_csv(row.ttest_holm), _csv(row.randomization_holm)]
        writer.writerow(values)
    return out.getvalue()


def _csv(value: float | None) -> str:
    """An unrounded number, or an empty cell where it is undefined."""
    return "" if value is None else repr(value)


def _number(value: float | None) -> float | None:
    """JSON has no NaN or infinity: a p-value or statistic that is not finite becomes null."""
    return value if value is not None and math.isfinite(value) else None


def comparison_document(table: CompareTable) -> dict:
    """The comparison as plain data: its settings, each run's topic coverage, and one object
    per measure and run with every number unrounded (null where it is undefined or not finite).
    Keys: ``baseline``, ``baseline_file``, ``qrels``, ``permutations``, ``seed``, ``holm``,
    ``coverage`` (``run``, ``shared_topics``, ``qrels_topics``, ``dropped_topics``) and
    ``comparisons`` (``measure``, ``run``, ``file``, ``topics``, ``score``, ``baseline_score``,
    ``difference``, ``count``, ``t_statistic``, ``ttest_p``, ``randomization_p``,
    ``permutations``, ``exact``, and with ``holm`` ``ttest_p_holm`` and
    ``randomization_p_holm``)."""
    comparisons: list[dict] = []
    for row in table.rows:
        ttest, test = row.ttest, row.randomization
        item = {
            "measure": row.measure, "run": row.run, "file": row.path, "topics": row.topics,
            "score": _number(row.score), "baseline_score": _number(row.baseline),
            "difference": _number(row.difference), "count": row.count,
            "t_statistic": _number(ttest.statistic if ttest else None),
            "ttest_p": _number(ttest.pvalue if ttest else None),
            "randomization_p": _number(test.pvalue if test else None),
            "permutations": test.permutations if test else None,
            "exact": test.exact if test else None,
        }  # fmt: skip
        if table.holm:
            item |= {
                "ttest_p_holm": _number(row.ttest_holm),
                "randomization_p_holm": _number(row.randomization_holm),
            }
        comparisons.append(item)
    document = {
        "baseline": table.baseline, "baseline_file": table.baseline_path, "qrels": table.qrels,
        "permutations": table.permutations, "seed": table.seed, "holm": table.holm,
        "coverage": [
            {"run": c.run, "shared_topics": c.shared, "qrels_topics": c.qrels,
             "dropped_topics": c.dropped}
            for c in table.coverage
        ],
        "comparisons": comparisons,
    }  # fmt: skip
    return document


def render_json(table: CompareTable) -> str:
    """:func:`comparison_document` as one JSON document."""
    return json.dumps(comparison_document(table), indent=1, allow_nan=False) + "\n"


RENDERERS = {"md": render_markdown, "csv": render_csv, "latex": render_latex, "json": render_json}
"""Table formats of ``hybrid-ir compare --format``."""
