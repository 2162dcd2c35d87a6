rule bm25_table:
    input:
        evaluations=[e for name in BM25["experiments"] for e in bm25_evaluations(name)],
        expected=config["expected"],
    output:
        markdown=paths.result_table("bm25", "md"),
        csv=paths.result_table("bm25", "csv"),
    log:
        paths.log("tables", "bm25"),
    conda:
        CONDA_ENV
    params:
        code=code_version("bm25_table"),
        experiments=BM25["experiments"],
        k1=BM25["k1"],
        b=BM25["b"],
        depth=RUN_DEPTH,
    script:
        "../scripts/bm25_table.py"


rule check_scores:
    input:
        artifacts=expected_artifacts(),
        expected=config["expected"],
    output:
        paths.checks("summary.tsv"),
    log:
        paths.log("checks", "summary"),
    conda:
        CONDA_ENV
    params:
        code=code_version("check_scores"),
    script:
        "../scripts/check_scores.py"


rule assert_scores:
    input:
        paths.checks("summary.tsv"),
    output:
        touch(paths.checks("passed")),
    log:
        paths.log("checks", "passed"),
    conda:
        CONDA_ENV
    params:
        code=code_version("assert_scores"),
    script:
        "../scripts/assert_scores.py"


rule paper_table:
    input:
        unpack(lambda w: table_sources(w.table)),
        qrels=lambda w: paths.qrels(
            TABLES[w.table]["collection"], TABLES[w.table]["qrels"]
        ),
    output:
        markdown=paths.result_table("{table}", "md"),
        latex=paths.result_table("{table}", "tex"),
        csv=paths.result_table("{table}", "csv"),
        per_query=paths.result_table("{table}", "per_query.tsv"),
    log:
        paths.log("tables", "{table}"),
    conda:
        CONDA_ENV
    params:
        code=code_version("paper_table"),
        name="{table}",
        spec=lambda w: TABLES[w.table],
    script:
        "../scripts/paper_table.py"


rule figure:
    input:
        unpack(figure_inputs),
    output:
        png=paths.figure("{figure}", "png"),
        svg=paths.figure("{figure}", "svg"),
    log:
        paths.log("figures", "{figure}"),
    wildcard_constraints:
        figure=alternatives(
            name for name, entry in FIGURES.items() if entry["kind"] != "rank_scatter"
        ),
    conda:
        CONDA_ENV
    params:
        code=code_version("figure"),
        spec=lambda w: FIGURES[w.figure],
    script:
        "../scripts/figure.py"


# A rank_scatter figure also writes the ranks it draws (figure_outputs in common.smk).
rule figure_with_ranks:
    input:
        unpack(figure_inputs),
    output:
        png=paths.figure("{figure}", "png"),
        svg=paths.figure("{figure}", "svg"),
        tsv=paths.figure("{figure}", "tsv"),
    log:
        paths.log("figures", "{figure}"),
    wildcard_constraints:
        figure=alternatives(
            name for name, entry in FIGURES.items() if entry["kind"] == "rank_scatter"
        ),
    conda:
        CONDA_ENV
    params:
        code=code_version("figure"),
        spec=lambda w: FIGURES[w.figure],
    script:
        "../scripts/figure.py"
