"""The papers' published values that tables print beside ours, from ``expected/`` files named by
a table's ``published_from``."""

from __future__ import annotations

import copy

import yaml

from hybrid_ir.data.formats import load_yaml
from hybrid_ir.errors import ConfigError
from hybrid_ir.reports.tables.spec import table_groups


def fill_published(config: dict, expected: list[dict], source: str = "config") -> None:
    """Give each row of a table with ``published_from`` the values that file publishes for the
    row's key (its ``published_only`` key, run, cross-validation entry, else its label) in
    ``published`` (key -> column -> value; key -> group -> column -> value in a grouped table),
    or for the run on the block's topic (``published_by_topic``: topic -> run -> column ->
    value), and the row's source from ``sources`` (key -> text), so that a paper's numbers are
    written once, where their source is named. The file is an expected-scores file or one
    holding published numbers only. Then check every row's published values: columns the table
    (group) shows, and some for each published-only row."""
    documents = {document["path"]: document for document in expected}
    for name, table in config["tables"].items():
        document: dict = {}
        if "published_from" in table:
            path = table["published_from"]
            if path not in documents:
                documents[path] = _published_file(path, f"{source}: tables.{name}.published_from")
            document = documents[path]
        for block in table["blocks"]:
            if "topic" in block:
                published = document.get("published_by_topic", {}).get(block["topic"], {})
            else:
                published = document.get("published", {})
            for row in block["rows"]:
                key = next(
                    (row[k] for k in ("published_only", "run", "crossval") if k in row),
                    row["label"],
                )
                if key in published and "published" not in row:
                    row["published"] = copy.deepcopy(published[key])
                if key in document.get("sources", {}):
                    row["published_source"] = document["sources"][key]
                _check_published(f"{source}: tables.{name}", table, row, key)


def _check_published(where: str, table: dict, row: dict, key: str) -> None:
    at = f"{where}.blocks.{row['label']}"
    origin = f" ({table['published_from']}, key {key!r})" if "published_from" in table else ""
    if "published_only" in row:
        if not row.get("published"):
            raise ConfigError(f"{at}.published_only: no published values for {key!r}{origin}")
        if "published_source" not in row:
            raise ConfigError(
                f"{at}.published_only: no 'sources' entry naming where {key!r} comes from{origin}"
            )
    columns = {group["name"]: group["columns"] for group in table_groups(table)}
    published = row.get("published", {})
    by_group = {"": published} if list(columns) == [""] else published
    for group, values in by_group.items():
        if group not in columns:
            raise ConfigError(
                f"{at}.published{origin}: no group {group!r} (groups: {', '.join(columns)})"
            )
        if not isinstance(values, dict):
            raise ConfigError(
                f"{at}.published{origin}: {group!r}: a grouped table's published values are "
                "group -> column -> value"
            )
        for column, value in values.items():
            if column not in columns[group] or not isinstance(value, (int, float)):
                shown = f"group {group!r}" if group else "the table"
                raise ConfigError(
                    f"{at}.published{origin}: {column!r} is not a column {shown} shows "
                    f"({', '.join(columns[group])})"
                )


def _published_file(path: str, where: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            document = load_yaml(handle)
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{where}: cannot read {path!r}: {error}") from None
    if not isinstance(document, dict) or not {"published", "published_by_topic"} & set(document):
        raise ConfigError(f"{where}: {path!r} has no 'published' or 'published_by_topic' section")
    return document
