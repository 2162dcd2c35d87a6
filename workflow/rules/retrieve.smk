rule bm25_search:
    input:
        index=paths.index("{collection}", "bm25-{layout}"),
        topics=paths.topics("{collection}", "{topics}"),
    output:
        run=paths.run("{collection}", "{topics}", "bm25-{layout}"),
    log:
        paths.log("runs", "{collection}/{topics}/bm25-{layout}"),
    benchmark:
        paths.benchmark("runs", "{collection}/{topics}/bm25-{layout}")
    conda:
        CONDA_ENV
    threads: BM25["threads"]
    params:
        code=code_version("bm25_search"),
        layout="{layout}",
        k1=BM25["k1"],
        b=BM25["b"],
        hits=BM25["hits"],
        remove_query=lambda w: BM25["experiments"][w.collection]["remove_query"],
        query_fields=lambda w: BM25["experiments"][w.collection]["query_fields"],
        tag="bm25-{layout}",
    script:
        "../scripts/bm25_search.py"


for _name in BM25["experiments"]:

    rule:
        name:
            f"bm25_{_name}"
        input:
            bm25_evaluations(_name),


rule import_run:
    input:
        lambda w: raw_file(
            external_run(w)["path"],
            f"external_runs.{w.collection}.{w.topics}.{w.system}",
        ),
    output:
        run=paths.run("{collection}", "{topics}", "{system}"),
    log:
        paths.log("runs", "{collection}/{topics}/{system}.import"),
    wildcard_constraints:
        system=alternatives(names_in(EXTERNAL_RUNS)),
    conda:
        CONDA_ENV
    params:
        code=code_version("import_run"),
        depth=RUN_DEPTH,
        run_format=lambda w: external_run(w).get("format"),
    script:
        "../scripts/import_run.py"


rule retrieve:
    input:
        unpack(retriever_inputs),
    output:
        run=paths.run("{collection}", "{topics}", "{system}"),
        facts=paths.run_facts("{collection}", "{topics}", "{system}"),
    log:
        paths.log("runs", "{collection}/{topics}/{system}.retrieve"),
    benchmark:
        paths.benchmark("runs", "{collection}/{topics}/{system}")
    wildcard_constraints:
        system=alternatives({name for runs in RETRIEVERS.values() for name in runs}),
    conda:
        CONDA_ENV
    threads: 2
    params:
        code=code_version("retrieve"),
        retriever=lambda w: RETRIEVERS[w.collection][w.system],
    script:
        "../scripts/retrieve.py"


# The math language models' rules exist only where the configuration has them.
if MATH:

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
            CONDA_ENV
        threads: MATH["threads"]
        params:
            code=code_version("encoder_search"),
            settings=lambda w: MATH[w.encoder],
            query_fields=MATH["query_fields"],
            hits=MATH["hits"],
            extensions=".cache/torch_extensions",
        script:
            "../scripts/encoder_search.py"

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
            CONDA_ENV
        threads: MATH["threads"]
        params:
            code=code_version("mlm_rerank"),
            reranker=lambda w: MATH_RUNS[w.system],
            doc_fields=MATH["doc_fields"],
            query_fields=MATH["query_fields"],
        script:
            "../scripts/mlm_rerank.py"
