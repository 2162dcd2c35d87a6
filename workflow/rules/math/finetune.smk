rule triplets:
    input:
        **triplets_inputs(),
    output:
        triplets=paths.model_file("triplets.jsonl"),
        counts=paths.model_file("triplets.counts.json"),
    log:
        paths.log("models", "triplets"),
    priority: CRITICAL_PATH
    conda:
        MATH_CONDA_ENV
    threads: rule_threads("triplets")
    resources:
        **rule_resources("triplets"),
    params:
        code=code_version("triplets"),
        collections=triplet_collections(),
        settings=triplets_settings(),
    script:
        "../../scripts/triplets.py"


rule finetune:
    input:
        unpack(backbone_input),
        triplets=rules.triplets.output.triplets,
    output:
        model=directory(paths.model("{encoder}", "{backbone}")),
        facts=f"{paths.model('{encoder}', '{backbone}')}.json",
    log:
        paths.log("models", "{encoder}-{backbone}"),
    benchmark:
        paths.benchmark("models", "{encoder}-{backbone}")
    priority: CRITICAL_PATH
    conda:
        MATH_CONDA_ENV
    threads: rule_threads("finetune")
    resources:
        **rule_resources("finetune"),
    params:
        code=code_version("finetune"),
        source=backbone_source,
        settings=finetune_settings,
        device=MATH["device"],
        precision=MATH["precision"],
        tf32=MATH["tf32"],
        cpu_processes=MATH["cpu_processes"],
        extensions=".cache/torch_extensions",
        snapshots=snapshot_dirs,
        # Outside the declared outputs, which Snakemake deletes when a job fails: a killed
        # training resumes from its checkpoints, and keeps the epoch snapshots it already took.
        workdir=paths.checkpoints("finetune-{encoder}-{backbone}"),
    script:
        "../../scripts/finetune.py"


# The same job, with the snapshots among its outputs, where DPR keeps some.
if PLAN.dpr_snapshots():

    use rule finetune as finetune_snapshots with:
        output:
            model=directory(paths.model("{encoder}", "{backbone}")),
            facts=f"{paths.model('{encoder}', '{backbone}')}.json",
            snapshots=[
                directory(paths.model(snapshot_model(e, "{encoder}"), "{backbone}"))
                for e in PLAN.dpr_snapshots()
            ],
        wildcard_constraints:
            encoder="dpr",

    ruleorder: finetune_snapshots > finetune
