"""Result tables: reproduced numbers beside the expected (published or pinned) ones."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.data.qrels import Qrels, read_qrels
from hybrid_ir.data.runs import read_run, topic_sort_key
from hybrid_ir.errors import ConfigError
from hybrid_ir.evaluation.measures import (
    Evaluation,
    evaluate,
    resolve_measures,
)
from hybrid_ir.evaluation.significance import paired_ttest
from hybrid_ir.reports.tables.spec import (
    NOTE_PLACEHOLDER,
    column_key,
    row_sources,
    source_key,
    table_groups,
)


def markdown_footer(footer: str) -> str:
    """The provenance line that closes a Markdown table, set off from its notes."""
    return f"\n_{footer}_\n" if footer else ""


# --- paper-style tables from a table specification --------------------------------------------

# How a column may be displayed: the factor its values are multiplied by, the unit its header
# gets, and the digits it is printed with (paper 000 prints Judged as 45.3 % and 21.9 ‰).
DISPLAYS = {"percent": (100, "%", 1), "permille": (1000, "‰", 1)}
# Marks a published-only row's label; its values are the paper's and it is never t-tested.
PUBLISHED_ONLY_MARK = "§"
# Marks the rows the others are t-tested against: not `*`, which marks p < 0.05, nor `†`, which a
# paper's own labels use (paper 000's "MathBERT †").
REFERENCE_MARK = "(ref.)"


@dataclass(frozen=True)
class GroupSpec:
    """Columns from one collection and topic set; ``name`` is empty in a table without groups."""

    name: str
    columns: tuple[str, ...]
    measures: tuple[str, ...] = ()
    display: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RowSpec:
    """One table row: where its scores come from in each group (``group -> (kind, path)``,
    kind ``run``, a run file evaluated here, or ``crossval``, a cross-validation report whose
    per-topic scores are the cross-validated system's), the paper's published values (by column
    key), the cells its sources lack, and the row it is t-tested against. A published-only row
    has no sources and shows the paper's values only."""

    label: str
    sources: Mapping[str, tuple[str, str]]
    published: dict[str, float]
    unavailable: tuple[str, ...] = ()
    topic: str | None = None
    reference: str | None = None
    published_only: bool = False
    published_source: str | None = None


@dataclass(frozen=True)
class TableSpec:
    """A table as configured: blocks of rows, column groups, a reference row, notes."""

    name: str
    title: str
    groups: tuple[GroupSpec, ...]
    blocks: tuple[tuple[str, tuple[RowSpec, ...]], ...]
    reference: str | None
    notes: tuple[str, ...]
    digits: int = 3
    verdicts: tuple[dict, ...] = ()
    overlaps: tuple[dict, ...] = ()
    largest_gains: tuple[dict, ...] = ()

    @property
    def rows(self) -> list[RowSpec]:
        return [row for _, rows in self.blocks for row in rows]

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column's key, group after group."""
        return tuple(column_key(g.name, column) for g in self.groups for column in g.columns)

    @property
    def has_published(self) -> bool:
        """Whether rows with scores of ours have the paper's values beside them (the paper and
        Δ sub-columns); published-only rows show theirs in the value cells otherwise."""
        return any(row.published for row in self.rows if not row.published_only)

    @property
    def reference_labels(self) -> set[str]:
        """Labels of the rows that other rows are t-tested against."""
        return {row.reference for row in self.rows if row.reference} & {
            row.label for row in self.rows
        }

    @property
    def block_references(self) -> dict[str, str]:
        """Block name -> its reference row, for blocks whose reference is not the table's."""
        return {
            block: rows[0].reference
            for block, rows in self.blocks
            if rows[0].reference is not None and rows[0].reference != self.reference
        }

    def display(self, key: str) -> tuple[int, str, int | None]:
        """A column's factor, header unit and digits (``None``: the table's)."""
        for group in self.groups:
            for column in group.columns:
                if column_key(group.name, column) == key and column in group.display:
                    return DISPLAYS[group.display[column]]
        return 1, "", None

    def header(self, key: str) -> str:
        unit = self.display(key)[1]
        return f"{key} {unit}" if unit else key


@dataclass(frozen=True)
class Cell:
    value: float | None
    marker: str = ""
    p_value: float | None = None
    published: float | None = None

    @property
    def difference(self) -> float | None:
        if self.value is None or self.published is None:
            return None
        return self.value - self.published


def _keyed(groups: Sequence[str], values: Mapping) -> dict[str, float]:
    """Published values by column key: ``column -> value`` in a table without groups,
    ``group -> column -> value`` in a grouped one."""
    if groups == [""]:
        return {str(column): float(value) for column, value in values.items()}
    return {
        column_key(group, str(column)): float(value)
        for group, by_column in values.items()
        for column, value in by_column.items()
    }


def table_spec(name: str, config: dict, sources: Mapping[str, str]) -> TableSpec:
    """Build a :class:`TableSpec` from its config entry; ``sources`` maps each row's
    :func:`source_key` in each group it has a source in to the file."""
    groups = tuple(
        GroupSpec(
            name=group["name"],
            columns=tuple(group["columns"]),
            measures=tuple(group.get("measures", ())),
            display=dict(group.get("display", {})),
        )
        for group in table_groups(config)
    )
    names = [group.name for group in groups]
    blocks = []
    for block in config["blocks"]:
        reference = block.get("reference", config.get("reference"))
        rows = tuple(
            RowSpec(
                label=row["label"],
                sources={
                    group: (kind, sources[source_key(row["label"], group)])
                    for group, (kind, _) in row_sources(row, names).items()
                },
                published=_keyed(names, row.get("published", {})),
                unavailable=tuple(row.get("unavailable", [])),
                topic=block.get("topic"),
                reference=reference,
                published_only="published_only" in row,
                published_source=row.get("published_source"),
            )
            for row in block["rows"]
        )
        blocks.append((block.get("name", ""), rows))
    return TableSpec(
        name=name,
        title=config.get("title", name),
        groups=groups,
        blocks=tuple(blocks),
        reference=config.get("reference"),
        notes=tuple(config.get("notes", [])),
        digits=config.get("digits", 3),
        verdicts=tuple(config.get("verdicts", [])),
        overlaps=tuple(config.get("overlaps", [])),
        largest_gains=tuple(config.get("largest_gains", [])),
    )


def score_rows(
    spec: TableSpec, inputs: Mapping[str, str | Path]
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, dict[str, float]]]:
    """Per-topic and aggregate scores of every row by column key: run files are evaluated
    against their group's qrels (``inputs[source_key("qrels", group)]``) with the group's
    measures, cross-validation reports give their cross-validated test scores. A published-only
    row has none."""

    qrels: dict[str, Qrels] = {}
    per_query: dict[str, dict[str, dict[str, float]]] = {}
    aggregate: dict[str, dict[str, float]] = {}
    evaluations: dict[tuple[str, str], Evaluation] = {}
    for row in spec.rows:
        per_query[row.label], aggregate[row.label] = {}, {}
        for group in spec.groups:
            if group.name not in row.sources:
                continue
            kind, source = row.sources[group.name]
            if kind == "crossval":
                with open(source, encoding="utf-8") as handle:
                    columns = json.load(handle)["columns"]
                topics = {name: value["per_topic"] for name, value in columns.items()}
                means = {name: value["mean_test_score"] for name, value in columns.items()}
            else:
                if group.name not in qrels:
                    qrels[group.name] = read_qrels(inputs[source_key("qrels", group.name)])
                if (group.name, source) not in evaluations:
                    evaluations[group.name, source] = evaluate(
                        qrels[group.name], read_run(source), list(group.measures)
                    )
                evaluation = evaluations[group.name, source]
                topics, means = evaluation.per_query, evaluation.aggregate
            if row.topic is not None:
                # A block about one topic (paper 003's sample queries) shows that topic's scores.
                topics = {
                    column: {row.topic: scores[row.topic]}
                    for column, scores in topics.items()
                    if row.topic in scores
                }
                means = {column: scores[row.topic] for column, scores in topics.items()}
            for column, scores in topics.items():
                per_query[row.label][column_key(group.name, column)] = scores
            for column, mean in means.items():
                aggregate[row.label][column_key(group.name, column)] = mean
    return per_query, aggregate


