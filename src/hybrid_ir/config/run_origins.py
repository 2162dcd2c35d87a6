"""Where runs come from, one registry entry per origin: the configuration section that names
them, the rules that write them, the package function that builds one, and the run names a
validated configuration gives each collection's topic set.

Every run of the workflow is ``results/runs/<collection>/<topics>/<name>.trec`` whatever its
origin, so fusions, sweeps, tables and figures name runs without knowing how they were made.
:func:`systems` is the one place those names are gathered and told apart: a name two origins
claim for the same topic set is refused with the key of the second. Adding an origin is one
:class:`RunOrigin` here, its rule (whose ``system`` wildcard is constrained to
:func:`origin_names`) and its configuration section in the schema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from hybrid_ir.config.settings import math_model_runs
from hybrid_ir.errors import ConfigError
from hybrid_ir.evaluation.checks import topic_sets
from hybrid_ir.neural.encoders import ENCODERS


@dataclass(frozen=True)
class RunOrigin:
    """One way a run is made."""

    section: str
    """The configuration section that names these runs (a property of the schema)."""
    key: str
    """Where one run is configured, as a dotted key template over ``collection``, ``topics``
    and ``name``: what an error about it names."""
    rules: tuple[str, ...]
    """The rules that write these runs (the last one writes the run file)."""
    builder: str
    """``module.function`` of the package that builds one run (what the rules' script calls)."""
    names: Callable[[Mapping, str, str], Iterable[str]]
    """The run names for one collection's topic set: ``names(config, collection, topics)``."""
    inputs: str | None = None
    """The plan's method (:class:`hybrid_ir.planning.plan.Plan`) giving a run's inputs, where its
    rule asks the plan."""
    params: str | None = None
    """The plan's method giving what its rule's script reads besides files."""


def _bm25(config: Mapping, collection: str, topics: str) -> list[str]:
    experiment = config.get("bm25", {}).get("experiments", {}).get(collection)
    if experiment and topics in topic_sets(experiment):
        return [f"bm25-{layout}" for layout in experiment["layouts"]]
    return []


def _per_collection(section: str) -> Callable[[Mapping, str, str], list[str]]:
    """Names of a ``section.<collection>.<name>`` whose entries list their ``topics``."""

    def names(config: Mapping, collection: str, topics: str) -> list[str]:
        entries = config.get(section, {}).get(collection, {})
        return [name for name, entry in entries.items() if topics in entry["topics"]]

    return names


def _per_topics(section: str) -> Callable[[Mapping, str, str], list[str]]:
    """Names of a ``section.<collection>.<topics>.<name>``."""

    def names(config: Mapping, collection: str, topics: str) -> list[str]:
        return list(config.get(section, {}).get(collection, {}).get(topics, {}))

    return names


def _math_runs(*kinds: str) -> Callable[[Mapping, str, str], list[str]]:
    """Math-model runs of these kinds: every one on the models' own collection's topic sets,
    the encoders' alone on a collection they also search."""

    def names(config: Mapping, collection: str, topics: str) -> list[str]:
        math = config.get("math_models")
        if not math:
            return []
        runs = math_model_runs(math)
        if math["collection"] == collection and topics in math["topics"]:
            return [name for name, run in runs.items() if run["kind"] in kinds]
        if topics in math["also_search"].get(collection, []):
            searched = set(kinds) & set(ENCODERS)
            return [name for name, run in runs.items() if run["kind"] in searched]
        return []

    return names


def _sweeps(config: Mapping, collection: str, topics: str) -> list[str]:
    return [
        f"{name}-best"
        for name, entry in config.get("sweeps", {}).items()
        if (entry["collection"], entry["topics"]) == (collection, topics)
    ]


RUN_ORIGINS: dict[str, RunOrigin] = {
    "bm25": RunOrigin(
        "bm25", "bm25.experiments.{collection}", ("bm25_search",),
        "retrieval.lucene.search.bm25_search", _bm25, params="bm25_search_params",
    ),
    "retriever": RunOrigin(
        "retrievers", "retrievers.{collection}.{name}", ("retrieve",),
        "retrieval.retrievers.retrieve", _per_collection("retrievers"),
        inputs="retriever_inputs", params="retriever_params",
    ),
    "structure": RunOrigin(
        "structure", "structure.{collection}.{name}",
        ("structure_search", "structure_shard_search", "structure_merge"),
        "retrieval.approach0.search", _per_collection("structure"), inputs="structure_query_inputs",
    ),
    "encoder": RunOrigin(
        "math_models", "math_models", ("encoder_search",),
        "neural.encoders.encoder", _math_runs(*ENCODERS),
    ),
    "mlm_reranked": RunOrigin(
        "math_models", "math_models.rerankers.{name}", ("mlm_rerank",),
        "neural.rerank.rerank_by_embeddings", _math_runs("rerank"),
    ),
    "encoder_reranked": RunOrigin(
        "math_models", "math_models.rerankers.{name}", ("encoder_rerank",),
        "neural.candidates.top_candidates", _math_runs("encoder_rerank"),
    ),
    "sweep": RunOrigin(
        "sweeps", "sweeps.{name}", ("sweep",), "fusion.sweeps.sweep", _sweeps,
        inputs="sweep_inputs", params="sweep_params",
    ),
    "imported": RunOrigin(
        "external_runs", "external_runs.{collection}.{topics}.{name}", ("import_run",),
        "data.runs.read_run", _per_topics("external_runs"), params="import_params",
    ),
    "fused": RunOrigin(
        "fusions", "fusions.{collection}.{topics}.{name}", ("fuse_runs",),
        "fusion.methods.fuse", _per_topics("fusions"), inputs="fusion_inputs",
        params="fusion_params",
    ),
}  # fmt: skip
"""Every origin of a run, in the order their names are claimed."""


def systems(config: Mapping, collection: str, topics: str) -> dict[str, str]:
    """Every run the configuration produces for a collection's topic set: name -> the section
    that configures it. A name claimed twice is refused, naming the second claim's key."""
    origins: dict[str, str] = {}
    for origin in RUN_ORIGINS.values():
        for name in origin.names(config, collection, topics):
            if name in origins:
                key = origin.key.format(collection=collection, topics=topics, name=name)
                raise ConfigError(f"config: {key}: run name already used by {origins[name]}")
            origins[name] = origin.section
    return origins


def origin_names(config: Mapping, origin: str) -> set[str]:
    """Every run name one origin gives any topic set of any collection: its rules' ``system``
    wildcard."""
    names = RUN_ORIGINS[origin].names
    return {
        name
        for collection, entry in config["collections"].items()
        for topics in entry["topics"]
        for name in names(config, collection, topics)
    }
