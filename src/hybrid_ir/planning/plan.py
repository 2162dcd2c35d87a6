"""What the workflow's rules ask of a validated configuration: each output's inputs, outputs and
targets, in plain Python that runs and is tested without Snakemake.

A :class:`Plan` is built once per start from the merged, validated configuration and what it
names (the manifest of raw files, the expected-score files, the claims); the rule files call
its methods (input functions take Snakemake's ``wildcards``, which any object with the same
attributes stands in for). :mod:`hybrid_ir.reports.figures.kinds` does the same for figures, one
registry entry per kind. A configuration that names what it does not produce fails here with
a :class:`~hybrid_ir.errors.ConfigError` naming its key.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from hybrid_ir import paths
from hybrid_ir.config.checks import config_warnings
from hybrid_ir.config.claim_setups import claims_by_paper, judged_setups
from hybrid_ir.config.layers import config_layers, resolve_overrides
from hybrid_ir.config.published import fill_published
from hybrid_ir.config.run_origins import origin_names, systems
from hybrid_ir.config.settings import math_model_runs
from hybrid_ir.config.sources import Layers, attributed, attributed_message, write_layers
from hybrid_ir.config.validation import validate_config
from hybrid_ir.data.fetch import ManifestEntry, load_manifest, mirror_root
from hybrid_ir.data.hub import DENSE_MODEL_KEYS, hub_references, local_checkpoint, use_model_cache
from hybrid_ir.errors import ConfigError, quoted
from hybrid_ir.evaluation.checks import checks_from_expected, evaluation_pairs, load_expected
from hybrid_ir.neural.encoders import ENCODERS
from hybrid_ir.planning import targets as by_name
from hybrid_ir.planning.math_plan import MathPlan
from hybrid_ir.planning.output_kinds import OUTPUT_KINDS
from hybrid_ir.planning.rule_params import RuleParams
from hybrid_ir.planning.targets import DeferredTable, NamedOutput, paper_of
from hybrid_ir.reports.claims.file import PaperClaims, reproduction_runs
from hybrid_ir.reports.explore.inputs import explored_tables, explorer_inputs
from hybrid_ir.reports.figures.kinds import figure_inputs, figure_outputs
from hybrid_ir.reports.html_report import category as report_category
from hybrid_ir.reports.tables.spec import row_sources, source_key, table_groups

TABLE_OUTPUTS = {
    "markdown": "md", "latex": "tex", "csv": "csv", "per_query": "per_query.tsv",
    "html": "html", "notes": "notes.html",
}  # fmt: skip
"""What a paper table writes (hybrid_ir.reports.tables.results, the report's page and notes), by the
output keys its script writes them to."""
PAGE_TABLE_OUTPUTS = {"markdown": "md", "csv": "csv", "html": "html", "notes": "notes.html"}
"""What a parameter table and the BM25 table write."""
CLAIMS_OUTPUTS = {"json": "json", "markdown": "md", "html": "html"}


def alternatives(names: Sequence[str] | Mapping[str, Any] | set[str]) -> str:
    """A wildcard constraint matching exactly the given names (none: nothing)."""
    return "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True)) or "(?!)"


def wildcard_name(pattern: str) -> Callable[[Any], str]:
    """A function of a job's wildcards giving ``pattern`` (``"paper{paper}-claims"``) filled in
    with them."""
    fields = [field for _, field, _, _ in string.Formatter().parse(pattern) if field]

    def name(wildcards) -> str:
        return pattern.format(**{field: getattr(wildcards, field) for field in fields})

    return name


def report_labels_of(pattern: str) -> Callable[[Any], dict[str, str]]:
    """The ``labels`` of an output in Snakemake's report: its name alone (``pattern`` filled in
    with the job's wildcards). A second label with two values would be a toggle, which blanks
    a two-result category; the title is in the caption and on the page."""
    name = wildcard_name(pattern)

    def labels(wildcards) -> dict[str, str]:
        return {"name": name(wildcards)}

    return labels


def report_category_of(pattern: str) -> Callable[[Any], str]:
    """The report category of an output named ``pattern``: the paper its name starts with
    (:func:`hybrid_ir.reports.html_report.category`)."""
    name = wildcard_name(pattern)

    def category(wildcards) -> str:
        return report_category(name(wildcards))

    return category


def load_plan(
    config: dict[str, Any],
    configfiles: Sequence[str | Path],
    overrides: Mapping[str, Any],
    schema: str | Path,
    workflow_root: str | Path | None = None,
) -> tuple[Plan, dict[str, str]]:
    """Snakemake's merged ``config`` (filled in place: the configuration files' layers and the
    command line's ``overrides`` resolved, validated with the schema's defaults, published
    values filled) and its :class:`Plan`, with the pinned hub models (id -> revision) that the
    local rule fetch_hub_model fetches before any job reads the cache. ``workflow_root`` (the
    workflow's folder, where it is not the working directory) gives the workflow's own files
    the configuration names (:func:`hybrid_ir.config.workflow_files.with_workflow_files`)."""
    layers = config_layers(list(configfiles), overrides)
    resolve_overrides(config, layers)
    try:
        validate_config(config, schema, source="config", workflow_root=workflow_root)
        expected = load_expected(config["expected"])
        fill_published(config, expected)
        claims = claims_by_paper(config["claims"], config)
    except ConfigError as error:  # named by the file that sets the key, where one does
        raise attributed(error, layers) from None
    hub_models = {
        model: config["hub_models"][model]["revision"] for model in hub_references(config)
    }
    use_model_cache(config)
    write_layers(layers)
    manifest = load_manifest(config["manifest"])
    plan = Plan(config, manifest, expected, claims, mirror_root(config["mirror"]), layers)
    try:
        plan.check_external_runs()
    except ConfigError as error:
        raise attributed(error, layers) from None
    return plan, hub_models


_UNUSABLE_IN_PATHS = re.compile("[{}\x00-\x1f\x7f-\x9f\u2028\u2029]")


class Plan(RuleParams, MathPlan):
    """The rule-facing view of one validated configuration."""

    RULE_FACING = (
        "manifest_entry", "raw_file", "sources_of", "converted_outputs", "external_run", "run_path",
        "run_names", "fusion_inputs", "askme_indexes", "retriever_inputs", "bm25_evaluations",
        "expected_artifacts", "structure_names", "structure_shards", "structure_query_inputs",
        "crossval_inputs", "sweep_inputs", "table_sources", "parameter_table_inputs",
        "figure_inputs", "figures_of_kind", "claims_inputs", "claims_setups", "table_claims",
        "pretok_inputs", "pretok_outputs", "backbone_input", "snapshot_dirs", "backbone_source",
        "all_targets", "table_outputs", "parameter_table_outputs", "bm25_table_outputs",
        "claims_outputs", "crossval_outputs", "bm25_search_params", "retriever_params",
        "import_params", "fusion_params", "crossval_params", "sweep_params", "table_params",
        "parameter_table_params", "bm25_table_params", "target_rules", "unknown_results",
        "unknown_result", "unknown_targets", "unknown_target", "explored_tables",
        "explorer_inputs", "explorer_outputs", "explorer_params", "raw_file_entry",
        "restricted_qrels_inputs", "language_qrels_inputs", "qrels_language", "bm25_text_fields",
        "bm25_store_raw", "imported_run_file", "evaluation_measures", "structure_entry",
        "structure_depth", "structure_shard_number", "structure_shard_count",
        "structure_shard_stats_inputs", "structure_merge_inputs", "figure_spec", "figure_sweep",
        "triplets_inputs", "triplets_settings", "triplet_collections", "backbone_model",
        "source_model_input", "pretrain_settings", "finetune_settings", "encoder_run_names",
        "encoder_index_inputs", "encoder_search_inputs", "encoder_run_model", "encoder_run_kind",
        "encoder_run_settings", "reranker_entry", "mlm_rerank_inputs", "mlm_reranker_model",
        "encoder_rerank_inputs", "encoder_reranker_model", "encoder_reranker_settings",
    )  # fmt: skip
    """The methods the rule files call by these names (workflow/rules/common.smk)."""

    def __init__(
        self,
        config: dict[str, Any],
        manifest: Mapping[str, ManifestEntry],
        expected: Sequence[dict],
        claims: Mapping[str, PaperClaims],
        mirror: Path | None,
        layers: Layers = (),
    ) -> None:
        self.config = config
        self.layers = layers
        self.manifest = manifest
        self.expected = expected
        self.claims = claims
        self.mirror = mirror
        self.math = config["math_models"]
        self.math_runs = math_model_runs(self.math) if self.math else {}

    def rule_facing(self) -> dict[str, Callable]:
        """The methods of :data:`RULE_FACING` by name, each raising its configuration errors
        with the file that sets the offending key."""
        return {name: self._attributing(getattr(self, name)) for name in self.RULE_FACING}

    def _attributing(self, method: Callable) -> Callable:
        @functools.wraps(method)
        def call(*args, **kwargs):
            try:
                return method(*args, **kwargs)
            except ConfigError as error:
                raise attributed(error, self.layers) from None

        return call

    def warnings(self) -> list[str]:
        """Configuration that runs but is probably not what was meant, each naming its file."""
        return [
            attributed_message(f"config: {warning}", self.layers)
            for warning in config_warnings(self.config)
        ]

    # --- raw files and collections ------------------------------------------------------------

    def manifest_entry(self, path: str, where: str = "results/raw") -> ManifestEntry:
        """The manifest's row for a raw file, or the one-line error saying how to add it."""
        unusable = _UNUSABLE_IN_PATHS.search(path)
        if unusable:
            # Snakemake reads braces as a wildcard (a WildcardError naming no key); a line
            # break or control character cannot be part of a rule's file name.
            raise ConfigError(
                f"config: {where}: {quoted(path)} holds {unusable.group()!r}, which no path of a "
                "workflow rule may hold (braces are Snakemake's wildcards)"
            )
        if path not in self.manifest:
            mirror = self.mirror if self.mirror is not None else Path("<mirror>")
            manifest = self.config["manifest"]
            raise ConfigError(
                f"config: {where}: {path!r} is not in the manifest {manifest}; put the file at "
                f"{mirror / path} and run: hybrid-ir manifest add {mirror / path} --mirror "
                f"{mirror} --manifest {manifest}"
            )
        return self.manifest[path]

    def raw_file(self, path: str, where: str) -> str:
        """The fetched copy of a raw file, after checking the manifest lists it."""
        self.manifest_entry(path, where)
        return paths.raw(path)

    def sources_of(self, name: str) -> dict[str, str]:
        """Reader role -> fetched raw file."""
        sources = self.config["collections"][name]["sources"]
        return {
            role: self.raw_file(path, f"collections.{name}.sources.{role}")
            for role, path in sources.items()
        }

    def converted_outputs(self, name: str) -> dict[str, str]:
        """Every canonical file a collection's reader writes, keyed as the converter expects."""
        collection = self.config["collections"][name]
        outputs = {}
        if collection["corpus"]:
            outputs["corpus"] = paths.corpus(name)
        outputs |= {f"topics_{s}": paths.topics(name, s) for s in collection["topics"]}
        outputs |= {f"qrels_{s}": paths.qrels(name, s) for s in collection["qrels"]}
        outputs |= {f"table_{s}": paths.table(name, s) for s in collection["tables"]}
        return outputs

    def restricted_qrels_inputs(self, wildcards) -> dict[str, str]:
        """The qrels a restricted view keeps the judgments of, and the corpus it keeps them
        to."""
        collection = wildcards.collection
        source = self.config["collections"][collection]["restricted_qrels"][wildcards.restricted]
        return {"qrels": paths.qrels(collection, source), "corpus": paths.corpus(collection)}

    def language_qrels_inputs(self, wildcards) -> dict[str, str]:
        """The qrels a per-language view splits, and its topic set's topics (which carry each
        topic's language)."""
        collection = wildcards.collection
        source = self.config["collections"][collection]["language_qrels"][wildcards.view]["qrels"]
        return {
            "qrels": paths.qrels(collection, source),
            "topics": paths.topics(collection, source),
        }

    def check_external_runs(self) -> None:
        """Every imported run is a manifest row (checked at start-up, naming its key)."""
        for collection, by_topics in self.config["external_runs"].items():
            for topics, runs in by_topics.items():
                for system, entry in runs.items():
                    where = f"external_runs.{collection}.{topics}.{system}"
                    self.raw_file(entry["path"], where)

    def external_run(self, wildcards) -> dict:
        """An imported run's ``{path, format, duplicates}``."""
        return self.config["external_runs"][wildcards.collection][wildcards.topics][
            wildcards.system
        ]

    def imported_run_file(self, wildcards) -> str:
        """The fetched file of an imported run, after checking the manifest lists it."""
        where = f"external_runs.{wildcards.collection}.{wildcards.topics}.{wildcards.system}"
        return self.raw_file(self.external_run(wildcards)["path"], where)

    # --- runs -------------------------------------------------------------------------------

    def run_path(self, collection: str, topics: str, system: str) -> str:
        """The run file of a configured system, after checking the configuration produces it."""
        if system not in systems(self.config, collection, topics):
            raise ConfigError(f"no run {system!r} for {collection}/{topics}")
        return paths.run(collection, topics, system)

    def run_names(self, origin: str) -> set[str]:
        """The run names of one origin (:data:`hybrid_ir.config.run_origins.RUN_ORIGINS`): its
        rules' ``system`` wildcard."""
        return origin_names(self.config, origin)

    def fusion_inputs(self, wildcards) -> list[str]:
        """The runs a fused run combines, in its configured order."""
        fusion = self.config["fusions"][wildcards.collection][wildcards.topics][wildcards.system]
        return [
            self.run_path(wildcards.collection, wildcards.topics, run) for run in fusion["runs"]
        ]

    def askme_indexes(self, collection: str) -> set[str]:
        """The BM25 indexes of ``collection`` that askme retrievers read documents from."""
        retrievers = self.config["retrievers"].get(collection, {}).values()
        return {entry["index"] for entry in retrievers if entry["model"] == "askme"}

    def retriever_inputs(self, wildcards) -> dict[str, str]:
        """Corpus and topics of a retriever's run, its base run, the index an askme retriever
        reads its candidates from, a dense retriever's local model directories, and its tuning
        split if any."""
        collection, topics = wildcards.collection, wildcards.topics
        retriever = self.config["retrievers"][collection][wildcards.system]
        inputs = {"corpus": paths.corpus(collection), "topics": paths.topics(collection, topics)}
        if "base" in retriever:
            inputs["base"] = self.run_path(collection, topics, retriever["base"])
        if retriever["model"] == "askme":
            inputs["index"] = paths.index(collection, retriever["index"])
        if retriever["model"] == "dense":
            # A local model or adapter directory is an input, so replacing it re-runs the job.
            for key, name in retriever["params"].items():
                local = local_checkpoint(name) if name and key in DENSE_MODEL_KEYS else None
                if local is not None:
                    inputs[key] = str(local)
        if "tune" in retriever:
            inputs["tune_topics"] = paths.topics(collection, retriever["tune"]["topics"])
            inputs["tune_qrels"] = paths.qrels(collection, retriever["tune"]["qrels"])
        return inputs

    def bm25_evaluations(self, name: str) -> list[str]:
        experiment = self.config["bm25"]["experiments"][name]
        return [
            paths.evaluation(name, topics, f"bm25-{layout}", qrels)
            for layout in experiment["layouts"]
            for topics, qrels in evaluation_pairs(experiment)
        ]

    def expected_artifacts(self) -> list[str]:
        """The evaluation and index-statistics files the expected-score checks read."""
        return sorted(
            {check.source for document in self.expected for check in checks_from_expected(document)}
        )

    # --- structure search --------------------------------------------------------------------

    def structure_names(self, sharded: bool, per_topics: bool = False) -> str:
        """The ``system`` constraint of the structure-search rules of indexes split into shards
        (or not). One run name may be sharded in one collection and whole in another, so each
        name only matches right after its collection's directory (and topic set's, with
        ``per_topics``)."""
        scopes = []
        for collection, entries in self.config["structure"].items():
            for name, entry in entries.items():
                if (entry["shards"] > 1) != sharded:
                    continue
                folders = (
                    [f"{collection}/{topics}" for topics in entry["topics"]]
                    if per_topics
                    else [collection]
                )
                scopes += [f"(?<=/{re.escape(folder)}/){re.escape(name)}" for folder in folders]
        return "|".join(sorted(scopes)) or "(?!)"

    def structure_shards(self, wildcards) -> range:
        """The shard numbers of a sharded structure-search run's index."""
        return range(self.config["structure"][wildcards.collection][wildcards.system]["shards"])

    def structure_shard_stats_inputs(self, wildcards) -> dict[str, list[str]]:
        """The index statistics of each shard of a sharded structure-search index."""
        collection, system = wildcards.collection, wildcards.system
        return {
            "stats": [
                paths.structure_shard_stats(collection, system, shard)
                for shard in self.structure_shards(wildcards)
            ]
        }

    def structure_merge_inputs(self, wildcards) -> dict[str, list[str]]:
        """The runs and run facts of each shard of a sharded structure-search run."""
        collection, topics, system = wildcards.collection, wildcards.topics, wildcards.system
        shards = self.structure_shards(wildcards)
        return {
            "runs": [
                paths.structure_shard_run(collection, topics, system, shard) for shard in shards
            ],
            "facts": [
                paths.structure_shard_facts(collection, topics, system, shard) for shard in shards
            ],
        }

    def structure_query_inputs(self, wildcards) -> dict[str, str]:
        """A structure-search topic set's topics, and pya0's keyword file for it if configured."""
        entry = self.config["structure"][wildcards.collection][wildcards.system]
        inputs = {"topics": paths.topics(wildcards.collection, wildcards.topics)}
        if wildcards.topics in entry["keyword_files"]:
            where = f"structure.{wildcards.collection}.{wildcards.system}.keyword_files"
            inputs["keywords"] = self.raw_file(entry["keyword_files"][wildcards.topics], where)
        return inputs

    def structure_targets(self) -> list[str]:
        """Each structure-search index's statistics and runs, with their readable queries."""
        targets = []
        for collection, entries in self.config["structure"].items():
            for name, entry in entries.items():
                targets.append(paths.index_stats(collection, name))
                for topics in entry["topics"]:
                    targets.append(paths.run(collection, topics, name))
                    targets.append(paths.structure_queries(collection, topics, name))
        return targets

    # --- sweeps, tables, figures, claims -----------------------------------------------------

    def crossval_inputs(self, wildcards) -> dict[str, str]:
        """A cross-validation's dense and base runs and the qrels its weights are fitted on."""
        entry = self.config["crossval"][wildcards.crossval]
        collection, topics = entry["collection"], entry["topics"]
        return {
            "dense": self.run_path(collection, topics, entry["dense"]),
            "base": self.run_path(collection, topics, entry["base"]),
            "qrels": paths.qrels(collection, entry["qrels"]),
        }

    def crossval_outputs(self, name: str) -> dict[str, str]:
        return {"report": paths.crossval(name), "folds": paths.crossval_folds(name)}

    def sweep_report(self, name: str) -> str:
        sweep = self.config["sweeps"][name]
        return paths.sweep(sweep["collection"], sweep["topics"], name)

    def sweep_inputs(self, wildcards) -> dict[str, Any]:
        """A sweep's input runs and qrels, those of its selection split, and the topics of
        both when it chooses per language."""
        entry = self.config["sweeps"][wildcards.sweep]
        collection = entry["collection"]
        inputs: dict[str, Any] = {
            "runs": [self.run_path(collection, entry["topics"], run) for run in entry["runs"]],
            "qrels": paths.qrels(collection, entry["qrels"]),
        }
        if "select_on" in entry:
            split = entry["select_on"]
            inputs["select_runs"] = [
                self.run_path(collection, split["topics"], run) for run in entry["runs"]
            ]
            inputs["select_qrels"] = paths.qrels(collection, split["qrels"])
            if entry["by_language"]:
                inputs["select_topics"] = paths.topics(collection, split["topics"])
        if entry["by_language"]:
            inputs["topics"] = paths.topics(collection, entry["topics"])
        return inputs

    def table_sources(self, wildcards) -> dict[str, str]:
        """A configured table's inputs by :func:`hybrid_ir.reports.tables.results.source_key`: each
        row's run file or cross-validation report in each group it has one in, and those groups'
        qrels (a group of published values only needs no collection here)."""
        table = self.config["tables"][wildcards.table]
        groups = {group["name"]: group for group in table_groups(table)}
        sources = {}
        for block in table["blocks"]:
            for row in block["rows"]:
                for group, (kind, source) in row_sources(row, list(groups)).items():
                    where = groups[group]
                    if kind == "run":
                        path = self.run_path(where["collection"], where["topics"], source)
                    else:
                        path = paths.crossval(source)
                    sources[source_key(row["label"], group)] = path
                    qrels = paths.qrels(where["collection"], where["qrels"])
                    sources[source_key("qrels", group)] = qrels
        for sweep in table["sweeps"]:
            sources[f"sweep_{sweep}"] = self.sweep_report(sweep)
        return sources

    def table_outputs(self, name: str) -> dict[str, str]:
        return {key: paths.result_table(name, ext) for key, ext in TABLE_OUTPUTS.items()}

    def parameter_table_outputs(self, name: str) -> dict[str, str]:
        return {key: paths.result_table(name, ext) for key, ext in PAGE_TABLE_OUTPUTS.items()}

    def bm25_table_outputs(self) -> dict[str, str]:
        return self.parameter_table_outputs("bm25")

    def claims_outputs(self, paper: str) -> dict[str, str]:
        return {key: paths.claims(paper, ext) for key, ext in CLAIMS_OUTPUTS.items()}

    def explored_tables(self) -> list[str]:
        """The tables with an explorer page (``explore.tables``)."""
        return explored_tables(self.config)

    def explorer_inputs(self, wildcards) -> dict[str, str]:
        """What a table's explorer page reads
        (:func:`hybrid_ir.reports.explore.inputs.explorer_inputs`)."""
        return explorer_inputs(wildcards.table, self.config, self.run_path)

    def explorer_outputs(self, name: str) -> dict[str, str]:
        return {"page": paths.result_table(name, "explore.html")}

    def parameter_table_inputs(self, wildcards) -> dict[str, str]:
        """A parameter table's per-language sweep, its tuned retriever's facts, the paper's
        values."""
        spec = self.config["parameter_tables"][wildcards.parameter_table]
        inputs = {"sweep": self.sweep_report(spec["sweep"])}
        if "tuned_run" in spec:
            tuned = spec["tuned_run"]
            inputs["facts"] = paths.run_facts(tuned["collection"], tuned["topics"], tuned["run"])
        if "published_from" in spec:
            inputs["published"] = spec["published_from"]
        return inputs

    def figure_inputs(self, wildcards) -> dict[str, Any]:
        return figure_inputs(wildcards.figure, self.config, self.run_path)

    def figures_of_kind(self, kind: str) -> list[str]:
        return [name for name, entry in self.config["figures"].items() if entry["kind"] == kind]

    def claims_inputs(self, wildcards) -> dict[str, str]:
        """A paper's claims file, the CSV and per-topic scores of each table its claims and
        reproductions compare that this configuration builds, and each reproduction's two
        runs."""
        claims = self.claims[wildcards.paper]
        tables = self.config["tables"]
        inputs = {"claims": claims.source}
        compared = {claim.table for claim in claims.claims}
        compared |= {reproduction.table for reproduction in claims.reproductions}
        for table in sorted(compared & set(tables)):
            inputs[f"csv_{table}"] = paths.result_table(table, "csv")
            inputs[f"per_query_{table}"] = paths.result_table(table, "per_query.tsv")
        for reproduction in claims.reproductions:
            runs = reproduction_runs(reproduction, tables, claims.source)
            for role, (collection, topics, run) in runs.items():
                inputs[f"{role}_{reproduction.id}"] = paths.run(collection, topics, run)
        for setup in self.claims_setups(wildcards).values():
            if "share" in setup:
                collection = setup["collection"]
                corpus, qrels = setup["share"]["corpus"], setup["share"]["qrels"]
                inputs[corpus] = paths.corpus(collection)
                inputs[qrels] = paths.qrels(collection, setup["share"]["qrels_name"])
        return inputs

    def claims_setups(self, wildcards) -> dict[str, dict]:
        """Each claim's setup here beside the paper's (:func:`judged_setups`)."""
        return judged_setups(self.config, self.claims[wildcards.paper])

    # --- the math models (their rules' inputs and params: hybrid_ir.planning.math_plan) -------

    def all_qrels(self) -> list[str]:
        return [
            paths.qrels(name, qrels)
            for name, collection in self.config["collections"].items()
            for qrels in collection["qrels"]
        ]

    def math_targets(self) -> list[str]:
        """Pretraining losses and figures, each model run and index, and the pre-tokenized
        copies of formula collections (fields that are one formula each, as NTCIR-12's TeX
        topics), which no model step needs to ask for."""
        math = self.math
        if not math:
            return []
        targets = []
        for backbone, entry in math["backbones"].items():
            if entry["pretrain"]:
                targets += [f"{paths.model('pretrained', backbone)}.losses.tsv"]
        targets += _files(self.named_math_figures())
        for name, run in self.math_runs.items():
            if run["kind"] in ("dpr", "colbert"):
                targets.append(paths.index_stats(math["collection"], name))
            targets += [paths.run(math["collection"], topics, name) for topics in math["topics"]]
        for collection, sets in math["also_search"].items():
            for name, run in self.math_runs.items():
                if run["kind"] in ENCODERS:
                    targets.append(paths.index_stats(collection, name))
                    targets += [paths.run(collection, topics, name) for topics in sets]
        for collection, entry in math["pretokenize"].items():
            if entry["formula_fields"]:  # formula collections (NTCIR-12): made to be read
                targets += list(self.pretok_outputs(collection).values())
        return targets

    # --- everything -------------------------------------------------------------------------

    def collection_targets(self) -> list[str]:
        return [
            output
            for name in self.config["collections"]
            for output in self.converted_outputs(name).values()
        ]

    def table_targets(self) -> list[str]:
        return _files(self.named_tables())

    def parameter_table_targets(self) -> list[str]:
        return _files(self.named_parameter_tables())

    def claims_targets(self) -> list[str]:
        return _files(self.named_claims())

    def crossval_targets(self) -> list[str]:
        return [self.crossval_outputs(name)["report"] for name in self.config["crossval"]]

    def sweep_targets(self) -> list[str]:
        return [self.sweep_report(name) for name in self.config["sweeps"]]

    def figure_targets(self) -> list[str]:
        return _files(self.named_figures())

    def bm25_table_targets(self) -> list[str]:
        return _files(self.named_bm25_table())

    def explorer_targets(self) -> list[str]:
        return _files(self.named_explorers())

    def check_targets(self) -> list[str]:
        return [paths.checks("passed")] if self.expected else []

    def all_targets(self) -> list[str]:
        """What ``rule all`` asks: every registered kind's targets
        (:data:`hybrid_ir.planning.output_kinds.OUTPUT_KINDS`)."""
        return [
            target for kind in OUTPUT_KINDS.values() for target in getattr(self, kind.targets)()
        ]

    # --- what one asks for by name (hybrid_ir.planning.targets) -----------------------------------

    def named_tables(self) -> list[NamedOutput]:
        return [
            NamedOutput("table", name, tuple(self.table_outputs(name).values()), f"tables.{name}",
                        table.get("title"), paper_of(name))
            for name, table in self.config["tables"].items()
        ]  # fmt: skip

    def named_explorers(self) -> list[NamedOutput]:
        """Each explored table's page, named after the table with ``-explorer`` and filed under
        its paper."""
        return [
            NamedOutput("explorer", f"{name}-explorer", (self.explorer_outputs(name)["page"],),
                        "explore.tables", f"Per-topic explorer of {name}", paper_of(name))
            for name in self.explored_tables()
        ]  # fmt: skip

    def named_parameter_tables(self) -> list[NamedOutput]:
        return [
            NamedOutput("table", name, tuple(self.parameter_table_outputs(name).values()),
                        f"parameter_tables.{name}", table.get("title"), paper_of(name))
            for name, table in self.config["parameter_tables"].items()
        ]  # fmt: skip

    def named_claims(self) -> list[NamedOutput]:
        return [
            NamedOutput("claims", f"paper{paper}-claims",
                        tuple(self.claims_outputs(paper).values()), f"claims: {claims.source}",
                        f"Claims of {claims.title}", paper)
            for paper, claims in self.claims.items()
        ]  # fmt: skip

    def named_figures(self) -> list[NamedOutput]:
        return [
            NamedOutput("figure", name, tuple(figure_outputs(name, figure).values()),
                        f"figures.{name}", figure.get("title"), paper_of(name))
            for name, figure in self.config["figures"].items()
        ]  # fmt: skip

    def named_math_figures(self) -> list[NamedOutput]:
        """The loss curves of each further-pretrained backbone (paper 000, Section 3.2)."""
        if not self.math:
            return []
        figures = []
        for backbone, entry in self.math["backbones"].items():
            if entry["pretrain"]:
                name = f"pretraining-{backbone}"
                files = (paths.figure(name, "png"), paths.figure(name, "svg"))
                title = f"Further pretraining of {backbone}: MLM and NSP losses"
                key = f"math_models.backbones.{backbone}"
                figures.append(NamedOutput("figure", name, files, key, title, "000"))
        return figures

    def named_bm25_table(self) -> list[NamedOutput]:
        if not self.config["bm25"]["experiments"]:
            return []
        files = tuple(self.bm25_table_outputs().values())
        return [NamedOutput("table", "bm25", files, "bm25.experiments", "BM25 baselines")]

    def named_outputs(self) -> list[NamedOutput]:
        """Every table, figure and claims page one asks for by name, kind by kind
        (:data:`OUTPUT_KINDS`)."""
        return [
            output
            for kind in OUTPUT_KINDS.values()
            if kind.named is not None
            for output in getattr(self, kind.named)()
        ]

    def deferred_tables(self) -> list[DeferredTable]:
        return by_name.deferred_tables(self.config)

    def target_rules(self, taken: Sequence[str] = ()) -> dict[str, list[str]]:
        """Target rule -> its files: one per paper (``paper000``), one per named output
        (``paper000_table1``); none may take a name in ``taken`` (the workflow's rules)."""
        return by_name.target_rules(self.named_outputs(), taken)

    def result_files(self) -> list[str]:
        return by_name.result_files(self.named_outputs(), self.all_targets())

    def unknown_results(self) -> str:
        """The constraint of a result file the configuration does not build (its rule's
        ``unknown_result`` wildcard)."""
        return by_name.unknown_result_constraint(self.result_files())

    def unknown_result(self, wildcards) -> NoReturn:
        """A result file the configuration does not build: a one-line error naming the nearest
        targets (or why a deferred table is not built)."""
        requested = f"{paths.RESULTS}/{wildcards.unknown_result}"
        known = list(dict.fromkeys([*self.result_files(), *self.all_targets()]))
        message = by_name.unknown_result_message(requested, known, self.deferred_tables())
        raise ConfigError(message)

    def unknown_targets(self) -> str:
        """The constraint of a target named like a paper's rule that is none (the
        ``unknown_target`` wildcard)."""
        return by_name.unknown_target_constraint(self.target_rules())

    def unknown_target(self, wildcards) -> NoReturn:
        """A misspelled target rule: a one-line error naming the nearest target rules."""
        rules = list(self.target_rules())
        raise ConfigError(by_name.unknown_target_message(wildcards.unknown_target, rules))


def _files(outputs: Sequence[NamedOutput]) -> list[str]:
    return [file for output in outputs for file in output.files]
