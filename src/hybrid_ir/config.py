"""Configuration: schema validation with one-line errors, and the derived names rules use."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from hybrid_ir.checks import topic_sets
from hybrid_ir.errors import ConfigError
from hybrid_ir.neural.encoders import ENCODERS


def _location(error: jsonschema.ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path) or "(top level)"


def _filling_defaults(properties_rule: Any) -> Any:
    """The schema's ``properties`` rule, first setting each absent property that has a
    ``default`` (a copy, so that entries never share a mutable default)."""

    def fill(validator: Any, properties: dict, instance: Any, schema: dict) -> Any:
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if isinstance(subschema, dict) and "default" in subschema:
                    instance.setdefault(name, copy.deepcopy(subschema["default"]))
        yield from properties_rule(validator, properties, instance, schema)

    return fill


_VALIDATOR = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    {"properties": _filling_defaults(jsonschema.Draft202012Validator.VALIDATORS["properties"])},
)


def validate_config(config: dict, schema_path: str | Path, source: str = "config") -> None:
    """Fill in the schema's defaults, then raise :class:`ConfigError` with one line naming the
    first offending key; every default lives in the schema, so rules and scripts read
    ``config[...]`` directly."""
    with open(schema_path, encoding="utf-8") as handle:
        schema = yaml.safe_load(handle)
    errors = sorted(_VALIDATOR(schema).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ConfigError(f"{source}: {_location(first)}: {first.message}{more}")
    config["fusions"] = _fusions_by_topic_set(config["fusions"])
    for by_topics in config["external_runs"].values():
        for runs in by_topics.values():
            for name, entry in runs.items():
                runs[name] = {"path": entry} if isinstance(entry, str) else entry
                runs[name].setdefault("format", None)
    _sweep_figures_from_sweeps(config, source)
    expand_topic_lists(config, source)
    _derive_defaults(config)
    _check_references(config, source)


# Sections whose entries may name several topic sets; each becomes one entry per set.
EXPANDED_SECTIONS = ("tables", "crossval", "figures")


def expand_topic_lists(config: dict, source: str = "config") -> None:
    """Turn an entry with ``topics: [a, b]`` into one entry per topic set, in place.

    The entry's name must contain ``{topics}`` (e.g. ``paper000-table1-{topics}``); in the copy
    for set ``a``, ``{topics}`` in the name and in any text becomes ``a`` and ``{topics_name}``
    the collection's display name of the set (``topic_names``, else the set's own name). A table
    block with ``per_topic`` becomes one block per topic.
    """
    for section in EXPANDED_SECTIONS:
        expanded: dict[str, dict] = {}
        for name, entry in config[section].items():
            if not isinstance(entry["topics"], list):
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
        table["blocks"] = [one for block in table["blocks"] for one in _per_topic_blocks(block)]


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


def _fusions_by_topic_set(fusions: dict) -> dict:
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


def _sweep_figures_from_sweeps(config: dict, source: str) -> None:
    for name, figure in config["figures"].items():
        if figure["kind"] != "sweep":
            continue
        if figure.get("sweep") not in config["sweeps"]:
            raise ConfigError(f"{source}: figures.{name}.sweep: no sweep {figure.get('sweep')!r}")
        sweep = config["sweeps"][figure["sweep"]]
        for key in ("collection", "topics", "qrels"):
            if key in sweep:
                figure.setdefault(key, sweep[key])


def _derive_defaults(config: dict) -> None:
    """Defaults that are other settings' values, so the schema cannot hold them: the run
    depth, the seed, a qrels set named as its topic set, triplet passages as documents."""
    for collection, retrievers in config["retrievers"].items():
        for retriever in retrievers.values():
            retriever.setdefault("depth", config["run_depth"])
            sets = config["collections"].get(collection, {}).get("topics", [])
            retriever.setdefault("topics", list(sets))
    for collection, entries in config["structure"].items():
        for entry in entries.values():
            entry.setdefault("depth", config["run_depth"])
            sets = config["collections"].get(collection, {}).get("topics", [])
            entry.setdefault("topics", list(sets))
    for section in ("tables", "crossval", "figures", "sweeps"):
        for entry in config[section].values():
            entry.setdefault("qrels", entry["topics"])
            if "select_on" in entry:
                entry["select_on"].setdefault("qrels", entry["select_on"]["topics"])
    for entry in config["crossval"].values():
        entry.setdefault("seed", config["seed"])
    math = config.get("math_models")
    if math:
        seeded = [math["pretraining"], *(math[k] for k in ("triplets", *ENCODERS) if k in math)]
        for settings in seeded:
            settings.setdefault("seed", config["seed"])
        if "triplets" in math:
            math["triplets"].setdefault("passage_fields", math["doc_fields"])
        for reranker in math.get("rerankers", {}).values():
            reranker.setdefault("depth", config["run_depth"])


def systems(config: dict, collection: str, topics: str) -> dict[str, str]:
    """Every run the configuration produces for a collection's topic set: name -> origin."""
    origins: dict[str, str] = {}
    experiment = config.get("bm25", {}).get("experiments", {}).get(collection)
    if experiment and topics in topic_sets(experiment):
        origins |= {f"bm25-{layout}": "bm25" for layout in experiment["layouts"]}
    for name, retriever in config.get("retrievers", {}).get(collection, {}).items():
        if topics in retriever["topics"]:
            origins[name] = "retrievers"
    for name, entry in config.get("structure", {}).get(collection, {}).items():
        if topics in entry["topics"]:
            origins[name] = "structure"
    math = config.get("math_models")
    if math and math["collection"] == collection and topics in math["topics"]:
        origins |= dict.fromkeys(math_model_runs(math), "math_models")
    for name, entry in config.get("sweeps", {}).items():
        if (entry["collection"], entry["topics"]) == (collection, topics):
            origins[f"{name}-best"] = "sweeps"
    for origin in ("external_runs", "fusions"):
        for name in config.get(origin, {}).get(collection, {}).get(topics, {}):
            if name in origins:
                raise ConfigError(
                    f"config: {origin}.{collection}.{topics}.{name}: run name already used by "
                    f"{origins[name]}"
                )
            origins[name] = origin
    return origins


