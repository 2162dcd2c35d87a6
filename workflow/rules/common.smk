import os
import re
from dataclasses import asdict
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from hybrid_ir import paths
from hybrid_ir.code_digest import DigestCache
from hybrid_ir.checks import checks_from_expected, evaluation_pairs, load_expected
from hybrid_ir.claims import claims_by_paper, reproduction_runs
from hybrid_ir.collections import reader_options
from hybrid_ir.config import (
    config_layers,
    config_warnings,
    fill_published,
    fine_tuning_settings,
    math_model_runs,
    pretraining_settings,
    snapshot_model,
    resolve_overrides,
    rule_resources as resolved_resources,
    rule_threads as resolved_threads,
    qrels_views,
    run_measures,
    systems,
    validate_config,
)
from hybrid_ir.neural.encoders import ENCODERS
from hybrid_ir.neural.released import checkpoint_input
from hybrid_ir.report import BEYOND, paper_category
from hybrid_ir.report import category as report_category
from hybrid_ir.tables import row_sources, source_key, table_groups
from hybrid_ir.errors import HybridIRError, printable
from hybrid_ir.lucene.index import LAYOUTS
from hybrid_ir.figure_kinds import FIGURE_KINDS, figure_outputs, output_keys
from hybrid_ir.figure_kinds import figure_inputs as planned_figure_inputs
from hybrid_ir.fetch import load_manifest, mirror_root
from hybrid_ir.hub import (
    DENSE_MODEL_KEYS,
    cache_dir as hub_cache_dir,
    hub_references,
    local_checkpoint,
    use_model_cache,
)

try:
    resolve_overrides(
        config,
        config_layers(
            # The `configfile:` directive's file comes after the command line's in this list.
            [
                *workflow.configfiles[len(workflow.config_settings.configfiles) :],
                *workflow.config_settings.configfiles,
            ],
            workflow.config_settings.config,
        ),
    )
    validate_config(
        config,
        os.path.join(workflow.basedir, "workflow", "schemas", "config.schema.yaml"),
        source="config",
    )
    MANIFEST = load_manifest(config["manifest"])
    EXPECTED = load_expected(config["expected"])
    fill_published(config, EXPECTED)
    CLAIMS = claims_by_paper(config["claims"], config["tables"])
    # Pinned hub models, fetched by the local rule fetch_hub_model; every job reads the cache.
    HUB_MODELS = {
        model: config["hub_models"][model]["revision"]
        for model in hub_references(config)
    }
    use_model_cache(config)
except (HybridIRError, OSError) as error:
    raise WorkflowError(f"hybrid-ir: {printable(str(error))}") from None
for _warning in config_warnings(config):
    logger.warning(f"hybrid-ir: config warning: {_warning}")

MIRROR = mirror_root(config["mirror"])
COLLECTIONS = config["collections"]
BM25 = config["bm25"]
EXTERNAL_RUNS = config["external_runs"]
FUSIONS = config["fusions"]
CROSSVAL = config["crossval"]
TABLES = config["tables"]
PARAMETER_TABLES = config["parameter_tables"]
RETRIEVERS = config["retrievers"]
STRUCTURE = config["structure"]
SWEEPS = config["sweeps"]
FIGURES = config["figures"]
RUN_DEPTH = config["run_depth"]
MATH = config["math_models"]
MATH_RUNS = math_model_runs(MATH) if MATH else {}
# One environment for every rule; a conda path is relative to the file of its rule.
CONDA_ENV = "../../envs/hybrid-ir.yaml"
MATH_CONDA_ENV = "../../../envs/hybrid-ir.yaml"  # rules in workflow/rules/math


CODE_DIGESTS = DigestCache(Path(".snakemake") / "hybrid_ir" / "code_digests.json")


def code_version(script):
    """Digest of a rule's script and every package module it imports (hybrid_ir.code_digest),
    passed as a param so that editing any of them re-runs the rule's jobs."""
    return CODE_DIGESTS.digest(
        Path(workflow.basedir) / "workflow" / "scripts" / f"{script}.py"
    )


