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
    threads: rule_threads("bm25_search")
    resources:
        **rule_resources("bm25_search"),
    params:
        code=code_version("bm25_search"),
        layout="{layout}",
        k1=BM25["k1"],
        b=BM25["b"],
        depth=RUN_DEPTH,
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
        system=alternatives(run_names("imported")),
    conda:
        CONDA_ENV
    threads: rule_threads("import_run")
    resources:
        **rule_resources("import_run"),
    params:
        code=code_version("import_run"),
        depth=RUN_DEPTH,
        run_format=lambda w: external_run(w)["format"],
        duplicates=lambda w: external_run(w)["duplicates"],
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
        system=alternatives(run_names("retriever")),
    conda:
        CONDA_ENV
    threads: rule_threads("retrieve")
    resources:
        **rule_resources("retrieve"),
    params:
        code=code_version("retrieve"),
        retriever=lambda w: RETRIEVERS[w.collection][w.system],
    script:
        "../scripts/retrieve.py"
