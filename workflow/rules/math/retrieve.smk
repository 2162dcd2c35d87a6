rule encoder_search:
    input:
        model=paths.model("{encoder}", "{backbone}"),
        index=paths.index("{collection}", "{encoder}-{backbone}"),
        topics=lambda w: paths.pretok(w.collection, f"topics/{w.topics}"),
    output:
        run=paths.run("{collection}", "{topics}", "{encoder}-{backbone}"),
    log:
        paths.log("runs", "{collection}/{topics}/{encoder}-{backbone}"),
    benchmark:
        paths.benchmark("runs", "{collection}/{topics}/{encoder}-{backbone}")
    conda:
        MATH_CONDA_ENV
    threads: MATH["threads"]
    params:
        code=code_version("encoder_search"),
        settings=lambda w: MATH[w.encoder],
        query_fields=MATH["query_fields"],
        depth=RUN_DEPTH,
        extensions=".cache/torch_extensions",
    script:
        "../../scripts/encoder_search.py"


rule mlm_rerank:
    input:
        model=lambda w: paths.model("pretrained", MATH_RUNS[w.system]["backbone"]),
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
        system=alternatives(MATH["rerankers"]),
    conda:
        MATH_CONDA_ENV
    threads: MATH["threads"]
    params:
        code=code_version("mlm_rerank"),
        reranker=lambda w: MATH_RUNS[w.system],
        doc_fields=MATH["doc_fields"],
        query_fields=MATH["query_fields"],
    script:
        "../../scripts/mlm_rerank.py"
