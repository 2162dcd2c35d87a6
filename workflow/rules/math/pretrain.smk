rule math_vocabulary:
    input:
        [
            paths.pretok_facts(name, "math_tokens.tsv")
            for name in MATH["pretraining"]["corpus"]
        ],
    output:
        paths.model_file("math_vocabulary.tsv"),
    log:
        paths.log("models", "math_vocabulary"),
    priority: CRITICAL_PATH
    conda:
        MATH_CONDA_ENV
    threads: rule_threads("math_vocabulary")
    resources:
        **rule_resources("math_vocabulary"),
    params:
        code=code_version("math_vocabulary"),
        min_count=MATH["vocabulary"]["min_count"],
    script:
        "../../scripts/math_vocabulary.py"


rule pretrain:
    input:
        unpack(source_model_input),
        corpora=[paths.pretok(name, "corpus") for name in MATH["pretraining"]["corpus"]],
        vocabulary=rules.math_vocabulary.output[0],
    output:
        model=directory(paths.model("pretrained", "{backbone}")),
        losses=f"{paths.model('pretrained', '{backbone}')}.losses.tsv",
        figure_png=report(
            paths.figure("pretraining-{backbone}", "png"),
            caption="../../report/pretraining.rst",
            category=paper_category("000"),
            labels=report_labels_of("pretraining-{backbone}"),
        ),
        figure_svg=paths.figure("pretraining-{backbone}", "svg"),
    log:
        paths.log("models", "pretrain-{backbone}"),
    benchmark:
        paths.benchmark("models", "pretrain-{backbone}")
    priority: CRITICAL_PATH
    conda:
        MATH_CONDA_ENV
    threads: rule_threads("pretrain")
    resources:
        **rule_resources("pretrain"),
    params:
        code=code_version("pretrain"),
        model=backbone_model,
        fields=list(MATH["pretraining"]["corpus"].values()),
        settings=pretrain_settings,
        device=MATH["device"],
        precision=MATH["precision"],
        tf32=MATH["tf32"],
        cpu_processes=MATH["cpu_processes"],
        # Checkpoints live outside the declared output, which Snakemake deletes when a job
        # fails: a killed run resumes from them.
        workdir=paths.checkpoints("{backbone}"),
    script:
        "../../scripts/pretrain.py"
