"""How a configured table names its parts: column groups, each row's sources per group, the
keys of columns and inputs, and the placeholders of its notes. Light and free of the output
code, so that the configuration layer checks tables without depending on
:mod:`hybrid_ir.reports.tables.results`, which builds them."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

# A number a note quotes, filled from the table: ``{row:<label>/<column>}`` is our value,
# ``{paper:<label>/<column>}`` the paper's, each printed as its cell prints it (the label may
# contain "/": the column is what follows the last one).
NOTE_PLACEHOLDER = re.compile(r"\{(row|paper):([^{}]+)/([^{}/]+)\}")


def column_key(group: str, column: str) -> str:
    """A column's name in the table's cells, CSV and per-topic TSV: ``column`` itself in a
    table without groups, ``"<group>: <column>"`` in a grouped one (columns repeat across
    groups, e.g. BPref)."""
    return f"{group}: {column}" if group else column


def source_key(label: str, group: str) -> str:
    """The rule's input name of a row's run (or cross-validation report) in a group; ``qrels``
    as the label names the group's qrels."""
    return f"{group}: {label}" if group else label


def table_groups(table: Mapping) -> list[dict]:
    """A table's column groups: its ``groups``, else one unnamed group of the table's own
    collection, topics, qrels, measures, columns and display."""
    if "groups" in table:
        return list(table["groups"])
    keys = ("collection", "topics", "qrels", "measures", "columns", "display")
    return [{"name": "", **{key: table[key] for key in keys if key in table}}]


def row_sources(row: Mapping, groups: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Group -> (``run`` or ``crossval``, its name) of a configured row: ``run`` / ``crossval``
    stand for every group, ``runs`` names a run per group, a published-only row has none."""
    if "runs" in row:
        return {group: ("run", name) for group, name in row["runs"].items()}
    for kind in ("run", "crossval"):
        if kind in row:
            return dict.fromkeys(groups, (kind, row[kind]))
    return {}


def note_placeholders(note: str) -> list[tuple[str, str, str]]:
    """``(row | paper, row label, column)`` of each placeholder in a note."""
    return [
        (match.group(1), match.group(2), match.group(3))
        for match in NOTE_PLACEHOLDER.finditer(note)
    ]
