rule evaluate_run:
    input:
        run=paths.run("{collection}", "{topics}", "{system}"),
        qrels=paths.qrels("{collection}", "{qrels}"),
    output:
        paths.evaluation("{collection}", "{topics}", "{system}", "{qrels}"),
    log:
        paths.log("eval", "{collection}/{topics}/{system}.{qrels}"),
    conda:
        CONDA_ENV
    threads: rule_threads("evaluate_run")
    resources:
        **rule_resources("evaluate_run"),
    params:
        code=code_version("evaluate_run"),
        measures=evaluation_measures,
    script:
        "../scripts/evaluate_run.py"
