"""What a table's explorer page reads, by name: the table's per-topic scores, and for each column
group with rows of ours, its qrels, topics, corpus and topic labels, each row's run or
cross-validation report, and the two runs of each cross-validated fusion. The plan lists these
files for the rule (:meth:`hybrid_ir.planning.plan.Plan.explorer_inputs`), and
:mod:`hybrid_ir.reports.explore.pages` finds them under the same names; light, as the plan is built
at every start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hybrid_ir import paths
from hybrid_ir.errors import ConfigError
from hybrid_ir.reports.tables.spec import row_sources, table_groups

PER_QUERY = "per_query"


def view_key(role: str, group: str) -> str:
    """A column group's ``qrels``, ``topics``, ``corpus`` or ``labels`` file."""
    return f"{role}/{group}"


def row_key(group: str, label: str) -> str:
    """A row's run or cross-validation report in a column group."""
    return f"row/{group}/{label}"


def fusion_key(role: str, crossval: str) -> str:
    """The ``dense`` or ``base`` run of a cross-validated fusion."""
    return f"{role}/{crossval}"


def explored_groups(table: Mapping[str, Any]) -> list[dict]:
    """The column groups of ``table`` that some row has a source in (a group of published
    values only has nothing to explore)."""
    groups = table_groups(table)
    names = [group["name"] for group in groups]
    used = {
        group for block in table["blocks"] for row in block["rows"] for group in
        row_sources(row, names)
    }  # fmt: skip
    return [group for group in groups if group["name"] in used]


def explorable(table: Mapping[str, Any]) -> bool:
    """Whether a table has systems to compare topic by topic: two rows with sources, and no
    block about a single topic (paper 003's sample queries)."""
    if any("topic" in block for block in table["blocks"]):
        return False
    groups = [group["name"] for group in table_groups(table)]
    rows = [row for block in table["blocks"] for row in block["rows"] if row_sources(row, groups)]
    return len(rows) >= 2


def explored_tables(config: Mapping[str, Any]) -> list[str]:
    """The tables that get an explorer page: ``explore.tables`` (null: every explorable
    table), each checked to be a configured table."""
    chosen = config["explore"]["tables"]
    tables = config["tables"]
    if chosen is None:
        return [name for name, table in tables.items() if explorable(table)]
    for name in chosen:
        if name not in tables:
            known = ", ".join(tables) or "none"
            raise ConfigError(f"config: explore.tables: {name!r} is not a table (tables: {known})")
    return list(chosen)


def explorer_inputs(
    name: str, config: Mapping[str, Any], run_path: Callable[[str, str, str], str]
) -> dict[str, str]:
    """Every file the explorer of table ``name`` reads, by the names above; ``run_path`` gives
    a configured run's file (checking the configuration makes it)."""
    table = config["tables"][name]
    label_table = config["explore"]["label_table"]
    groups = explored_groups(table)
    names = [group["name"] for group in table_groups(table)]
    inputs = {PER_QUERY: paths.result_table(name, "per_query.tsv")}
    for group in groups:
        collection = group["collection"]
        entry = config["collections"][collection]
        inputs[view_key("qrels", group["name"])] = paths.qrels(collection, group["qrels"])
        inputs[view_key("topics", group["name"])] = paths.topics(collection, group["topics"])
        if entry.get("corpus", True):
            inputs[view_key("corpus", group["name"])] = paths.corpus(collection)
        if label_table in entry.get("tables", []):
            inputs[view_key("labels", group["name"])] = paths.table(collection, label_table)
        for block in table["blocks"]:
            for row in block["rows"]:
                sources = row_sources(row, names)
                if group["name"] not in sources:
                    continue
                kind, source = sources[group["name"]]
                if kind == "run":
                    path = run_path(collection, group["topics"], source)
                else:  # a cross-validated fusion
                    path = paths.crossval(source)
                    fusion = config["crossval"][source]
                    for role in ("dense", "base"):
                        inputs[fusion_key(role, source)] = run_path(
                            fusion["collection"], fusion["topics"], fusion[role]
                        )
                inputs[row_key(group["name"], row["label"])] = path
    return inputs
