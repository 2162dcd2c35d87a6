rule math_vocabulary:
    input:
        [
            f"{paths.RESULTS}/pretok/{name}/math_tokens.tsv"
            for name in MATH["pretraining"]["corpus"]
        ],
    output:
        f"{paths.RESULTS}/models/math_vocabulary.tsv",
    log:
        "results/logs/models/math_vocabulary.log",
    conda:
        CONDA_ENV
    params:
        code=code_version("math_vocabulary"),
        min_count=MATH.get("vocabulary", {}).get("min_count", 1),
    script:
        "../scripts/math_vocabulary.py"


rule pretrain:
    input:
        corpora=[paths.pretok(name, "corpus") for name in MATH["pretraining"]["corpus"]],
        vocabulary=rules.math_vocabulary.output[0],
    output:
        model=directory(paths.model("pretrained", "{backbone}")),
        losses=f"{paths.model('pretrained', '{backbone}')}.losses.tsv",
        figure_png="results/figures/pretraining-{backbone}.png",
        figure_svg="results/figures/pretraining-{backbone}.svg",
    log:
        "results/logs/models/pretrain-{backbone}.log",
    benchmark:
        "results/benchmarks/models/pretrain-{backbone}.tsv"
    conda:
        CONDA_ENV
    threads: MATH.get("threads", 1)
    params:
        code=code_version("pretrain"),
        model=lambda w: MATH["backbones"][w.backbone]["model"],
        fields=list(MATH["pretraining"]["corpus"].values()),
        settings=lambda w: pretraining_settings(w.backbone),
        device=MATH.get("device", "cpu"),
        threads=MATH.get("threads"),
        # Checkpoints live outside the declared output, which Snakemake deletes when a job
        # fails: a killed run resumes from them.
        workdir=f"{paths.RESULTS}/models/checkpoints/{{backbone}}",
    script:
        "../scripts/pretrain.py"
