rule bm25_table:
    input:
        evaluations=[e for name in BM25["experiments"] for e in bm25_evaluations(name)],
        expected=config["expected"],
    output:
        markdown="results/tables/bm25.md",
        csv="results/tables/bm25.csv",
    log:
        "results/logs/tables/bm25.log",
    conda:
        CONDA_ENV
    params:
        code=code_version("bm25_table"),
        experiments=BM25["experiments"],
        k1=BM25["k1"],
        b=BM25["b"],
    script:
        "../scripts/bm25_table.py"


rule check_scores:
    input:
        artifacts=expected_artifacts(),
        expected=config["expected"],
    output:
        "results/checks/summary.tsv",
    log:
        "results/logs/checks/summary.log",
    conda:
        CONDA_ENV
    params:
        code=code_version("check_scores"),
    script:
        "../scripts/check_scores.py"


rule assert_scores:
    input:
        "results/checks/summary.tsv",
    output:
        touch("results/checks/passed"),
    log:
        "results/logs/checks/passed.log",
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
        markdown="results/tables/{table}.md",
        latex="results/tables/{table}.tex",
        csv="results/tables/{table}.csv",
        per_query="results/tables/{table}.per_query.tsv",
    log:
        "results/logs/tables/{table}.log",
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
        png=f"{paths.RESULTS}/figures/{{figure}}.png",
        svg=f"{paths.RESULTS}/figures/{{figure}}.svg",
    log:
        "results/logs/figures/{figure}.log",
    conda:
        CONDA_ENV
    params:
        code=code_version("figure"),
        spec=lambda w: FIGURES[w.figure],
    script:
        "../scripts/figure.py"
