rule encoder_search:
    input:
        unpack(encoder_search_inputs),
    output:
        run=paths.run("{collection}", "{topics}", "{system}"),
    log:
        paths.log("runs", "{collection}/{topics}/{system}"),
    benchmark:
        paths.benchmark("runs", "{collection}/{topics}/{system}")
    wildcard_constraints:
        system=alternatives(run_names("encoder")),
    conda:
        MATH_CONDA_ENV
    threads: rule_threads("encoder_search")
    resources:
        **rule_resources("encoder_search"),
    params:
        code=code_version("encoder_search"),
        model=encoder_run_model,
        encoder=encoder_run_kind,
        settings=encoder_run_settings,
        query_fields=MATH["query_fields"],
        depth=RUN_DEPTH,
        extensions=".cache/torch_extensions",
        device=MATH["device"],
        precision=MATH["precision"],
        tf32=MATH["tf32"],
    script:
        "../../scripts/encoder_search.py"


rule mlm_rerank:
    input:
        unpack(mlm_rerank_inputs),
    output:
        run=paths.run("{collection}", "{topics}", "{system}"),
    log:
        paths.log("runs", "{collection}/{topics}/{system}.rerank"),
    benchmark:
        paths.benchmark("runs", "{collection}/{topics}/{system}")
    wildcard_constraints:
        system=alternatives(run_names("mlm_reranked")),
    conda:
        MATH_CONDA_ENV
    threads: rule_threads("mlm_rerank")
    resources:
        **rule_resources("mlm_rerank"),
    params:
        code=code_version("mlm_rerank"),
        reranker=reranker_entry,
        # The further-pretrained directory, or the configured checkpoint (hub id or path).
        model=mlm_reranker_model,
        device=MATH["device"],
        precision=MATH["precision"],
        tf32=MATH["tf32"],
    script:
        "../../scripts/mlm_rerank.py"


rule encoder_rerank:
    input:
        # The encoder run's model and index (the candidates' vectors: the collection is
        # encoded once per model, by its index), the base run, the topics.
        unpack(encoder_rerank_inputs),
    output:
        run=paths.run("{collection}", "{topics}", "{system}"),
    log:
        paths.log("runs", "{collection}/{topics}/{system}.rerank"),
    benchmark:
        paths.benchmark("runs", "{collection}/{topics}/{system}")
    wildcard_constraints:
        system=alternatives(run_names("encoder_reranked")),
    conda:
        MATH_CONDA_ENV
    threads: rule_threads("encoder_rerank")
    resources:
        **rule_resources("encoder_rerank"),
    params:
        code=code_version("encoder_rerank"),
        reranker=reranker_entry,
        model=encoder_reranker_model,
        settings=encoder_reranker_settings,
        query_fields=MATH["query_fields"],
        extensions=".cache/torch_extensions",
        device=MATH["device"],
        precision=MATH["precision"],
        tf32=MATH["tf32"],
    script:
        "../../scripts/encoder_rerank.py"
