# Re-rankers by kind: paper 001's MLM re-ranker, or a fine-tuned encoder's (paper 000, §3.4).
MLM_RERANKERS = [name for name, run in MATH_RUNS.items() if run["kind"] == "rerank"]
ENCODER_RERANKERS = [
    name for name, run in MATH_RUNS.items() if run["kind"] == "encoder_rerank"
]


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
        system=alternatives(MLM_RERANKERS),
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


rule encoder_rerank:
    input:
        model=lambda w: paths.model(
            MATH_RUNS[w.system]["encoder"], MATH_RUNS[w.system]["backbone"]
        ),
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
        system=alternatives(ENCODER_RERANKERS),
    conda:
        MATH_CONDA_ENV
    threads: MATH["threads"]
    params:
        code=code_version("encoder_rerank"),
        reranker=lambda w: MATH_RUNS[w.system],
        settings=lambda w: MATH[MATH_RUNS[w.system]["encoder"]],
        doc_fields=MATH["doc_fields"],
        query_fields=MATH["query_fields"],
        extensions=".cache/torch_extensions",
    script:
        "../../scripts/encoder_rerank.py"
