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
    threads: BM25["index_threads"]
    params:
        code=code_version("bm25_index"),
        layout="{layout}",
        text_fields=lambda w: BM25["experiments"][w.collection]["text_fields"],
    script:
        "../scripts/bm25_index.py"


# The math language models' rules exist only where the configuration has them.
if MATH:

    rule encoder_index:
        input:
            model=paths.model("{encoder}", "{backbone}"),
            corpus=lambda w: paths.pretok(w.collection, "corpus"),
        output:
            index=directory(paths.index("{collection}", "{encoder}-{backbone}")),
            stats=paths.index_stats("{collection}", "{encoder}-{backbone}"),
        log:
            paths.log("index", "{collection}/{encoder}-{backbone}"),
        benchmark:
            paths.benchmark("index", "{collection}/{encoder}-{backbone}")
        conda:
            CONDA_ENV
        threads: MATH["threads"]
        params:
            code=code_version("encoder_index"),
            settings=lambda w: MATH[w.encoder],
            doc_fields=MATH["doc_fields"],
            extensions=".cache/torch_extensions",
        script:
            "../scripts/encoder_index.py"