# The longest chain of the DAG (pre-tokenization -> pretraining -> fine-tuning -> indexes ->
# re-ranking, and Approach0's index, which every fusion waits for) goes first when jobs compete
# for the cores, so that the short BM25 and evaluation jobs fill in instead of delaying it.
CRITICAL_PATH = 10


def uses_job_servers():
    """Job servers serve the jobs this process runs itself: not a cluster's, nor in a job."""
    return (
        config["job_servers"]
        and workflow.local_exec
        and not workflow.remote_exec
        and not workflow.subprocess_exec
    )


def rule_threads(rule):
    """A rule's threads from the `resources` section (the one place a job's size is set)."""
    return resolved_threads(config, rule)


def rule_resources(rule):
    """A rule's mem_mb, runtime, gpu (and partition, cores per GPU where set) from `resources`,
    named as the SLURM executor reads them."""
    return resolved_resources(config, rule)


def alternatives(names):
    """A wildcard constraint matching exactly the given names."""
    return (
        "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
        or "(?!)"
    )


def manifest_entry(path, where="results/raw"):
    """The manifest's row for a raw file, or the one-line error saying how to add it."""
    if path not in MANIFEST:
        mirror = MIRROR if MIRROR is not None else Path("<mirror>")
        raise WorkflowError(
            f"hybrid-ir: config: {where}: {path!r} is not in the manifest "
            f"{config['manifest']}; put the file at {mirror / path} and run: hybrid-ir "
            f"manifest add {mirror / path} --mirror {mirror} --manifest {config['manifest']}"
        )
    return MANIFEST[path]


def raw_file(path, where):
    """The fetched copy of a raw file, after checking the manifest lists it."""
    manifest_entry(path, where)
    return paths.raw(path)


def sources_of(name):
    """Reader role -> fetched raw file."""
    sources = COLLECTIONS[name]["sources"]
    return {
        role: raw_file(path, f"collections.{name}.sources.{role}")
        for role, path in sources.items()
    }


def converted_outputs(name):
    """Every canonical file a collection's reader writes, keyed as the converter expects."""
    collection = COLLECTIONS[name]
    outputs = {}
    if collection["corpus"]:
        outputs["corpus"] = paths.corpus(name)
    outputs |= {f"topics_{s}": paths.topics(name, s) for s in collection["topics"]}
    outputs |= {f"qrels_{s}": paths.qrels(name, s) for s in collection["qrels"]}
    outputs |= {f"table_{s}": paths.table(name, s) for s in collection["tables"]}
    return outputs


def bm25_evaluations(name):
    experiment = BM25["experiments"][name]
    return [
        paths.evaluation(name, topics, f"bm25-{layout}", qrels)
        for layout in experiment["layouts"]
        for topics, qrels in evaluation_pairs(experiment)
    ]


def expected_artifacts():
    """The evaluation and index-statistics files the expected-score checks read."""
    return sorted(
        {
            check.source
            for document in EXPECTED
            for check in checks_from_expected(document)
        }
    )


def names_in(origin):
    """Run names of a ``collection -> topics -> name`` config section."""
    return {
        name
        for by_topics in origin.values()
        for runs in by_topics.values()
        for name in runs
    }


def external_run(wildcards):
    """An imported run's ``{path, format}`` (validation turns a bare path into one)."""
    return EXTERNAL_RUNS[wildcards.collection][wildcards.topics][wildcards.system]


def run_path(collection, topics, system):
    """The run file of a configured system, after checking the configuration produces it."""
    if system not in systems(config, collection, topics):
        raise WorkflowError(f"hybrid-ir: no run {system!r} for {collection}/{topics}")
    return paths.run(collection, topics, system)


# Dense retriever params that name a model or adapter: a hub id, or a local directory.
def askme_indexes(collection):
    """The BM25 indexes of `collection` that askme retrievers read documents from."""
    retrievers = RETRIEVERS[collection].values() if collection in RETRIEVERS else []
    return {entry["index"] for entry in retrievers if entry["model"] == "askme"}


