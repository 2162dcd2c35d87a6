from snakemake.utils import min_version

min_version("9.0")


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"


# The math language models (paper 000's left half) are optional in a configuration.
if config.get("math_models"):

    include: "workflow/rules/pretokenize.smk"
    include: "workflow/rules/pretrain.smk"
    include: "workflow/rules/finetune.smk"


include: "workflow/rules/index.smk"
include: "workflow/rules/retrieve.smk"
include: "workflow/rules/fuse.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/tables.smk"


rule all:
    default_target: True
    input:
        all_targets(),
