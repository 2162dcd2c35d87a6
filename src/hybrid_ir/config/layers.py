"""Configuration layers: the files and command-line values Snakemake merges, read safely and
merged as Snakemake merges them, with the overrides a layer makes explicit (a training length,
a collection's sources) resolved."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from hybrid_ir.config.settings import TRAINING_LENGTHS, training_sections
from hybrid_ir.data.formats import check_json_nesting, parse_yaml, read_document
from hybrid_ir.errors import ConfigError, InputFormatError, cut


def resolve_overrides(config: dict, layers: Sequence[tuple[str, Mapping]]) -> None:
    """Undo Snakemake's key-by-key merge where a setting is one unit (``layers``: source name ->
    that layer's own settings, lowest first: config.yaml, each ``--configfile``, ``--config``):
    each merged training section keeps only the length key of the topmost layer that sets one
    (a layer setting both is an error naming it and the key), and each collection the sources of
    the topmost layer that lists them."""
    chosen: dict[str, str] = {}
    for source, layer in layers:
        for where, section in training_sections(layer).items():
            given = [key for key in TRAINING_LENGTHS if key in section]
            if len(given) == 2:
                raise ConfigError(
                    f"{source}: {where}: sets both steps and epochs; training length is one of "
                    "them (steps, or epochs over the training examples)"
                )
            if given:
                chosen[where] = given[0]
    for where, section in training_sections(config).items():
        if where in chosen:
            for other in TRAINING_LENGTHS:
                if other != chosen[where]:
                    section.pop(other, None)  # type: ignore[attr-defined]
    _replace_collection_sources(config, layers)


def _replace_collection_sources(config: dict, layers: Sequence[tuple[str, Mapping]]) -> None:
    """A collection's files are one setting: the topmost layer that lists a collection's
    ``sources`` gives all of them, so that the paper configuration can point a collection at the
    full Posts.xml without the sample's roles staying beside it."""
    collections = config.get("collections")
    if not isinstance(collections, dict):
        return
    for _, layer in layers:
        for name, entry in (layer.get("collections") or {}).items():
            if isinstance(entry, Mapping) and isinstance(entry.get("sources"), Mapping):
                if isinstance(collections.get(name), dict):
                    collections[name]["sources"] = copy.deepcopy(dict(entry["sources"]))


EXPANDED_VALUES_LIMIT = 1_000_000
"""The most values a configuration file may hold once its YAML aliases are expanded: a few
hundred bytes of nested aliases (a "billion laughs") otherwise expand to billions, which
validation walks until memory runs out and whose error message is the whole value."""


def _yaml_children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _expanded_values(root: yaml.Node) -> int | None:
    """How many values the document holds with every alias expanded (each node counted once
    per use, sized once); None for a recursive alias, which never ends."""
    sizes: dict[int, int] = {}
    entered: set[int] = set()
    stack = [root]
    while stack:
        node = stack[-1]
        if id(node) in sizes:
            stack.pop()
            continue
        children = _yaml_children(node)
        if id(node) not in entered:
            entered.add(id(node))
            pending = [child for child in children if id(child) not in sizes]
            # Entered but not sized: a node on the current path, reached again through an alias.
            if any(id(child) in entered for child in pending):
                return None
            stack.extend(pending)
            continue
        sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
        stack.pop()
    return sizes[id(root)]


_READ_FILES: dict[tuple[str, int, int], Mapping] = {}
"""Configuration files read in this process, by path, modification time and size: Snakemake's
``configfile:`` and the workflow's own layers read the same files at every start."""