def retriever_inputs(wildcards):
    """Corpus and topics of a retriever's run, its base run, the index an askme retriever reads
    its candidates from, and its tuning split if any."""
    collection, topics = wildcards.collection, wildcards.topics
    retriever = RETRIEVERS[collection][wildcards.system]
    inputs = {
        "corpus": paths.corpus(collection),
        "topics": paths.topics(collection, topics),
    }
    if "base" in retriever:
        inputs["base"] = run_path(collection, topics, retriever["base"])
    if retriever["model"] == "askme":
        inputs["index"] = paths.index(collection, retriever["index"])
    if retriever["model"] == "dense":
        # A local model or adapter directory is an input, so replacing it re-runs the job.
        named = {
            k: v for k, v in retriever["params"].items() if v and k in DENSE_MODEL_KEYS
        }
        for key, name in named.items():
            local = local_checkpoint(name)
            if local is not None:
                inputs[key] = str(local)
    if "tune" in retriever:
        inputs["tune_topics"] = paths.topics(collection, retriever["tune"]["topics"])
        inputs["tune_qrels"] = paths.qrels(collection, retriever["tune"]["qrels"])
    return inputs


def structure_names(sharded, per_topics=False):
    """The `system` constraint of the structure-search rules of indexes split into shards (or
    not). One run name may be sharded in one collection and whole in another, so each name only
    matches right after its collection's directory (and topic set's, with `per_topics`).
    """
    scopes = []
    for collection, entries in STRUCTURE.items():
        for name, entry in entries.items():
            if (entry["shards"] > 1) != sharded:
                continue
            folders = (
                [f"{collection}/{topics}" for topics in entry["topics"]]
                if per_topics
                else [collection]
            )
            scopes += [
                f"(?<=/{re.escape(folder)}/){re.escape(name)}" for folder in folders
            ]
    return "|".join(sorted(scopes)) or "(?!)"


def structure_shards(wildcards):
    """The shard numbers of a sharded structure-search run's index."""
    return range(STRUCTURE[wildcards.collection][wildcards.system]["shards"])


def structure_query_inputs(wildcards):
    """A structure-search topic set's topics, and pya0's keyword file for it if configured."""
    entry = STRUCTURE[wildcards.collection][wildcards.system]
    inputs = {"topics": paths.topics(wildcards.collection, wildcards.topics)}
    if wildcards.topics in entry["keyword_files"]:
        where = f"structure.{wildcards.collection}.{wildcards.system}.keyword_files"
        inputs["keywords"] = raw_file(entry["keyword_files"][wildcards.topics], where)
    return inputs


def structure_targets():
    """Each structure-search index's statistics and runs, with their readable queries."""
    targets = []
    for collection, entries in STRUCTURE.items():
        for name, entry in entries.items():
            targets.append(paths.index_stats(collection, name))
            for topics in entry["topics"]:
                targets.append(paths.run(collection, topics, name))
                targets.append(paths.structure_queries(collection, topics, name))
    return targets


def sweep_report(name, collection=None, topics=None):
    """A sweep's report; with wildcards for ``collection`` and ``topics`` in rule outputs."""
    if collection is None:
        collection, topics = SWEEPS[name]["collection"], SWEEPS[name]["topics"]
    return paths.sweep(collection, topics, name)


def sweep_inputs(wildcards):
    entry = SWEEPS[wildcards.sweep]
    collection = entry["collection"]
    inputs = {
        "runs": [run_path(collection, entry["topics"], run) for run in entry["runs"]],
        "qrels": paths.qrels(collection, entry["qrels"]),
    }
    if "select_on" in entry:
        split = entry["select_on"]
        inputs["select_runs"] = [
            run_path(collection, split["topics"], run) for run in entry["runs"]
        ]
        inputs["select_qrels"] = paths.qrels(collection, split["qrels"])
        if entry["by_language"]:
            inputs["select_topics"] = paths.topics(collection, split["topics"])
    if entry["by_language"]:
        inputs["topics"] = paths.topics(collection, entry["topics"])
    return inputs


def figure_inputs(wildcards):
    """A figure's inputs by what its kind reads (hybrid_ir.figure_kinds)."""
    try:
        return planned_figure_inputs(wildcards.figure, config, run_path)
    except HybridIRError as error:
        raise WorkflowError(f"hybrid-ir: {printable(str(error))}") from None


