from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/index.smk"
include: "workflow/rules/retrieve.smk"
include: "workflow/rules/fuse.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/tables.smk"


rule all:
    input:
        all_targets(),
    default_target: True
