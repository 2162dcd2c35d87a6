"""Configuration templates: entries written once for several topic sets (``{topics}`` in a name,
``topics: [..]``), per-topic rows (``{topic}``), blocks for some topic sets only
(``only_for_topics``), and fusions listed by topic set."""

from __future__ import annotations

import copy
from typing import Any

from hybrid_ir.errors import ConfigError
from hybrid_ir.evaluation.checks import topic_sets

# Sections whose entries may name several topic sets; each becomes one entry per set.
EXPANDED_SECTIONS = ("tables", "crossval", "figures")


def expand_topic_lists(config: dict, source: str = "config") -> None:
    """Turn an entry with ``topics: [a, b]`` into one entry per topic set, in place.

    The entry's name must contain ``{topics}`` (e.g. ``paper000-table3-{topics}``); in the copy
    for set ``a``, ``{topics}`` in the name and in any text becomes ``a`` and ``{topics_name}``
    the collection's display name of the set (``topic_names``, else the set's own name). A table
    block with ``per_topic`` becomes one block per topic; one with ``only_for_topics`` stays
    only in the tables of those sets (paper 000 prints previous systems for ARQMath-2 only).
    """
    for section in EXPANDED_SECTIONS:
        expanded: dict[str, dict] = {}
        for name, entry in config[section].items():
            if not isinstance(entry.get("topics"), list):  # one set, or a collection_stats figure
                _add_once(expanded, name, entry, f"{source}: {section}")
                continue
            if "{topics}" not in name:
                raise ConfigError(
                    f"{source}: {section}.{name}: an entry for several topic sets needs "
                    "'{topics}' in its name, so that each set gets its own output"
                )
            collection = config["collections"].get(entry["collection"], {})
            for topic_set in entry["topics"]:
                shown = collection.get("topic_names", {}).get(topic_set, topic_set)
                values = {"{topics}": topic_set, "{topics_name}": shown}
                one_set = _substituted(entry, values) | {"topics": topic_set}
                _add_once(
                    expanded, name.replace("{topics}", topic_set), one_set, f"{source}: {section}"
                )
        config[section] = expanded
    for table in config["tables"].values():
        kept = [
            {key: value for key, value in block.items() if key != "only_for_topics"}
            for block in table["blocks"]
            if table.get("topics") in block.get("only_for_topics", [table.get("topics")])
        ]
        table["blocks"] = [one for block in kept for one in _per_topic_blocks(block)]


def _per_topic_blocks(block: dict) -> list[dict]:
    if "per_topic" not in block:
        return [block]
    rows = block["rows"]
    return [
        {"name": name, "topic": topic, "rows": _substituted(rows, {"{topic}": topic})}
        for topic, name in block["per_topic"].items()
    ]


def _add_once(entries: dict[str, dict], name: str, entry: dict, where: str) -> None:
    if name in entries:
        raise ConfigError(f"{where}.{name}: defined twice (once by a list of topic sets)")
    entries[name] = entry


def _substituted(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        for placeholder, replacement in values.items():
            value = value.replace(placeholder, replacement)
        return value
    if isinstance(value, dict):
        return {key: _substituted(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [_substituted(item, values) for item in value]
    return value


def fusions_by_topic_set(fusions: dict) -> dict:
    """``collection -> run -> {topics: [a, b], ...}`` as ``collection -> topic set -> run``,
    the shape of the other run sections (one fused run per listed set)."""
    by_set: dict[str, dict[str, dict]] = {}
    for collection, entries in fusions.items():
        by_set[collection] = {}
        for name, entry in entries.items():
            settings = {key: value for key, value in entry.items() if key != "topics"}
            for topics in topic_sets(entry):
                by_set[collection].setdefault(topics, {})[name] = copy.deepcopy(settings)
    return by_set
