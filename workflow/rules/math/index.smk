rule encoder_index:
    input:
        unpack(lambda w: MODELS.encoder_input(w.system)),
        corpus=lambda w: paths.pretok(w.collection, "corpus"),
    output:
        index=directory(paths.index("{collection}", "{system}")),
        stats=paths.index_stats("{collection}", "{system}"),
    log:
        paths.log("index", "{collection}/{system}"),
    benchmark:
        paths.benchmark("index", "{collection}/{system}")
    wildcard_constraints:
        system=alternatives(MODELS.encoder_runs),
    priority: CRITICAL_PATH
    conda:
        MATH_CONDA_ENV
    threads: rule_threads("encoder_index")
    resources:
        **rule_resources("encoder_index"),
    params:
        code=code_version("encoder_index"),
        model=lambda w: MODELS.encoder_model(w.system),
        encoder=lambda w: MODELS.encoder_runs[w.system]["kind"],
        settings=lambda w: MODELS.encoder_settings(w.system),
        doc_fields=MATH["doc_fields"],
        extensions=".cache/torch_extensions",
        device=MATH["device"],
        precision=MATH["precision"],
        tf32=MATH["tf32"],
    script:
        "../../scripts/encoder_index.py"
