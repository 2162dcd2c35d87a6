"""Configuration: schema validation with the schema's defaults and one-line errors, and the
defaults derived from other settings; the public face of the configuration layer, whose other
jobs have modules of their own: merging layers (:mod:`hybrid_ir.config.layers`), templates
(:mod:`hybrid_ir.config.templates`), cross-checks (:mod:`hybrid_ir.config.checks`), published
values (:mod:`hybrid_ir.config.published`) and what rules read (:mod:`hybrid_ir.config.settings`).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema

from hybrid_ir.config.checks import (
    check_batches,
    check_finite,
    check_references,
    check_resources,
    check_training_lengths,
)
from hybrid_ir.config.settings import (
    IN_CORPUS,
)
from hybrid_ir.config.templates import expand_topic_lists, fusions_by_topic_set
from hybrid_ir.config.workflow_files import with_workflow_files
from hybrid_ir.data.formats import load_yaml
from hybrid_ir.data.hub import check_pins
from hybrid_ir.errors import ConfigError, cut
from hybrid_ir.neural.encoders import ENCODERS
from hybrid_ir.reports.figures.kinds import FIGURE_KINDS


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


def validate_config(
    config: dict,
    schema_path: str | Path,
    source: str = "config",
    require_pins: bool = True,
    workflow_root: str | Path | None = None,
) -> None:
    """Fill in the schema's defaults, then raise :class:`ConfigError` with one line naming the
    first offending key; every default lives in the schema, so rules and scripts read
    ``config[...]`` directly. ``workflow_root`` (the workflow's folder, when it runs from another
    one) gives the workflow's own files the configuration names before they are read
    (:func:`hybrid_ir.config.workflow_files.with_workflow_files`)."""
    with open(schema_path, encoding="utf-8") as handle:
        schema = load_yaml(handle)
    check_finite(config, source)
    errors = sorted(_VALIDATOR(schema).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ConfigError(f"{source}: {cut(_location(first))}: {cut(first.message)}{more}")
    check_training_lengths(config, source)
    config["fusions"] = fusions_by_topic_set(config["fusions"])
    for by_topics in config["external_runs"].values():
        for runs in by_topics.values():
            for name, entry in runs.items():
                runs[name] = {"path": entry} if isinstance(entry, str) else entry
                runs[name].setdefault("format", None)
                runs[name].setdefault("duplicates", "max")
    _sweep_figures_from_sweeps(config, source)
    expand_topic_lists(config, source)
    _derive_defaults(config)
    if workflow_root is not None:
        with_workflow_files(config, workflow_root)
    check_references(config, source)
    if require_pins:
        check_pins(config, source)
    check_resources(config, set(schema["properties"]["resources"]["properties"]), source)
    check_batches(config, source)


def _sweep_figures_from_sweeps(config: dict, source: str) -> None:
    """A sweep figure's collection, topic and qrels sets are its sweep's; a collection_stats
    figure has none of its own, only its datasets', whose qrels set defaults to the topic set."""
    for name, figure in config["figures"].items():
        reads = FIGURE_KINDS[figure["kind"]].reads
        if "datasets" in reads:
            for dataset in figure["datasets"].values():
                dataset.setdefault("qrels", dataset["topics"])
        if "sweep_report" not in reads:
            continue
        if figure.get("sweep") not in config["sweeps"]:
            raise ConfigError(f"{source}: figures.{name}.sweep: no sweep {figure.get('sweep')!r}")
        sweep = config["sweeps"][figure["sweep"]]
        for key in ("collection", "topics", "qrels"):
            if key in sweep:
                figure.setdefault(key, sweep[key])


def _derive_defaults(config: dict) -> None:
    """Defaults that are other settings' values, so the schema cannot hold them: the run
    depth, the seed, a qrels set named as its topic set, triplet passages as documents, a
    table's or figure's name as its title."""
    for section in ("tables", "figures", "parameter_tables"):
        for name, entry in config[section].items():
            entry.setdefault("title", name)
    for collection in config["collections"].values():
        restricted = collection.get("pool_restricted") and collection.get("corpus", True)
        collection["restricted_qrels"] = {
            f"{name}{IN_CORPUS}": name for name in (collection["qrels"] if restricted else [])
        }
        collection["language_qrels"] = {
            f"{name}-{language}": {"qrels": name, "language": language}
            for name in collection["qrels"]
            for language in collection.get("languages", [])
        }
    for collection, retrievers in config["retrievers"].items():
        for retriever in retrievers.values():
            retriever.setdefault("depth", config["run_depth"])
            sets = config["collections"].get(collection, {}).get("topics", [])
            retriever.setdefault("topics", list(sets))
            languages = config["collections"].get(collection, {}).get("languages")
            if languages:
                retriever["languages"] = list(languages)
                retriever.setdefault("search", "language")
    for collection, entries in config["structure"].items():
        for entry in entries.values():
            entry.setdefault("depth", config["run_depth"])
            sets = config["collections"].get(collection, {}).get("topics", [])
            entry.setdefault("topics", list(sets))
    for section in ("tables", "crossval", "figures", "sweeps"):
        for entry in config[section].values():
            if "topics" not in entry:  # a collection_stats figure: its datasets have theirs
                continue
            entry.setdefault("qrels", entry["topics"])
            if "select_on" in entry:
                entry["select_on"].setdefault("qrels", entry["select_on"]["topics"])
    for table in config["tables"].values():
        for group in table.get("groups", []):
            group.setdefault("qrels", group["topics"])
    for entry in config["crossval"].values():
        entry.setdefault("seed", config["seed"])
    math = config.get("math_models")
    if math:
        seeded = [math["pretraining"], *(math[k] for k in ("triplets", *ENCODERS) if k in math)]
        for settings in seeded:
            settings.setdefault("seed", config["seed"])
        if "triplets" in math:
            math["triplets"].setdefault("passage_fields", math["doc_fields"])
        for released in math["released"].values():
            if released["encoder"] == "colbert":
                released.setdefault("seed", config["seed"])
        for reranker in math.get("rerankers", {}).values():
            reranker.setdefault("depth", config["run_depth"])