def write_per_query(
    spec: TableSpec, per_query: dict[str, dict[str, dict[str, float]]], path: str | Path
) -> None:
    """Every row's per-topic scores of the table's columns (long format, as computed: a
    percent or per-mille column's fractions), for one's own tests."""

    with atomic_output(path) as out:
        out.write("run\tcolumn\ttopic\tvalue\n")
        for row in spec.rows:
            for column in spec.columns:
                if column in row.unavailable:
                    continue
                scores = per_query[row.label].get(column, {})
                for topic in sorted(scores, key=topic_sort_key):
                    out.write(f"{row.label}\t{column}\t{topic}\t{scores[topic]!r}\n")


def _reference_scores(
    spec: TableSpec, per_query: dict[str, dict[str, dict[str, float]]], row: RowSpec, column: str
) -> dict[str, float] | None:
    """The per-topic scores of a column of the row's reference row, if it has that column."""
    reference = next((other for other in spec.rows if other.label == row.reference), None)
    if reference is None or reference is row or column in reference.unavailable:
        return None
    return per_query[reference.label].get(column)


def table_cells(
    spec: TableSpec, per_query: dict[str, dict[str, dict[str, float]]], aggregate: dict
) -> dict[str, dict[str, Cell]]:
    """Cells of every row: our value, the t-test marker against the row's reference (its
    block's, else the table's; per group, with the reference's run in that group), the paper's
    value. A percent or per-mille column's values are in its unit, as the paper's are.

    ``per_query[label][column]`` maps topics to scores, ``aggregate[label][column]`` is the
    mean the table prints.
    """

    cells: dict[str, dict[str, Cell]] = {}
    for row in spec.rows:
        cells[row.label] = {}
        for column in spec.columns:
            published = row.published.get(column)
            if column in row.unavailable or column not in aggregate[row.label]:
                cells[row.label][column] = Cell(None, published=published)
                continue
            mark, p_value = "", None
            reference = _reference_scores(spec, per_query, row, column)
            if reference is not None:
                test = paired_ttest(per_query[row.label][column], reference)
                p_value, mark = test.pvalue, test.marker
            value = aggregate[row.label][column] * spec.display(column)[0]
            cells[row.label][column] = Cell(value, mark, p_value, published)
    return cells


