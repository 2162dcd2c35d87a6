"""Configuration: schema validation with one-line errors, and the derived names rules use."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import yaml

from hybrid_ir.errors import ConfigError


def _location(error: jsonschema.ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path) or "(top level)"


def validate_config(config: dict, schema_path: str | Path, source: str = "config") -> None:
    """Raise :class:`ConfigError` with one line naming the first offending key."""
    with open(schema_path, encoding="utf-8") as handle:
        schema = yaml.safe_load(handle)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda error: list(error.absolute_path))
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ConfigError(f"{source}: {_location(first)}: {first.message}{more}")
    _check_references(config, source)


def _check_references(config: dict, source: str) -> None:
    """Cross-references that a JSON schema cannot express."""
    collections = config["collections"]
    for name, experiment in config.get("bm25", {}).get("experiments", {}).items():
        if name not in collections:
            raise ConfigError(f"{source}: bm25.experiments.{name}: no collection named {name!r}")
        collection = collections[name]
        if not collection.get("corpus", True):
            raise ConfigError(
                f"{source}: bm25.experiments.{name}: collection {name!r} has no corpus"
            )
        if experiment["topics"] not in collection["topics"]:
            raise ConfigError(
                f"{source}: bm25.experiments.{name}.topics: {experiment['topics']!r} is not one of "
                f"the collection's topic sets {collection['topics']}"
            )
        for qrels in experiment["qrels"]:
            if qrels not in collection["qrels"]:
                raise ConfigError(
                    f"{source}: bm25.experiments.{name}.qrels: {qrels!r} is not one of the "
                    f"collection's qrels sets {collection['qrels']}"
                )


def load_expected(paths: list[str | Path]) -> list[dict]:
    """Expected-score files (pyserini 2CR style), each with its own path for messages."""
    documents = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            document = yaml.safe_load(handle)
        if not isinstance(document, dict) or "collection" not in document:
            raise ConfigError(f"{path}: an expected-scores file needs a 'collection' key")
        documents.append({**document, "path": str(path)})
    return documents
