rule bm25_index:
    input:
        corpus=paths.corpus("{collection}"),
    output:
        index=directory(paths.index("{collection}", "bm25-{layout}")),
        stats=paths.index_stats("{collection}", "bm25-{layout}"),
    log:
        paths.log("index", "{collection}/bm25-{layout}"),
    benchmark:
        paths.benchmark("index", "{collection}/bm25-{layout}")
    conda:
        CONDA_ENV
    threads: rule_threads("bm25_index")
    resources:
        **rule_resources("bm25_index"),
    params:
        code=code_version("bm25_index"),
        layout="{layout}",
        text_fields=bm25_text_fields,
        store_raw=bm25_store_raw,
    script:
        "../scripts/bm25_index.py"