def run_measures(
    config: dict, expected: list[dict], collection: str, system: str, qrels: str
) -> list[str]:
    """A run's measures against a qrels set: its BM25 experiment's, then any other metric an
    expected-scores file asks of it."""
    measures = []
    if collection in config["bm25"]["experiments"]:
        measures += config["bm25"]["experiments"][collection]["qrels"].get(qrels, [])
    for document in expected:
        if document["collection"] == collection:
            asked = document.get("runs", {}).get(system, {}).get(qrels, {})
            measures += [metric for metric in asked if metric not in measures]
    return measures


def math_model_runs(math: dict) -> dict[str, dict]:
    """Runs of the math language models: ``dpr-<backbone>``, ``colbert-<backbone>`` and the
    configured re-rankers -> {kind, backbone, ...}. A re-ranker's kind is ``rerank`` (paper
    001's MLM re-ranker) or, for one naming an ``encoder``, ``encoder_rerank``."""
    runs = {}
    for backbone in math["backbones"]:
        for kind in ENCODERS:
            if kind in math:
                runs[f"{kind}-{backbone}"] = {"kind": kind, "backbone": backbone}
    for name, entry in math.get("rerankers", {}).items():
        runs[name] = {"kind": "encoder_rerank" if "encoder" in entry else "rerank", **entry}
    return runs


def _check_math_models(config: dict, source: str) -> None:
    math = config.get("math_models")
    if not math:
        return
    collections = config["collections"]
    named = [math["collection"], *math["pretokenize"], *math["pretraining"]["corpus"]]
    named += math.get("triplets", {}).get("collections", [])
    for name in named:
        if name not in collections:
            raise ConfigError(f"{source}: math_models: no collection named {name!r}")
    for name in [math["collection"], *math["pretraining"]["corpus"]]:
        if name not in math["pretokenize"]:
            raise ConfigError(f"{source}: math_models: collection {name!r} is not pre-tokenized")
    for topics in math["topics"]:
        if topics not in collections[math["collection"]]["topics"]:
            raise ConfigError(f"{source}: math_models.topics: no topic set {topics!r}")
    for name, entry in math.get("rerankers", {}).items():
        if entry["backbone"] not in math["backbones"]:
            raise ConfigError(
                f"{source}: math_models.rerankers.{name}.backbone: no backbone "
                f"{entry['backbone']!r}"
            )
        if "encoder" in entry and entry["encoder"] not in math:
            raise ConfigError(
                f"{source}: math_models.rerankers.{name}.encoder: no math_models."
                f"{entry['encoder']} settings to fine-tune the {entry['encoder']} model with"
            )
        for topics in math["topics"]:
            _check_run(
                config,
                f"math_models.rerankers.{name}.base",
                math["collection"],
                topics,
                entry["base"],
            )