def figures_of_kind(kind):
    return [name for name, entry in FIGURES.items() if entry["kind"] == kind]


def figure_rule_outputs(kind):
    """A figure kind's rule outputs; the PNG goes to the report, filed under its paper."""
    outputs = dict(
        zip(
            output_keys(kind),
            (
                paths.figure("{figure}", ext)
                for ext in ("png", "svg", *FIGURE_KINDS[kind].writes)
            ),
        )
    )
    outputs["png"] = report(
        outputs["png"],
        caption="../report/figure.rst",
        category=lambda w: report_category(w.figure),
        labels=lambda w: {"name": w.figure},
    )
    return outputs


def table_sources(name):
    """A configured table's inputs by hybrid_ir.tables.source_key: each row's run file or
    cross-validation report in each group it has one in, and those groups' qrels (a group of
    published values only needs no collection here)."""
    table = TABLES[name]
    groups = {group["name"]: group for group in table_groups(table)}
    sources = {}
    for block in table["blocks"]:
        for row in block["rows"]:
            for group, (kind, source) in row_sources(row, list(groups)).items():
                where = groups[group]
                if kind == "run":
                    path = run_path(where["collection"], where["topics"], source)
                else:
                    path = crossval_report(source)
                sources[source_key(row["label"], group)] = path
                sources[source_key("qrels", group)] = paths.qrels(
                    where["collection"], where["qrels"]
                )
    for sweep in table["sweeps"]:
        sources[f"sweep_{sweep}"] = sweep_report(sweep)
    return sources


def crossval_report(name):
    return paths.crossval(name)


def claims_inputs(paper):
    """A paper's claims file, the CSV and per-topic scores of each table its claims and
    reproductions compare that this configuration builds, and each reproduction's two runs.
    """
    claims = CLAIMS[paper]
    inputs = {"claims": claims.source}
    compared = {item.table for item in (*claims.claims, *claims.reproductions)}
    for table in sorted(compared & set(TABLES)):
        inputs[f"csv_{table}"] = paths.result_table(table, "csv")
        inputs[f"per_query_{table}"] = paths.result_table(table, "per_query.tsv")
    for reproduction in claims.reproductions:
        runs = reproduction_runs(reproduction, TABLES, claims.source)
        for role, (collection, topics, run) in runs.items():
            inputs[f"{role}_{reproduction.id}"] = paths.run(collection, topics, run)
    return inputs


def table_claims(name):
    """The claims tested on a table, as ``paper -> [claim ids]``, for its notes."""
    found = {}
    for paper, claims in CLAIMS.items():
        ids = [claim.id for claim in claims.claims if claim.table == name]
        if ids:
            found[paper] = ids
    return found


def claims_outputs(paper):
    return [paths.claims(paper, ext) for ext in ("json", "md", "html")]


def parameter_table_inputs(wildcards):
    """A parameter table's per-language sweep, its tuned retriever's facts, its paper values."""
    spec = PARAMETER_TABLES[wildcards.parameter_table]
    inputs = {"sweep": sweep_report(spec["sweep"])}
    if "tuned_run" in spec:
        tuned = spec["tuned_run"]
        inputs["facts"] = paths.run_facts(
            tuned["collection"], tuned["topics"], tuned["run"]
        )
    if "published_from" in spec:
        inputs["published"] = spec["published_from"]
    return inputs


def parameter_table_outputs(name):
    return [
        paths.result_table(name, ext) for ext in ("md", "csv", "html", "notes.html")
    ]


def table_outputs(name):
    return [
        paths.result_table(name, ext)
        for ext in ("md", "tex", "csv", "per_query.tsv", "html", "notes.html")
    ]


def pretok_inputs(name):
    """Canonical corpus and topic files of a collection, keyed as its pre-tokenized copies."""
    converted = converted_outputs(name)
    return {
        key: path
        for key, path in converted.items()
        if key == "corpus" or key.startswith("topics_")
    }


def pretok_outputs(name):
    return {
        key: paths.pretok(
            name, "corpus" if key == "corpus" else f"topics/{key[len('topics_'):]}"
        )
        for key in pretok_inputs(name)
    }


