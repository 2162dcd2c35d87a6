"""Cross-references a JSON schema cannot express, checked when the DAG is built: every name an
entry uses exists (collections, sets, runs, sweeps, rows, note placeholders, measures, fusion
parameters), training settings fit, values are finite; each error names its key."""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping
from math import isfinite
from typing import Any

from hybrid_ir.config.claim_setups import claims_by_paper
from hybrid_ir.config.run_origins import systems
from hybrid_ir.config.settings import (
    TRAINING_LENGTHS,
    kept_models,
    qrels_views,
    rule_settings,
    trainable_models,
    training_processes,
)
from hybrid_ir.data.collections import reader_options, source_problems
from hybrid_ir.data.hub import local_checkpoint
from hybrid_ir.errors import ConfigError, cut
from hybrid_ir.evaluation.checks import topic_sets
from hybrid_ir.evaluation.measures import resolve_measures
from hybrid_ir.fusion.methods import check_fusion
from hybrid_ir.neural.distributed import accumulation_steps
from hybrid_ir.neural.encoders import ENCODERS
from hybrid_ir.reports.figures.kinds import FIGURE_KINDS
from hybrid_ir.reports.tables.spec import column_key, note_placeholders, row_sources, table_groups


def check_training_lengths(config: dict, source: str) -> None:
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


def check_finite(value: Any, source: str, where: tuple[str, ...] = ()) -> None:
    """NaN and infinities are refused wherever they are: a schema's ``minimum`` lets NaN pass
    (every comparison with it is false), and a job would fail on it only hours later."""
    if isinstance(value, float) and not isfinite(value):
        key = ".".join(where) or "(top level)"
        raise ConfigError(f"{source}: {key}: {value} is not a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            check_finite(item, source, (*where, str(key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            check_finite(item, source, (*where, str(index)))


def check_batches(config: dict, source: str) -> None:
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
    errors, warnings = [], []
    for name, collection in config["collections"].items():
        found = source_problems(f"collections.{name}", collection)
        errors += found[0] + _language_problems(f"collections.{name}", collection)
        warnings += found[1]
    return errors, warnings


def _language_problems(where: str, collection: Mapping) -> list[str]:
    """A collection with languages: a reader that reads them, and per-language qrels views
    (``<qrels set>-<language>``) whose topic sets exist and whose names are free."""

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


def check_references(config: dict, source: str) -> None:
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

    claims_by_paper(config["claims"], config)


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
    included, checked as the fusion job would check them
    (:func:`hybrid_ir.fusion.methods.check_fusion`)."""
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
    for collection, by_topics in config["fusions"].items():
        for fused in by_topics.values():
            _check_fusion_cycle(fused, f"{source}: fusions.{collection}")


def _check_fusion_cycle(fused: dict, where: str) -> None:
    """No fused run of one topic set includes itself through others (Snakemake's
    CyclicGraphException named no key). Fused runs that include only finished ones are
    finished, repeatedly; any left over lie on or lead to a cycle, which a walk along them
    finds."""
    includes = {
        name: [run for run in entry["runs"] if run in fused] for name, entry in fused.items()
    }
    left = dict.fromkeys(fused)
    while finished := [name for name in left if not any(run in left for run in includes[name])]:
        for name in finished:
            del left[name]
    if not left:
        return
    walk = [next(iter(left))]
    while walk.count(walk[-1]) == 1:
        walk.append(next(run for run in includes[walk[-1]] if run in left))
    cycle = walk[walk.index(walk[-1]) :]
    raise ConfigError(
        f"{where}.{cycle[-2]}.runs: {' includes '.join(cycle)}: a fused run cannot include itself"
    )


def check_resources(config: dict, rules: set[str], source: str) -> None:
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
        settings = rule_settings(config, name)
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