def _check_run(config: dict, where: str, collection: str, topics: str, name: str) -> None:
    known = systems(config, collection, topics)
    if name not in known:
        raise ConfigError(
            f"config: {where}: no run {name!r} for {collection}/{topics}; known: "
            f"{', '.join(sorted(known)) or 'none'}"
        )


def _check_collection_sets(config: dict, where: str, entry: dict) -> None:
    """The entry's collection exists and has the entry's topic (and qrels) set."""
    collection = config["collections"].get(entry["collection"])
    if collection is None:
        raise ConfigError(f"config: {where}: no collection {entry['collection']!r}")
    for kind in ("topics", "qrels"):
        if kind in entry and entry[kind] not in collection[kind]:
            raise ConfigError(
                f"config: {where}.{kind}: {entry[kind]!r} is not one of {collection[kind]}"
            )


def _check_runs_and_tables(config: dict) -> None:
    for origin in ("external_runs", "fusions"):
        for collection, by_topics in config.get(origin, {}).items():
            for topics in by_topics:
                where = f"{origin}.{collection}.{topics}"
                _check_collection_sets(config, where, {"collection": collection, "topics": topics})
                systems(config, collection, topics)
    for collection, retrievers in config.get("retrievers", {}).items():
        if collection not in config["collections"]:
            raise ConfigError(f"config: retrievers.{collection}: no collection {collection!r}")
        for name, retriever in retrievers.items():
            where = f"retrievers.{collection}.{name}"
            for topics in retriever["topics"]:
                entry = {"collection": collection, "topics": topics}
                _check_collection_sets(config, where, entry)
                if "base" in retriever:
                    _check_run(config, f"{where}.base", collection, topics, retriever["base"])
            if "tune" in retriever:
                tune = retriever["tune"]
                entry = {"collection": collection, "topics": tune["topics"], "qrels": tune["qrels"]}
                _check_collection_sets(config, f"{where}.tune", entry)
    for collection, entries in config.get("structure", {}).items():
        for name, entry in entries.items():
            where = f"structure.{collection}.{name}"
            if not config["collections"].get(collection, {}).get("corpus"):
                raise ConfigError(f"config: {where}: collection {collection!r} has no corpus")
            for topics in entry["topics"]:
                _check_collection_sets(config, where, {"collection": collection, "topics": topics})
            for topics in entry["keyword_files"]:
                if topics not in entry["topics"]:
                    raise ConfigError(
                        f"config: {where}.keyword_files.{topics}: not a topic set it searches"
                    )
    for collection, by_topics in config.get("fusions", {}).items():
        for topics, fusions in by_topics.items():
            for name, fusion in fusions.items():
                for run in fusion["runs"]:
                    where = f"fusions.{collection}.{topics}.{name}.runs"
                    _check_run(config, where, collection, topics, run)
    for name, entry in config.get("crossval", {}).items():
        _check_collection_sets(config, f"crossval.{name}", entry)
        for role in ("dense", "base"):
            where = f"crossval.{name}.{role}"
            _check_run(config, where, entry["collection"], entry["topics"], entry[role])
    for name, entry in config.get("sweeps", {}).items():
        _check_collection_sets(config, f"sweeps.{name}", entry)
        for run in entry["runs"]:
            _check_run(config, f"sweeps.{name}.runs", entry["collection"], entry["topics"], run)
            if "select_on" in entry:
                split = {"collection": entry["collection"], **entry["select_on"]}
                _check_collection_sets(config, f"sweeps.{name}.select_on", split)
                where = f"sweeps.{name}.select_on"
                _check_run(config, where, entry["collection"], split["topics"], run)
    for name, figure in config.get("figures", {}).items():
        _check_collection_sets(config, f"figures.{name}", figure)
        for run in figure.get("runs", {}).values():
            _check_run(config, f"figures.{name}.runs", figure["collection"], figure["topics"], run)
        if figure["kind"] == "sweep" and figure.get("sweep") not in config.get("sweeps", {}):
            raise ConfigError(f"config: figures.{name}.sweep: no sweep {figure.get('sweep')!r}")
    for name, table in config.get("tables", {}).items():
        _check_collection_sets(config, f"tables.{name}", table)
        labels = []
        for block in table["blocks"]:
            for row in block["rows"]:
                labels.append(row["label"])
                where = f"tables.{name}.blocks.{row['label']}"
                if "run" in row:
                    _check_run(config, where, table["collection"], table["topics"], row["run"])
                elif row["crossval"] not in config.get("crossval", {}):
                    raise ConfigError(f"config: {where}: no crossval entry {row['crossval']!r}")
        for sweep in table.get("sweeps", []):
            if sweep not in config.get("sweeps", {}):
                raise ConfigError(f"config: tables.{name}.sweeps: no sweep {sweep!r}")
        if len(set(labels)) != len(labels):
            raise ConfigError(f"config: tables.{name}: row labels must be unique")
        if table.get("reference") and table["reference"] not in labels:
            raise ConfigError(
                f"config: tables.{name}.reference: {table['reference']!r} is not a row label"
            )


