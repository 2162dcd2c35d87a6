rule fuse_runs:
    input:
        fusion_inputs,
    output:
        run=paths.run("{collection}", "{topics}", "{system}"),
    log:
        paths.log("runs", "{collection}/{topics}/{system}.fuse"),
    wildcard_constraints:
        system=alternatives(run_names("fused")),
    conda:
        CONDA_ENV
    threads: rule_threads("fuse_runs")
    resources:
        **rule_resources("fuse_runs"),
    params:
        **fusion_params(),
        code=code_version("fuse_runs"),
    script:
        "../scripts/fuse_runs.py"


rule crossvalidate:
    input:
        unpack(crossval_inputs),
    output:
        **crossval_outputs("{crossval}"),
    log:
        paths.log("crossval", "{crossval}"),
    benchmark:
        paths.benchmark("crossval", "{crossval}")
    conda:
        CONDA_ENV
    threads: rule_threads("crossvalidate")
    resources:
        **rule_resources("crossvalidate"),
    params:
        **crossval_params(),
        code=code_version("crossvalidate"),
    script:
        "../scripts/crossvalidate.py"


rule sweep:
    input:
        unpack(sweep_inputs),
    output:
        report=paths.sweep("{collection}", "{topics}", "{sweep}"),
        run=paths.run("{collection}", "{topics}", "{sweep}-best"),
    log:
        paths.log("sweeps", "{collection}/{topics}/{sweep}"),
    conda:
        CONDA_ENV
    threads: rule_threads("sweep")
    resources:
        **rule_resources("sweep"),
    params:
        **sweep_params(),
        code=code_version("sweep"),
    script:
        "../scripts/sweep.py"