def backbone_input(backbone):
    """The directory a backbone starts from: further pretrained here, or its configured model
    when that is a local directory (a fetched hub model's included)."""
    if MATH["backbones"][backbone]["pretrain"]:
        return {"backbone": paths.model("pretrained", backbone)}
    return checkpoint_input(MATH["backbones"][backbone]["model"], "backbone")


# Epochs after which the DPR fine-tuning job also keeps its model (paper 000, Table 1 rows 1-4).
DPR_SNAPSHOTS = MATH["dpr"]["snapshots"] if MATH and "dpr" in MATH else []


def snapshot_dirs(wildcards):
    """Epoch -> where a fine-tuning job keeps its model after that epoch (DPR only)."""
    if wildcards.encoder != "dpr":
        return {}
    return {
        e: paths.model(snapshot_model(e), wildcards.backbone) for e in DPR_SNAPSHOTS
    }


def backbone_source(wildcards, input):
    """What a fine-tuning step loads: the pretrained directory, or the configured model."""
    backbone = MATH["backbones"][wildcards.backbone]
    return input.backbone if backbone["pretrain"] else backbone["model"]


def all_qrels():
    return [paths.qrels(name, s) for name, c in COLLECTIONS.items() for s in c["qrels"]]


def math_targets():
    if not MATH:
        return []
    targets = []
    for backbone, entry in MATH["backbones"].items():
        if entry["pretrain"]:
            targets += [f"{paths.model('pretrained', backbone)}.losses.tsv"]
            targets += [paths.figure(f"pretraining-{backbone}", "png")]
    for name in MATH_RUNS:
        if MATH_RUNS[name]["kind"] in ("dpr", "colbert"):
            targets.append(paths.index_stats(MATH["collection"], name))
        targets += [
            paths.run(MATH["collection"], topics, name) for topics in MATH["topics"]
        ]
    for collection, sets in MATH["also_search"].items():
        for name, run in MATH_RUNS.items():
            if run["kind"] in ENCODERS:
                targets.append(paths.index_stats(collection, name))
                targets += [paths.run(collection, topics, name) for topics in sets]
    if "ntcir12" in MATH["pretokenize"]:
        targets += list(pretok_outputs("ntcir12").values())
    return targets


def all_targets():
    targets = [
        output for name in COLLECTIONS for output in converted_outputs(name).values()
    ]
    targets += [output for name in TABLES for output in table_outputs(name)]
    targets += [
        output for name in PARAMETER_TABLES for output in parameter_table_outputs(name)
    ]
    targets += [output for paper in CLAIMS for output in claims_outputs(paper)]
    targets += [crossval_report(name) for name in CROSSVAL]
    targets += [sweep_report(name) for name in SWEEPS]
    targets += [
        output
        for name, figure in FIGURES.items()
        for output in figure_outputs(name, figure).values()
    ]
    targets += math_targets()
    targets += structure_targets()
    if BM25["experiments"]:
        targets += [
            paths.result_table("bm25", ext)
            for ext in ("md", "csv", "html", "notes.html")
        ]
    if EXPECTED:
        targets.append(paths.checks("passed"))
    return targets


# Fail at start-up, with the offending key, when an external run is missing from the manifest.
for _collection, _by_topics in EXTERNAL_RUNS.items():
    for _topics, _runs in _by_topics.items():
        for _system, _entry in _runs.items():
            raw_file(
                _entry["path"],
                f"external_runs.{_collection}.{_topics}.{_system}",
            )


wildcard_constraints:
    collection=alternatives(COLLECTIONS),
    layout=alternatives(LAYOUTS),
    topics=alternatives({s for c in COLLECTIONS.values() for s in c["topics"]}),
    qrels=alternatives(
        {s for c in COLLECTIONS.values() for s in (*c["qrels"], *qrels_views(c))}
    ),
    crossval=alternatives(CROSSVAL),
    sweep=alternatives(SWEEPS),
    figure=alternatives(FIGURES),
    table=alternatives(TABLES),
    paper=alternatives(CLAIMS),
    backbone=alternatives(MATH["backbones"] if MATH else ()),
    encoder=alternatives(ENCODERS),
