import functools
import os
import re
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger

from hybrid_ir import paths
from hybrid_ir.planning.code_digest import DigestCache
from hybrid_ir.data.collections import reader_options
from hybrid_ir.config.settings import (
    qrels_views,
    rule_resources as resolved_resources,
    rule_threads as resolved_threads,
    snapshot_model,
)
from hybrid_ir.errors import HybridIRError, printable
from hybrid_ir.reports.figures.kinds import FIGURE_KINDS, kind_outputs
from hybrid_ir.data.hub import cache_dir as hub_cache_dir
from hybrid_ir.retrieval.lucene.index import LAYOUTS
from hybrid_ir.neural.encoders import ENCODERS
from hybrid_ir.planning.plan import (
    alternatives,
    load_plan,
    report_category_of,
    report_labels_of,
)
from hybrid_ir.reports.html_report import paper_category


def planned(function):
    """A package call whose configuration error stops the DAG as one line naming the key."""

    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except (HybridIRError, OSError) as error:
            raise WorkflowError(f"hybrid-ir: {printable(str(error))}") from None

    return call


# The merged, validated configuration (`config`, filled in place), its plan and pinned hub models.
PLAN, HUB_MODELS = planned(load_plan)(
    config,
    # The `configfile:` directive's file comes after the command line's in this list. A module
    # given a configuration of its own (`config:` other than the user's whole one) has no layers.
    (
        [
            *workflow.configfiles[len(workflow.config_settings.configfiles) :],
            *workflow.config_settings.configfiles,
        ]
        if config is workflow.config
        else []
    ),
    workflow.config_settings.config if config is workflow.config else {},
    os.path.join(HYBRID_IR_ROOT, "workflow", "schemas", "config.schema.yaml"),
    # The workflow's own files the configuration names (its manifest, expected scores, claims)
    # are found here where the working directory lacks them (a module's user, a deployment).
    workflow_root=HYBRID_IR_ROOT,
)
for _warning in PLAN.warnings():
    logger.warning(f"hybrid-ir: warning: {_warning}")

CLAIMS = PLAN.claims
COLLECTIONS = config["collections"]
BM25 = config["bm25"]
CROSSVAL = config["crossval"]
TABLES = config["tables"]
PARAMETER_TABLES = config["parameter_tables"]
STRUCTURE = config["structure"]
SWEEPS = config["sweeps"]
FIGURES = config["figures"]
RUN_DEPTH = config["run_depth"]
MATH = config["math_models"]
# One environment for every rule; a conda path is relative to the file of its rule.
CONDA_ENV = "../../envs/hybrid-ir.yaml"
MATH_CONDA_ENV = "../../../envs/hybrid-ir.yaml"  # rules in workflow/rules/math
# The longest chain of the DAG (pre-tokenization -> pretraining -> fine-tuning -> indexes ->
# re-ranking, and Approach0's index, which every fusion waits for) goes first when jobs compete
# for the cores, so that the short BM25 and evaluation jobs fill in instead of delaying it.
CRITICAL_PATH = 10

# What the rules ask of the configuration (hybrid_ir.planning.plan), a configuration error as one line.
for _name, _method in PLAN.rule_facing().items():
    globals()[_name] = planned(_method)
CODE_DIGESTS = DigestCache(Path(".snakemake") / "hybrid_ir" / "code_digests.json")


def code_version(script):
    """Digest of a rule's script and every package module it imports (hybrid_ir.planning.code_digest),
    passed as a param so that editing any of them re-runs the rule's jobs."""
    return CODE_DIGESTS.digest(
        Path(HYBRID_IR_ROOT) / "workflow" / "scripts" / f"{script}.py"
    )


def uses_job_servers():
    """Job servers serve the jobs this process runs itself: not a cluster's, nor in a job."""
    return (
        config["job_servers"]
        and workflow.local_exec
        and not workflow.remote_exec
        and not workflow.subprocess_exec
    )


# A rule's threads, mem_mb, runtime, gpu (and partition, cores per GPU where set) from the
# `resources` section, the one place a job's size is set, named as the SLURM executor reads them.
rule_threads = functools.partial(resolved_threads, config)
rule_resources = functools.partial(resolved_resources, config)


def with_report(outputs, caption, name, key="html"):
    """A rule's outputs with one of them (a table's HTML page, a figure's PNG) in the report,
    filed under the paper its ``name`` (a pattern of the wildcards, ``"{table}"``) starts with
    and labelled by the name alone (hybrid_ir.planning.plan.report_labels_of)."""
    outputs = dict(outputs)
    outputs[key] = report(
        outputs[key],
        caption=caption,
        category=report_category_of(name),
        labels=report_labels_of(name),
    )
    return outputs


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