def read_config_file(path: str | Path) -> dict:
    """One configuration file read as Snakemake reads it (JSON, else YAML, templated by yte
    where it sets ``__use_yte__``), refused in one line as Snakemake refuses it (not UTF-8, not
    a mapping at the top level), and beyond what Snakemake checks: larger than
    :data:`~hybrid_ir.data.formats.MAX_DOCUMENT_SIZE`, nested deeper than
    :data:`~hybrid_ir.data.formats.MAX_NESTING` or with aliases expanding beyond
    :data:`EXPANDED_VALUES_LIMIT`; a copy of its mapping each call."""
    where = f"configuration file {str(path)!r}"
    try:
        status = Path(path).stat()
        key = (str(Path(path).resolve()), status.st_mtime_ns, status.st_size)
        if key not in _READ_FILES:
            _READ_FILES[key] = _parse_layer(read_document(path), path, where)
        layer = _READ_FILES[key]
    except InputFormatError as error:
        line = f", line {error.line}" if error.line is not None else ""
        raise ConfigError(f"{where}{line}: {error.problem}") from None
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"cannot read {where}: {cut(str(error))}") from None
    return copy.deepcopy(dict(layer))


def _parse_layer(text: str, path: str | Path, where: str) -> Mapping:
    """The layer of ``text``: JSON where it is JSON, else YAML (its aliases counted on the node
    graph before anything is constructed), rendered by yte where it asks to be."""
    layer = _json_layer(text, path)
    if layer is None:
        layer = parse_yaml(text, path, check=lambda node: _check_aliases(node, where))
        if isinstance(layer, Mapping) and "__use_yte__" in layer:
            layer = _templated(text, where)
    if not isinstance(layer, Mapping):
        found = "it is empty" if layer is None else f"its top level is a {type(layer).__name__}"
        raise ConfigError(f"{where}: must be a mapping of keys at the top level, but {found}")
    return layer


def _templated(text: str, where: str) -> object:
    """The document yte renders, as Snakemake's reader renders a file that sets
    ``__use_yte__`` (its expressions are Python, run as Snakemake runs them)."""
    import yte
    from yte.exceptions import YteError

    try:
        return yte.process_yaml(text, require_use_yte=True)
    except YteError as error:
        raise ConfigError(f"{where}: yte template: {cut(str(error))}") from None


def _json_layer(text: str, path: str | Path) -> object | None:
    """The document of a file that is JSON, which Snakemake tries first; None for any other."""
    if text.lstrip()[:1] not in ("{", "["):
        return None
    check_json_nesting(text, path)
    try:
        return json.loads(text)
    except ValueError:
        return None


def _check_aliases(node: yaml.Node, where: str) -> None:
    values = _expanded_values(node)
    if values is None or values > EXPANDED_VALUES_LIMIT:
        raise ConfigError(
            f"{where}: too many aliases: with its YAML aliases expanded it holds "
            + ("endless values (an alias inside its own anchor)" if values is None else
               f"{values:,} values, over the {EXPANDED_VALUES_LIMIT:,} allowed")
        )  # fmt: skip


def config_layers(files: Sequence[str | Path], overrides: Mapping) -> list[tuple[str, Mapping]]:
    """The configuration as Snakemake merges it, layer by layer, lowest first: the files (the
    workflow's config.yaml, then each ``--configfile`` in order), then ``--config`` overrides."""
    layers: list[tuple[str, Mapping]] = [(str(path), read_config_file(path)) for path in files]
    layers.append(("--config", dict(overrides)))
    return layers


def merged_config(layers: Sequence[tuple[str, Mapping]]) -> dict:
    """The layers merged as Snakemake does (key by key, a later layer's value winning), with
    one-unit settings resolved by :func:`resolve_overrides`."""
    config: dict = {}
    for _, layer in layers:
        _update(config, copy.deepcopy(dict(layer)))
    resolve_overrides(config, layers)
    return config


def _update(config: dict, layer: Mapping) -> None:
    """snakemake.utils.update_config: mappings merge key by key, anything else replaces."""
    for key, value in layer.items():
        if isinstance(value, Mapping) and isinstance(config.get(key), dict):
            _update(config[key], value)
        else:
            config[key] = dict(value) if isinstance(value, Mapping) else value
