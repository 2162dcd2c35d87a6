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
        **bm25_search_params(),
        code=code_version("bm25_search"),
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
        imported_run_file,
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
        **import_params(),
        code=code_version("import_run"),
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
        **retriever_params(),
        code=code_version("retrieve"),
    script:
        "../scripts/retrieve.py"
