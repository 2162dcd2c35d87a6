rule encoder_index:
    input:
        unpack(encoder_index_inputs),
    output:
        index=directory(paths.index("{collection}", "{system}")),
        stats=paths.index_stats("{collection}", "{system}"),
    log:
        paths.log("index", "{collection}/{system}"),
    benchmark:
        paths.benchmark("index", "{collection}/{system}")
    wildcard_constraints:
        system=alternatives(encoder_run_names()),
    priority: CRITICAL_PATH
    conda:
        MATH_CONDA_ENV
    threads: rule_threads("encoder_index")
    resources:
        **rule_resources("encoder_index"),
    params:
        code=code_version("encoder_index"),
        model=encoder_run_model,
        encoder=encoder_run_kind,
        settings=encoder_run_settings,
        doc_fields=MATH["doc_fields"],
        extensions=".cache/torch_extensions",
        device=MATH["device"],
        precision=MATH["precision"],
        tf32=MATH["tf32"],
    script:
        "../../scripts/encoder_index.py"
