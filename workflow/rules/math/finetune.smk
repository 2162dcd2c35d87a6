# The schema requires `triplets` beside `dpr` or `colbert`, the only users of this file's rules.
TRIPLETS = MATH["triplets"] if "triplets" in MATH else {"collections": []}
TRIPLET_COLLECTIONS = TRIPLETS["collections"]


rule triplets:
    input:
        corpora=[paths.pretok(name, "corpus") for name in TRIPLET_COLLECTIONS],
        qrels=[
            paths.qrels(name, s)
            for name in sorted({MATH["collection"], *TRIPLET_COLLECTIONS})
            for s in COLLECTIONS[name]["qrels"]
        ],
        topics=[
            paths.topics(MATH["collection"], s)
            for s in COLLECTIONS[MATH["collection"]]["topics"]
        ],
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
        collections=TRIPLET_COLLECTIONS,
        settings=TRIPLETS,
    script:
        "../../scripts/triplets.py"


rule finetune:
    input:
        unpack(lambda w: backbone_input(w.backbone)),
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
        settings=lambda w: fine_tuning_settings(MATH, w.encoder, w.backbone),
        device=MATH["device"],
        precision=MATH["precision"],
        tf32=MATH["tf32"],
        cpu_processes=MATH["cpu_processes"],
        extensions=".cache/torch_extensions",
        snapshots=snapshot_dirs,
        # Outside the declared outputs, which Snakemake deletes when a job fails: a killed
        # training resumes from its checkpoints, and keeps the epoch snapshots it already took.
        workdir=lambda w: paths.checkpoints(f"finetune-{w.encoder}-{w.backbone}"),
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