def _collection_problems(config: dict) -> tuple[list[str], list[str]]:
    from hybrid_ir.collections import source_problems

    errors, warnings = [], []
    for name, collection in config["collections"].items():
        found = source_problems(f"collections.{name}", collection)
        errors += found[0]
        warnings += found[1]
    return errors, warnings


def config_warnings(config: dict) -> list[str]:
    """Configuration that runs but is probably not what was meant (e.g. a topic set without
    the labels its siblings have)."""
    deferred = [
        f"tables.{name} is not built here: it needs {needs}"
        for name, needs in config["deferred_tables"].items()
        if name not in config["tables"]
    ]
    return _collection_problems(config)[1] + deferred


def _check_references(config: dict, source: str) -> None:
    """Cross-references that a JSON schema cannot express: the collections' sources first, then
    the BM25 experiments, as the runs and tables refer to them."""
    collections = config["collections"]
    errors = _collection_problems(config)[0]
    if errors:
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ConfigError(f"{source}: {errors[0]}{more}")
    for name, experiment in config.get("bm25", {}).get("experiments", {}).items():
        if name not in collections:
            raise ConfigError(f"{source}: bm25.experiments.{name}: no collection named {name!r}")
        collection = collections[name]
        if not collection.get("corpus", True):
            raise ConfigError(
                f"{source}: bm25.experiments.{name}: collection {name!r} has no corpus"
            )
        for topics in topic_sets(experiment):
            if topics not in collection["topics"]:
                raise ConfigError(
                    f"{source}: bm25.experiments.{name}.topics: {topics!r} is not one of "
                    f"the collection's topic sets {collection['topics']}"
                )
        unjudged = [t for t in topic_sets(experiment) if t not in experiment["qrels"]]
        if len(topic_sets(experiment)) > 1 and unjudged:
            raise ConfigError(
                f"{source}: bm25.experiments.{name}.qrels: no entry for topic set(s) "
                f"{', '.join(map(repr, unjudged))}; with several topic sets, each needs a qrels "
                "entry of the same name"
            )
        for qrels in experiment["qrels"]:
            if qrels not in collection["qrels"]:
                raise ConfigError(
                    f"{source}: bm25.experiments.{name}.qrels: {qrels!r} is not one of the "
                    f"collection's qrels sets {collection['qrels']}"
                )
    _check_math_models(config, source)
    _check_runs_and_tables(config)


def fill_published(config: dict, expected: list[dict], source: str = "config") -> None:
    """Give each row of a table with ``published_from`` the values that file publishes for the
    row's run or cross-validation entry (``published``: name -> column -> value), or for the
    run on the block's topic (``published_by_topic``: topic -> run -> column -> value), so that
    a paper's numbers are
    written once, where their source is named. The file is an expected-scores file or one
    holding published numbers only."""
    documents = {document["path"]: document for document in expected}
    for name, table in config["tables"].items():
        if "published_from" not in table:
            continue
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
                key = row["run"] if "run" in row else row["crossval"]
                if key in published and "published" not in row:
                    row["published"] = dict(published[key])


def _published_file(path: str, where: str) -> dict:
    try:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"{where}: cannot read {path!r}: {error}") from None
    if not isinstance(document, dict) or not {"published", "published_by_topic"} & set(document):
        raise ConfigError(f"{where}: {path!r} has no 'published' or 'published_by_topic' section")
    return document
