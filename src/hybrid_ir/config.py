"""Configuration: schema validation with one-line errors, and the derived names rules use."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Iterator, Mapping, Sequence
from math import isfinite
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from hybrid_ir.checks import topic_sets
from hybrid_ir.errors import ConfigError, cut
from hybrid_ir.evaluate import resolve_measures
from hybrid_ir.figure_kinds import FIGURE_KINDS
from hybrid_ir.formats import YAML_LOADER, load_yaml
from hybrid_ir.fusion import check_fusion
from hybrid_ir.hub import check_pins, local_checkpoint
from hybrid_ir.neural.distributed import accumulation_steps
from hybrid_ir.neural.encoders import ENCODERS
from hybrid_ir.tables import column_key, note_placeholders, row_sources, table_groups

IN_CORPUS = "-in-corpus"
"""Suffix of a pool-restricted qrels set: the judgments of documents the corpus holds."""


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


# Exactly one of these says how long a training section trains. They are alternatives, so a
# layer that sets one replaces the other of every layer below it: `epochs` in configs/paper.yaml
# must not end up beside config.yaml's `steps` (Snakemake merges configuration files key by key).
TRAINING_LENGTHS = ("steps", "epochs")


def training_sections(config: Mapping) -> dict[str, Mapping]:
    """Config key -> each training section of a (possibly partial) configuration layer: the
    shared pretraining, each encoder's fine-tuning, each backbone's pretraining overrides."""
    math = config.get("math_models")
    if not isinstance(math, Mapping):
        return {}
    sections = {
        f"math_models.{key}": math[key]
        for key in ("pretraining", *ENCODERS)
        if isinstance(math.get(key), Mapping)
    }
    backbones = math.get("backbones")
    for name, backbone in (backbones if isinstance(backbones, Mapping) else {}).items():
        if isinstance(backbone, Mapping) and isinstance(backbone.get("pretraining"), Mapping):
            sections[f"math_models.backbones.{name}.pretraining"] = backbone["pretraining"]
    return sections


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
    """One configuration file, refused in one line as Snakemake refuses it (not UTF-8, not a
    mapping at the top level) and when its aliases expand beyond :data:`EXPANDED_VALUES_LIMIT`;
    a copy of its mapping each call."""
    where = f"configuration file {str(path)!r}"
    try:
        status = Path(path).stat()
        key = (str(Path(path).resolve()), status.st_mtime_ns, status.st_size)
        if key not in _READ_FILES:
            with open(path, encoding="utf-8") as handle:
                _READ_FILES[key] = _parse_layer(handle.read(), where)
        layer = _READ_FILES[key]
    except UnicodeDecodeError as error:
        raise ConfigError(f"{where}: not UTF-8 text (byte {error.start})") from None
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"cannot read {where}: {cut(str(error))}") from None
    return copy.deepcopy(dict(layer))


def _parse_layer(text: str, where: str) -> Mapping:
    """The document of ``text``, composed once: its aliases counted on the node graph, then
    constructed from it."""
    loader = YAML_LOADER(text)
    try:
        node = loader.get_single_node()
        values = 0 if node is None else _expanded_values(node)
        if values is None or values > EXPANDED_VALUES_LIMIT:
            raise ConfigError(
                f"{where}: too many aliases: with its YAML aliases expanded it holds "
                + ("endless values (an alias inside its own anchor)" if values is None else
                   f"{values:,} values, over the {EXPANDED_VALUES_LIMIT:,} allowed")
            )  # fmt: skip
        layer = None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()
    if not isinstance(layer, Mapping):
        found = "it is empty" if layer is None else f"its top level is a {type(layer).__name__}"
        raise ConfigError(f"{where}: must be a mapping of keys at the top level, but {found}")
    return layer


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


def training_plan(config: dict) -> dict[str, dict]:
    """What each model trains with, after defaults and overrides: ``pretraining <backbone>``
    (the shared settings with the backbone's overrides) and ``<encoder> <backbone>``."""
    math = config["math_models"]
    if not math:
        return {}
    plan = {}
    for backbone, entry in math["backbones"].items():
        if entry["pretrain"]:
            plan[f"pretraining {backbone}"] = pretraining_settings(math, backbone)
        for encoder in trained_encoders(math, backbone):
            plan[f"{encoder} {backbone}"] = fine_tuning_settings(math, encoder, backbone)
    return plan


def trained_encoders(math: dict, backbone: str) -> list[str]:
    """The encoders fine-tuned from ``backbone``: those with a model among its ``models``
    (DPR's epoch snapshots are taken by DPR's training)."""
    wanted = kept_models(math, backbone)
    kinds = {kind for kind, model in _fine_tuned(math) if model in wanted}
    return [kind for kind in ENCODERS if kind in kinds]


def fine_tuning_settings(math: dict, encoder: str, backbone: str) -> dict:
    """``math_models.<encoder>`` for one backbone. A backbone whose ``models`` keep DPR's epoch
    snapshots but not its final model trains DPR up to the last snapshot and no further: with
    the constant rate snapshots require, and batches taken in order, the model after epoch e is
    the same whether training goes on or stops there (tests/test_dpr.py), so the epochs after
    it would be computed for nothing (paper 000: 9 of DPR's 10 epochs, for 3 of its backbones)."""
    settings = dict(math[encoder])
    models = math["backbones"][backbone].get("models")
    snapshots = settings.get("snapshots", [])
    if encoder == "dpr" and models is not None and "dpr" not in models and snapshots:
        settings["epochs"] = max(snapshots)
    return settings


def pretraining_settings(math: dict, backbone: str) -> dict:
    """The shared pretraining settings (less the corpus) with the backbone's own overrides; a
    length the backbone gives replaces the shared one."""
    settings = {key: value for key, value in math["pretraining"].items() if key != "corpus"}
    override = math["backbones"][backbone]["pretraining"]
    if any(key in override for key in TRAINING_LENGTHS):
        for key in TRAINING_LENGTHS:
            settings.pop(key, None)
    return settings | override


def _check_training_lengths(config: dict, source: str) -> None:
    math = config["math_models"]
    if not math:
        return
    keys = [key for key in ("pretraining", *ENCODERS) if key in math]
    sections = {f"math_models.{key}": math[key] for key in keys}
    for where, section in sections.items():
        given = [key for key in TRAINING_LENGTHS if key in section]
        if len(given) != 1:
            problem = "sets both steps and epochs" if given else "needs steps or epochs"
            raise ConfigError(f"{source}: {where}: {problem} (exactly one: the training length)")
    for backbone, entry in math["backbones"].items():
        if all(key in entry["pretraining"] for key in TRAINING_LENGTHS):
            raise ConfigError(
                f"{source}: math_models.backbones.{backbone}.pretraining: sets both steps and "
                "epochs (exactly one: the training length)"
            )


def validate_config(
    config: dict, schema_path: str | Path, source: str = "config", require_pins: bool = True
) -> None:
    """Fill in the schema's defaults, then raise :class:`ConfigError` with one line naming the
    first offending key; every default lives in the schema, so rules and scripts read
    ``config[...]`` directly."""
    with open(schema_path, encoding="utf-8") as handle:
        schema = load_yaml(handle)
    _check_finite(config, source)
    errors = sorted(_VALIDATOR(schema).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ConfigError(f"{source}: {cut(_location(first))}: {cut(first.message)}{more}")
    _check_training_lengths(config, source)
    config["fusions"] = _fusions_by_topic_set(config["fusions"])
    for by_topics in config["external_runs"].values():
        for runs in by_topics.values():
            for name, entry in runs.items():
                runs[name] = {"path": entry} if isinstance(entry, str) else entry
                runs[name].setdefault("format", None)
                runs[name].setdefault("duplicates", "max")
    _sweep_figures_from_sweeps(config, source)
    expand_topic_lists(config, source)
    _derive_defaults(config)
    _check_references(config, source)
    if require_pins:
        check_pins(config, source)
    _check_resources(config, set(schema["properties"]["resources"]["properties"]), source)
    _check_batches(config, source)


def _check_finite(value: Any, source: str, where: tuple[str, ...] = ()) -> None:
    """NaN and infinities are refused wherever they are: a schema's ``minimum`` lets NaN pass
    (every comparison with it is false), and a job would fail on it only hours later."""
    if isinstance(value, float) and not isfinite(value):
        key = ".".join(where) or "(top level)"
        raise ConfigError(f"{source}: {key}: {value} is not a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_finite(item, source, (*where, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_finite(item, source, (*where, str(index)))


# The rule whose jobs train each section's models: their GPUs decide the process count.
TRAINING_RULES = {"pretraining": "pretrain", "dpr": "finetune", "colbert": "finetune"}


def training_processes(config: Mapping, section: str) -> set[int]:
    """The process counts a training job of ``math_models.<section>`` may run on: one per GPU
    of its rule where CUDA may be used, ``cpu_processes`` where the CPU may (``device: auto``
    allows both); ColBERT trains on one process."""
    math = config["math_models"]
    if section == "colbert":
        return {1}
    gpus = _rule_settings(config, TRAINING_RULES[section])["gpu"]
    counts = set()
    if math["device"] != "cpu" and gpus > 0:
        counts.add(gpus)
    if math["device"] != "cuda" or gpus == 0:
        counts.add(math["cpu_processes"])
    return counts


def _check_batches(config: dict, source: str) -> None:
    """The global batch splits evenly over every process count its job may have, and each
    process's share into whole micro-batches: found here, not after hours in a queue."""
    math = config["math_models"]
    if not math:
        return
    for section in ("pretraining", *ENCODERS):
        if section not in math:
            continue
        batch, micro = math[section]["batch_size"], math[section]["micro_batch_size"]
        for processes in sorted(training_processes(config, section)):
            try:
                accumulation_steps(batch, processes, micro, f"math_models.{section}")
            except ConfigError as error:
                raise ConfigError(str(error).replace("config:", f"{source}:", 1)) from None


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
    elif math and topics in math["also_search"].get(collection, []):
        runs = math_model_runs(math)
        origins |= {name: "math_models" for name, run in runs.items() if run["kind"] in ENCODERS}
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
    """Runs of the math language models: ``dpr-<backbone>``, ``colbert-<backbone>``, the
    released checkpoints and the configured re-rankers -> {kind, backbone or checkpoint, ...}.
    A released run's kind is its encoder, as a fine-tuned one's. A re-ranker's kind is
    ``rerank`` (paper 001's MLM re-ranker) or, for one naming an ``encoder`` or a ``released``
    run (whose encoder it takes), ``encoder_rerank``."""
    runs = {}
    for backbone in math["backbones"]:
        wanted = kept_models(math, backbone)
        for kind, model in _fine_tuned(math):
            if model in wanted:
                runs[f"{model}-{backbone}"] = {"kind": kind, "backbone": backbone, "model": model}
    released = math.get("released", {})
    for name, entry in released.items():
        runs[name] = {"kind": entry["encoder"], "checkpoint": entry["checkpoint"]}
    for name, entry in math.get("rerankers", {}).items():
        if "released" in entry:
            # A missing entry is reported by the configuration check, which needs these runs.
            encoder = released.get(entry["released"], {}).get("encoder")
            runs[name] = {"kind": "encoder_rerank", "encoder": encoder, **entry}
        else:
            runs[name] = {"kind": "encoder_rerank" if "encoder" in entry else "rerank", **entry}
    return runs


def trainable_models(math: dict) -> list[str]:
    """The models a backbone can be fine-tuned into: each configured encoder, then DPR after
    each epoch of ``math_models.dpr.snapshots`` (paper 000, Table 1 rows 1-4)."""
    return [model for _, model in _fine_tuned(math)]


def kept_models(math: dict, backbone: str) -> list[str]:
    """The models of ``trainable_models`` whose runs ``backbone`` keeps (its ``models``)."""
    return math["backbones"][backbone].get("models", trainable_models(math))


def _fine_tuned(math: dict) -> list[tuple[str, str]]:
    """(encoder, model) of each model of ``trainable_models``."""
    pairs = [(kind, kind) for kind in ENCODERS if kind in math]
    snapshots = math["dpr"]["snapshots"] if "dpr" in math else []
    return pairs + [("dpr", snapshot_model(epoch)) for epoch in snapshots]


def snapshot_model(epoch: int, encoder: str = "dpr") -> str:
    """The model name (``results/models/<name>/<backbone>``, run ``<name>-<backbone>``) of an
    encoder after ``epoch`` epochs of its fine-tuning."""
    return f"{encoder}-epoch{epoch}"


def _check_training_data(math: dict, source: str) -> None:
    """The triplets' date cut-off is a date; DPR snapshots are epochs before the end of an
    epoch-based training at a constant rate, so that each is what training that long gives."""
    before = math["triplets"]["before"] if "triplets" in math else None
    if before is not None:
        try:
            datetime.date.fromisoformat(before)
        except ValueError:
            raise ConfigError(
                f"{source}: math_models.triplets.before: {before!r} is not a date (YYYY-MM-DD)"
            ) from None
    if "dpr" not in math or not math["dpr"]["snapshots"]:
        return
    dpr, where = math["dpr"], f"{source}: math_models.dpr.snapshots"
    if "epochs" not in dpr:
        raise ConfigError(f"{where}: snapshots are epochs, so math_models.dpr needs epochs")
    if dpr["schedule"] != "constant":
        raise ConfigError(
            f"{where}: needs math_models.dpr.schedule: constant (a linearly decaying rate "
            "depends on the training's length, so epoch 1 of a longer training would not be a "
            "1-epoch training)"
        )
    late = [epoch for epoch in dpr["snapshots"] if epoch >= dpr["epochs"]]
    if late:
        raise ConfigError(f"{where}: epoch {late[0]} is not before the last ({dpr['epochs']})")


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
    for name, sets in math["also_search"].items():
        where = f"{source}: math_models.also_search.{name}"
        if name not in collections or not collections[name]["corpus"]:
            raise ConfigError(f"{where}: no collection {name!r} with a corpus")
        if name not in math["pretokenize"] or name == math["collection"]:
            raise ConfigError(f"{where}: must be pre-tokenized and not math_models.collection")
        for topics in sets:
            if topics not in collections[name]["topics"]:
                raise ConfigError(f"{where}: no topic set {topics!r}")
    _check_released(math, source)
    _check_training_data(math, source)
    trainable = trainable_models(math)
    for backbone, entry in math["backbones"].items():
        for model in entry.get("models", []):
            if model not in trainable:
                raise ConfigError(
                    f"{source}: math_models.backbones.{backbone}.models: {model!r} is not a "
                    f"model this configuration fine-tunes (one of: {', '.join(trainable)})"
                )
    for name, entry in math.get("rerankers", {}).items():
        if "backbone" in entry and entry["backbone"] not in math["backbones"]:
            raise ConfigError(
                f"{source}: math_models.rerankers.{name}.backbone: no backbone "
                f"{entry['backbone']!r}"
            )
        if "encoder" in entry and entry["encoder"] not in math:
            raise ConfigError(
                f"{source}: math_models.rerankers.{name}.encoder: no math_models."
                f"{entry['encoder']} settings to fine-tune the {entry['encoder']} model with"
            )
        if "encoder" in entry and entry["encoder"] not in kept_models(math, entry["backbone"]):
            raise ConfigError(
                f"{source}: math_models.rerankers.{name}: re-ranks with the "
                f"{entry['encoder']} model of backbone {entry['backbone']!r}, which its "
                f"math_models.backbones.{entry['backbone']}.models leaves out (re-ranking reads "
                "that model's index)"
            )
        for topics in math["topics"]:
            _check_run(
                config,
                f"math_models.rerankers.{name}.base",
                math["collection"],
                topics,
                entry["base"],
            )


def _check_released(math: dict, source: str) -> None:
    """Released runs: names of their own, local checkpoints that exist; re-rankers that name
    exactly one model, a released one by its run name."""
    trained = {f"{kind}-{backbone}" for backbone in math["backbones"] for kind in ENCODERS}
    for name, entry in math["released"].items():
        where = f"{source}: math_models.released.{name}"
        if name in trained or name in math.get("rerankers", {}):
            raise ConfigError(f"{where}: run name already used by a fine-tuned model or re-ranker")
        _check_checkpoint(entry["checkpoint"], f"{where}.checkpoint")
    for name, entry in math.get("rerankers", {}).items():
        where = f"{source}: math_models.rerankers.{name}"
        if "encoder" in entry or "released" in entry:
            if ("released" in entry) == ("encoder" in entry or "backbone" in entry):
                raise ConfigError(
                    f"{where}: an encoder re-ranker names either encoder and backbone (a model "
                    "fine-tuned here) or released (a math_models.released run)"
                )
            if "encoder" in entry and "backbone" not in entry:
                raise ConfigError(f"{where}: an encoder re-ranker needs the backbone it fine-tunes")
            if "released" in entry and entry["released"] not in math["released"]:
                raise ConfigError(
                    f"{where}.released: no math_models.released entry {entry['released']!r}"
                )
        elif ("backbone" in entry) == ("checkpoint" in entry):
            raise ConfigError(
                f"{where}: an MLM re-ranker names either backbone or checkpoint (a hub id or a "
                "local directory)"
            )
        elif "checkpoint" in entry:
            _check_checkpoint(entry["checkpoint"], f"{where}.checkpoint")


def _check_checkpoint(name: str, where: str) -> None:
    path = local_checkpoint(name)
    if path is not None and not path.exists():
        raise ConfigError(
            f"{where}: no such local checkpoint {name!r} (a hub id is owner/name; a path starting "
            "with /, . or ~ or with more than one / is local)"
        )


def _check_run(config: dict, where: str, collection: str, topics: str, name: str) -> None:
    known = systems(config, collection, topics)
    if name not in known:
        raise ConfigError(
            f"config: {where}: no run {name!r} for {collection}/{topics}; known: "
            f"{', '.join(sorted(known)) or 'none'}"
        )


def qrels_views(collection: Mapping) -> list[str]:
    """The derived qrels sets of a configured collection: pool-restricted and per-language."""
    return [*collection["restricted_qrels"], *collection["language_qrels"]]


def _check_collection_sets(config: dict, where: str, entry: dict) -> None:
    """The entry's collection exists and has the entry's topic (and qrels) set."""
    collection = config["collections"].get(entry["collection"])
    if collection is None:
        raise ConfigError(f"config: {where}: no collection {entry['collection']!r}")
    for kind in ("topics", "qrels"):
        known = [*collection[kind], *(qrels_views(collection) if kind == "qrels" else [])]
        if kind in entry and entry[kind] not in known:
            raise ConfigError(f"config: {where}.{kind}: {entry[kind]!r} is not one of {known}")


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
            if "search" in retriever and not config["collections"][collection].get("languages"):
                raise ConfigError(
                    f"config: {where}.search: collection {collection!r} has no languages to "
                    "search by"
                )
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
        if entry["by_language"] and not config["collections"][entry["collection"]].get("languages"):
            raise ConfigError(
                f"config: sweeps.{name}.by_language: collection {entry['collection']!r} has no "
                "languages"
            )
        for run in entry["runs"]:
            _check_run(config, f"sweeps.{name}.runs", entry["collection"], entry["topics"], run)
            if "select_on" in entry:
                split = {"collection": entry["collection"], **entry["select_on"]}
                _check_collection_sets(config, f"sweeps.{name}.select_on", split)
                where = f"sweeps.{name}.select_on"
                _check_run(config, where, entry["collection"], split["topics"], run)
    for name, table in config.get("parameter_tables", {}).items():
        where = f"parameter_tables.{name}"
        sweep = config["sweeps"].get(table["sweep"])
        if sweep is None or not sweep["by_language"]:
            raise ConfigError(f"config: {where}.sweep: {table['sweep']!r} is no by_language sweep")
        if name in config["tables"]:
            raise ConfigError(f"config: {where}: a table of the same name is configured")
        if "tuned_run" in table:
            tuned = table["tuned_run"]
            _check_collection_sets(config, f"{where}.tuned_run", tuned)
            retriever = config["retrievers"].get(tuned["collection"], {}).get(tuned["run"])
            if (
                retriever is None
                or "tune" not in retriever
                or tuned["topics"] not in retriever["topics"]
            ):
                raise ConfigError(
                    f"config: {where}.tuned_run: {tuned['run']!r} is no tuned retriever of "
                    f"{tuned['collection']}/{tuned['topics']}"
                )
    for name, figure in config.get("figures", {}).items():
        if "datasets" in FIGURE_KINDS[figure["kind"]].reads:
            for label, dataset in figure["datasets"].items():
                where = f"figures.{name}.datasets.{label}"
                _check_collection_sets(config, where, dataset)
                if not config["collections"][dataset["collection"]]["corpus"]:
                    collection = dataset["collection"]
                    raise ConfigError(f"config: {where}: collection {collection!r} has no corpus")
            continue
        _check_collection_sets(config, f"figures.{name}", figure)
        for run in figure.get("runs", {}).values():
            _check_run(config, f"figures.{name}.runs", figure["collection"], figure["topics"], run)
        if "sweep" in figure and figure["sweep"] not in config.get("sweeps", {}):
            raise ConfigError(f"config: figures.{name}.sweep: no sweep {figure['sweep']!r}")
        if "sweep" in figure and "sweep_runs" in FIGURE_KINDS[figure["kind"]].reads:
            sweep = config["sweeps"][figure["sweep"]]
            if (sweep["collection"], sweep["topics"]) != (figure["collection"], figure["topics"]):
                raise ConfigError(
                    f"config: figures.{name}.sweep: sweep {figure['sweep']!r} is on "
                    f"{sweep['collection']}/{sweep['topics']}, the figure on "
                    f"{figure['collection']}/{figure['topics']}"
                )
    for name, table in config.get("tables", {}).items():
        _check_table(config, name, table)


def _check_note_placeholders(where: str, table: dict, rows: dict, groups: dict) -> None:
    """A note's ``{row:Label/Column}`` and ``{paper:...}`` name a row and a column of the
    table, checked when the DAG is built rather than when the table job has run."""
    columns = {column_key(name, column) for name, g in groups.items() for column in g["columns"]}
    for note in table.get("notes", []):
        for kind, label, column in note_placeholders(note):
            at = f"config: {where}.notes: {{{kind}:{label}/{column}}}"
            if label not in rows:
                raise ConfigError(f"{at}: no row labelled {label!r}")
            if column not in columns:
                raise ConfigError(
                    f"{at}: no column {column!r} (columns: {', '.join(sorted(columns))})"
                )


def _check_table(config: dict, name: str, table: dict) -> None:
    """Groups, rows' runs per group, displays and reference rows of a table."""
    where = f"tables.{name}"
    groups = {group["name"]: group for group in table_groups(table)}
    if len(groups) != len(table_groups(table)):
        raise ConfigError(f"config: {where}.groups: group names must be unique")
    rows = {row["label"]: row for block in table["blocks"] for row in block["rows"]}
    for group_name, group in groups.items():
        at = f"{where}.groups.{group_name}" if group_name else where
        for column in group.get("display", {}):
            if column not in group["columns"]:
                raise ConfigError(
                    f"config: {at}.display: {column!r} is not one of its columns {group['columns']}"
                )
        # A group of published values only may name a collection this configuration lacks.
        if any(group_name in row_sources(row, list(groups)) for row in rows.values()):
            _check_collection_sets(config, at, group)
    for label, row in rows.items():
        at = f"{where}.blocks.{label}"
        for group_name in row.get("runs", {}):
            if group_name not in groups:
                raise ConfigError(
                    f"config: {at}.runs: no group {group_name!r} (groups: "
                    f"{', '.join(name for name in groups if name) or 'none'})"
                )
        for group_name, (kind, source) in row_sources(row, list(groups)).items():
            group = groups[group_name]
            if kind == "run":
                run_at = f"{at}.runs.{group_name}" if "runs" in row else at
                _check_run(config, run_at, group["collection"], group["topics"], source)
            elif source not in config.get("crossval", {}):
                raise ConfigError(f"config: {at}: no crossval entry {source!r}")
    for sweep in table.get("sweeps", []):
        if sweep not in config.get("sweeps", {}):
            raise ConfigError(f"config: {where}.sweeps: no sweep {sweep!r}")
    _check_note_placeholders(where, table, rows, groups)
    if len(rows) != sum(len(block["rows"]) for block in table["blocks"]):
        raise ConfigError(f"config: {where}: row labels must be unique")
    references = [(f"{where}.reference", table.get("reference"))]
    references += [
        (f"{where}.blocks.{b.get('name', '')}.reference", b.get("reference"))
        for b in table["blocks"]
    ]
    for at, reference in references:
        if reference is None:
            continue
        if reference not in rows:
            raise ConfigError(f"config: {at}: {reference!r} is not a row label")
        if "published_only" in rows[reference]:
            raise ConfigError(
                f"config: {at}: {reference!r} is a published-only row, with no run to test against"
            )


def _collection_problems(config: dict) -> tuple[list[str], list[str]]:
    from hybrid_ir.collections import source_problems

    errors, warnings = [], []
    for name, collection in config["collections"].items():
        found = source_problems(f"collections.{name}", collection)
        errors += found[0] + _language_problems(f"collections.{name}", collection)
        warnings += found[1]
    return errors, warnings


def _language_problems(where: str, collection: Mapping) -> list[str]:
    """A collection with languages: a reader that reads them, and per-language qrels views
    (``<qrels set>-<language>``) whose topic sets exist and whose names are free."""
    from hybrid_ir.collections import reader_options

    if not collection.get("languages") and not collection.get("fields"):
        return []
    if "languages" not in reader_options(collection["reader"], {"languages": ()}):
        return [f"{where}: reader {collection['reader']!r} reads no languages or fields"]
    if not collection.get("languages"):
        return [f"{where}.languages: the collection's reader needs its languages"]
    errors = [
        f"{where}.qrels: {name!r} has no topic set of the same name, which its per-language "
        "views need for the queries' languages"
        for name in collection["qrels"]
        if name not in collection["topics"]
    ]
    taken = set(collection["topics"]) | set(collection["qrels"])
    errors += [
        f"{where}: the per-language view {view!r} has the name of a listed set"
        for view in collection["language_qrels"]
        if view in taken
    ]
    return errors


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
    _check_measures(config, source)
    _check_fusions(config, source)
    _check_claims(config)


def _check_claims(config: dict) -> None:
    """Every claim's table, rows and column against the tables configured (the claims files
    name themselves in their errors)."""
    from hybrid_ir.claims import claims_by_paper

    claims_by_paper(config["claims"], config["tables"])


def _measure_lists(node: object, path: str) -> Iterator[tuple[str, list]]:
    """Every ``measures`` list of the configuration, and the BM25 experiments' lists per qrels
    set, with its location."""
    if isinstance(node, dict):
        for key, value in node.items():
            where = f"{path}.{key}" if path else str(key)
            if key == "measures" and isinstance(value, list):
                yield where, value
            elif path.startswith("bm25.experiments.") and path.endswith(".qrels"):
                yield where, value
            else:
                yield from _measure_lists(value, where)
    elif isinstance(node, list):
        for position, value in enumerate(node):
            yield from _measure_lists(value, f"{path}[{position}]")


def _check_measures(config: dict, source: str) -> None:
    """Each measures list resolves to columns trec_eval computes, so that a typo or a cut-off
    of 0 is one line now rather than a failed (or, in pytrec_eval, crashed) job later."""
    for where, measures in _measure_lists(config, ""):
        try:
            resolve_measures(measures)
        except ConfigError as error:
            raise ConfigError(f"{source}: {where}: {cut(str(error))}") from None


def _check_fusions(config: dict, source: str) -> None:
    """Each fused run's and each sweep's method, run count and parameters, every swept value
    included, checked as the fusion job would check them (:func:`hybrid_ir.fusion.check_fusion`)."""
    checks = [
        (f"fusions.{collection}.{name}", entry, entry.get("params", {}))
        for collection, by_topics in config["fusions"].items()
        for runs in by_topics.values()
        for name, entry in runs.items()
    ]
    for name, sweep in config["sweeps"].items():
        for value in sweep["values"]:
            params = {**sweep.get("params", {}), sweep["parameter"]: value}
            checks.append((f"sweeps.{name}", sweep, params))
    for where, entry, params in checks:
        try:
            check_fusion(entry["method"], len(entry["runs"]), params)
        except ConfigError as error:
            raise ConfigError(f"{source}: {where}: {cut(str(error))}") from None


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


def rule_threads(config: Mapping, rule: str) -> int:
    """The threads of ``rule``'s jobs: its ``resources`` entry, else ``resources.default``."""
    return int(_rule_settings(config, rule)["threads"])


def rule_resources(config: Mapping, rule: str) -> dict[str, Any]:
    """The Snakemake resources of ``rule``'s jobs (every key but threads), each from the rule's
    ``resources`` entry, else ``resources.default``; a partition or cores per GPU that neither
    sets is left out, so that SLURM picks its default partition rather than ``-p ''``. A job with
    GPUs asks for one node (``--nodes=1``): its training processes are started by one torchrun
    on one machine, and SLURM could otherwise place 8 GPUs on two 4-GPU nodes."""
    settings = _rule_settings(config, rule)
    resources = {key: value for key, value in settings.items() if key != "threads"}
    if resources["gpu"] > 0:
        resources["nodes"] = 1
    return resources


def _rule_settings(config: Mapping, rule: str) -> dict[str, Any]:
    section = config["resources"]
    return dict(section["default"]) | dict(section.get(rule, {}))


def _check_resources(config: dict, rules: set[str], source: str) -> None:
    """Each entry names a rule (``rules``: the schema's, and the rules defined once per
    collection, whose names the schema cannot know); cores per GPU fit the threads."""
    math = config["math_models"]
    per_collection = {
        "convert": set(config["collections"]),
        "pretokenize": set(math["pretokenize"]) if math else set(),
    }
    for prefix, collections in per_collection.items():
        rules = rules | {f"{prefix}_{collection}" for collection in collections}
    for name in config["resources"]:
        if name not in rules:
            raise ConfigError(
                f"{source}: resources.{name}: no rule {name!r} (rules: {', '.join(sorted(rules))})"
            )
        settings = _rule_settings(config, name)
        if "cpus_per_gpu" not in settings:
            continue
        if settings["gpu"] == 0:
            raise ConfigError(f"{source}: resources.{name}.cpus_per_gpu: needs gpu > 0")
        if settings["threads"] > settings["gpu"] * settings["cpus_per_gpu"]:
            raise ConfigError(
                f"{source}: resources.{name}.threads: {settings['threads']} threads on "
                f"{settings['gpu']} GPU(s) x {settings['cpus_per_gpu']} cpus_per_gpu cores "
                "would oversubscribe the job's cores"
            )
