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
        MATH_CONDA_ENV
    threads: MATH["threads"]
    params:
        code=code_version("encoder_index"),
        settings=lambda w: MATH[w.encoder],
        doc_fields=MATH["doc_fields"],
        extensions=".cache/torch_extensions",
    script:
        "../../scripts/encoder_index.py"
