rule encoder_search:
    input:
        unpack(lambda w: MODELS.encoder_input(w.system)),
        index=paths.index("{collection}", "{system}"),
        topics=lambda w: paths.pretok(w.collection, f"topics/{w.topics}"),
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
        model=lambda w: MODELS.encoder_model(w.system),
        encoder=lambda w: MODELS.encoder_runs[w.system]["kind"],
        settings=lambda w: MODELS.encoder_settings(w.system),
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
        unpack(lambda w: MODELS.mlm_input(w.system)),
        base=lambda w: run_path(w.collection, w.topics, MATH_RUNS[w.system]["base"]),
        corpus=lambda w: paths.pretok(w.collection, "corpus"),
        topics=lambda w: paths.pretok(w.collection, f"topics/{w.topics}"),
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
        reranker=lambda w: MATH_RUNS[w.system],
        # The further-pretrained directory, or the configured checkpoint (hub id or path).
        model=lambda w: MODELS.mlm_model(w.system),
        device=MATH["device"],
        precision=MATH["precision"],
        tf32=MATH["tf32"],
    script:
        "../../scripts/mlm_rerank.py"


rule encoder_rerank:
    input:
        unpack(lambda w: MODELS.encoder_input(MODELS.reranking_encoder(w.system))),
        # The candidates' vectors: the collection is encoded once per model, by its index.
        index=lambda w: paths.index(w.collection, MODELS.reranking_encoder(w.system)),
        base=lambda w: run_path(w.collection, w.topics, MATH_RUNS[w.system]["base"]),
        topics=lambda w: paths.pretok(w.collection, f"topics/{w.topics}"),
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
        reranker=lambda w: MATH_RUNS[w.system],
        model=lambda w: MODELS.encoder_model(MODELS.reranking_encoder(w.system)),
        settings=lambda w: MODELS.encoder_settings(MODELS.reranking_encoder(w.system)),
        query_fields=MATH["query_fields"],
        extensions=".cache/torch_extensions",
        device=MATH["device"],
        precision=MATH["precision"],
        tf32=MATH["tf32"],
    script:
        "../../scripts/encoder_rerank.py"
