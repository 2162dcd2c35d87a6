import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

# This workflow's own folder: where this Snakefile is, also when Snakemake started from another
# one (workflow/Snakefile, or another workflow's that uses this one as a module, whose folder is
# workflow.basedir). Its schema, scripts and default files are found here, whatever the working
# directory (docs/guides/use-as-a-module.md).
HYBRID_IR_ROOT = workflow.current_basedir.get_path_or_uri(secret_free=False)
if not os.path.isdir(HYBRID_IR_ROOT):
    # A module from a repository host (snakedeploy's github(...)): its src/ is not on this machine.
    raise WorkflowError(
        f"hybrid-ir: the workflow at {HYBRID_IR_ROOT} is not a folder on this machine; it runs "
        "from a checkout: clone it (git clone --branch TAG URL) and give the module the path "
        "of the clone's workflow/Snakefile (docs/guides/use-as-a-module.md)"
    )
# The package from this workflow's own src/, here and in every job (hybrid_ir.planning.package_source).
sys.path.insert(0, os.path.join(HYBRID_IR_ROOT, "src"))

from hybrid_ir.evaluation.checks import run_summary
from hybrid_ir.planning.jobserver import close_job_servers, open_job_servers
from hybrid_ir.planning.package_source import share_with_jobs
from hybrid_ir.monitor.console import drain_console
from hybrid_ir.planning.snakemake_patches import (
    keep_one_pending_timer,
    read_configfiles_with_libyaml,
    run_python_scripts_in_job_servers,
    serialize_params_lazily,
)

min_version("9.0")
share_with_jobs()
# Snakemake's own costs the workflow does without (hybrid_ir.planning.snakemake_patches): a scheduler
# wake-up timer per finished job; pandas and pure-Python YAML at every start; torch's and
# transformers' imports in every torch job (job servers, where the configuration has them).
keep_one_pending_timer()
read_configfiles_with_libyaml()
serialize_params_lazily()
run_python_scripts_in_job_servers()


configfile: "config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/index.smk"
include: "workflow/rules/retrieve.smk"
include: "workflow/rules/structure.smk"


# The math language models (paper 000's left half), optional in a configuration: one rule
# file per stage they own.
if config["math_models"]:

    include: "workflow/rules/math/pretokenize.smk"
    include: "workflow/rules/math/pretrain.smk"
    include: "workflow/rules/math/finetune.smk"
    include: "workflow/rules/math/index.smk"
    include: "workflow/rules/math/retrieve.smk"


include: "workflow/rules/fuse.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/tables.smk"
include: "workflow/rules/explore.smk"


onstart:
    if uses_job_servers():
        open_job_servers()


# The job log runs to thousands of lines; its last lines say whether the run worked and where
# its results are.
onsuccess:
    close_job_servers()
    drain_console()
    print(run_summary(succeeded=True))


onerror:
    close_job_servers()
    drain_console()
    print(run_summary(succeeded=False))


rule all:
    default_target: True
    input:
        all_targets(),


# Targets by name (paper001, paper001_table1, ...) and misspelled result files: after every rule.
include: "workflow/rules/targets.smk"