def format_value(value: float | None, digits: int, signed: bool = False) -> str:
    if value is None:
        return "–"
    rounded = round(value, digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    return f"{rounded:+.{digits}f}" if signed else f"{rounded:.{digits}f}"


def _integral_columns(spec: TableSpec) -> set[str]:
    """Count columns (totals such as Rel_Ret), printed as integers."""

    counts = set()
    for group in spec.groups:
        for column in group.columns:
            try:
                (resolved,) = resolve_measures([column])
            except (ConfigError, ValueError):
                continue
            if resolved.total:
                counts.add(column_key(group.name, column))
    return counts


def _row_texts(
    spec: TableSpec,
    row: RowSpec,
    column: str,
    cell: Cell,
    integral: bool,
    star: Callable[[str], str] = lambda marker: marker,
) -> list[str]:
    digits = 0 if integral else spec.display(column)[2] or spec.digits
    if row.published_only and not spec.has_published:
        return [format_value(cell.published, digits)]
    texts = [format_value(cell.value, digits) + star(cell.marker)]
    if spec.has_published:
        texts += [format_value(cell.published, digits), format_value(cell.difference, digits, True)]
    return texts


def _label(spec: TableSpec, row: RowSpec) -> str:
    marks = [PUBLISHED_ONLY_MARK] if row.published_only else []
    if row.label in spec.reference_labels:
        marks.append(REFERENCE_MARK)
    return " ".join([row.label, *marks])


def _headers(spec: TableSpec) -> list[str]:
    headers = ["", "run"]
    for column in spec.columns:
        header = spec.header(column)
        headers += [header, "paper", "Δ"] if spec.has_published else [header]
    return headers


def render_markdown(
    spec: TableSpec,
    cells: dict[str, dict[str, Cell]],
    computed_notes: Sequence[str] = (),
    footer: str = "",
) -> str:
    headers = _headers(spec)
    integral = _integral_columns(spec)
    lines = [f"# {spec.title}", "", "| " + " | ".join(headers) + " |"]
    lines.append("|" + "---|" * len(headers))
    for block, rows in spec.blocks:
        for position, row in enumerate(rows):
            texts = [
                text
                for column in spec.columns
                for text in _row_texts(
                    spec, row, column, cells[row.label][column], column in integral
                )
            ]
            lines.append(
                "| "
                + " | ".join([block if position == 0 else "", _label(spec, row), *texts])
                + " |"
            )
    lines.append("")
    lines += _legend(spec, cells) + [f"- {note}" for note in computed_notes]
    return "\n".join(lines) + "\n" + markdown_footer(footer)


def fill_note(spec: TableSpec, cells: dict[str, dict[str, Cell]], note: str) -> str:
    """``note`` with each placeholder replaced by the cell it names, so that a note never
    quotes a number other than the table's; a placeholder naming no row, no column, or a cell
    with no value is a :class:`ConfigError` naming the table and the placeholder."""

    integral = _integral_columns(spec)

    def value(match: re.Match[str]) -> str:
        kind, label, column = match.groups()
        where = f"config: tables.{spec.name}.notes: {match.group(0)}"
        if label not in cells:
            raise ConfigError(f"{where}: no row labelled {label!r}")
        if column not in cells[label]:
            raise ConfigError(f"{where}: no column {column!r} (columns: {', '.join(spec.columns)})")
        cell = cells[label][column]
        number = cell.value if kind == "row" else cell.published
        if number is None:
            side = "value of ours" if kind == "row" else "published value"
            raise ConfigError(f"{where}: row {label!r} has no {side} in {column!r}")
        return format_value(
            number, 0 if column in integral else spec.display(column)[2] or spec.digits
        )

    return NOTE_PLACEHOLDER.sub(value, note)


def _legend(spec: TableSpec, cells: dict[str, dict[str, Cell]]) -> list[str]:
    legend = []
    blocks = spec.block_references
    if spec.reference or blocks:
        against = f"the reference row ({spec.reference})" if spec.reference else "its reference row"
        if blocks:
            against += " (in " + "; ".join(f"{b}: {r}" for b, r in blocks.items()) + ")"
        legend.append(
            f"- `*` / `**`: the row differs from {against} at "
            "p < 0.05 / p < 0.01, two-tailed paired t-test over the topics both runs share."
        )
        legend.append(
            f"- {REFERENCE_MARK}: a reference row, the one the others are tested against."
        )
    if spec.has_published:
        legend.append("- paper: the value printed in the paper; Δ: ours minus the paper's.")
    if any(row.published_only for row in spec.rows):
        legend.append(
            f"- {PUBLISHED_ONLY_MARK}: published-only row: the paper's values, with no run here, "
            "so never in a significance test."
        )
    units = {spec.display(column)[1] for column in spec.columns} - {""}
    for unit, word in (("%", "percent"), ("‰", "per mille")):
        if unit in units:
            legend.append(f"- {unit}: the measure in {word}, ours and the paper's alike.")
    legend.append("- `–`: not available for this row.")
    sources = [
        f"- Source of {_label(spec, row)}: {row.published_source}."
        for row in spec.rows
        if row.published_source
    ]
    return legend + sources + [f"- {fill_note(spec, cells, note)}" for note in spec.notes]


def _latex_star(marker: str) -> str:
    return f"$^{{{marker}}}$" if marker else ""


_LATEX_SPECIAL = str.maketrans(
    {
        "&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$", "{": r"\{", "}": r"\}",
        "\\": r"\textbackslash{}", "^": r"\textasciicircum{}", "~": r"\textasciitilde{}",
        "‰": r"\textperthousand{}", "§": r"\S{}", "†": r"\textdagger{}",
    }
)  # fmt: skip


def render_latex(spec: TableSpec, cells: dict[str, dict[str, Cell]], footer: str = "") -> str:
    """A booktabs table; a grouped table's group names span their columns, and the paper and
    Δ sub-columns appear when published values exist. ``footer`` (provenance) follows the
    table as a comment, so that it never shows in a paper that inputs the file."""
    width = 3 if spec.has_published else 1
    integral = _integral_columns(spec)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\begin{tabular}{ll" + "r" * width * len(spec.columns) + "}",
        r"\toprule",
    ]
    titles = []
    if spec.groups[0].name:
        spans, rules, first = [], [], 3
        for group in spec.groups:
            span = width * len(group.columns)
            spans.append(rf"\multicolumn{{{span}}}{{c}}{{{group.name.translate(_LATEX_SPECIAL)}}}")
            rules.append(rf"\cmidrule(lr){{{first}-{first + span - 1}}}")
            first += span
        lines += [" & & " + " & ".join(spans) + r" \\", " ".join(rules)]
    for group in spec.groups:
        for column in group.columns:
            unit = spec.display(column_key(group.name, column))[1]
            title = f"{column} {unit}" if unit else column
            titles.append(rf"\multicolumn{{{width}}}{{c}}{{{title.translate(_LATEX_SPECIAL)}}}")
    lines.append(" & run & " + " & ".join(titles) + r" \\")
    if spec.has_published:
        sub = " & ".join(["ours & paper & $\\Delta$"] * len(spec.columns))
        lines.append(" & & " + sub + r" \\")
    lines.append(r"\midrule")
    for index, (block, rows) in enumerate(spec.blocks):
        if index:
            lines.append(r"\midrule")
        for position, row in enumerate(rows):
            texts = [
                text
                for column in spec.columns
                for text in _row_texts(
                    spec, row, column, cells[row.label][column], column in integral, _latex_star
                )
            ]
            name = block.translate(_LATEX_SPECIAL) if position == 0 else ""
            line = " & ".join([name, _label(spec, row).translate(_LATEX_SPECIAL), *texts]) + r" \\"
            lines.append(line.replace("–", "--"))
    lines += [
        r"\bottomrule",
        r"\end{tabular}",
        rf"\caption{{{spec.title.translate(_LATEX_SPECIAL)}}}",
    ]
    lines += [rf"\label{{tab:{spec.name}}}", r"\end{table}"]
    if footer:
        lines.append(f"% {footer}")
    return "\n".join(lines) + "\n"


def write_table_csv(spec: TableSpec, cells: dict[str, dict[str, Cell]], path: str | Path) -> None:
    """Long format: one line per row and column (its header: the group and the unit, if any),
    with p-value, published value and difference; a published-only row's marker says so, and
    ``reference`` is ``true`` on the rows the others are t-tested against."""
    with atomic_output(path) as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(
            [
                "block", "run", "column", "value", "marker", "p_value", "published", "difference",
                "reference",
            ]
        )  # fmt: skip
        for block, rows in spec.blocks:
            for row in rows:
                for column in spec.columns:
                    cell = cells[row.label][column]
                    marker = "published-only" if row.published_only else cell.marker
                    writer.writerow(
                        [
                            block, row.label, spec.header(column),
                            "" if cell.value is None else repr(cell.value), marker,
                            "" if cell.p_value is None else repr(cell.p_value),
                            "" if cell.published is None else repr(cell.published),
                            "" if cell.difference is None else repr(round(cell.difference, 10)),
                            "true" if row.label in spec.reference_labels else "false",
                        ]
                    )  # fmt: skip
