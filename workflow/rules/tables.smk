rule bm25_table:
    input:
        evaluations=[e for name in BM25["experiments"] for e in bm25_evaluations(name)],
        expected=config["expected"],
    output:
        **with_report(bm25_table_outputs(), "../report/bm25.rst", "bm25"),
    log:
        paths.log("tables", "bm25"),
    conda:
        CONDA_ENV
    threads: rule_threads("bm25_table")
    resources:
        **rule_resources("bm25_table"),
    params:
        **bm25_table_params(),
        code=code_version("bm25_table"),
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
    threads: rule_threads("check_scores")
    resources:
        **rule_resources("check_scores"),
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
    threads: rule_threads("assert_scores")
    resources:
        **rule_resources("assert_scores"),
    params:
        code=code_version("assert_scores"),
    script:
        "../scripts/assert_scores.py"


rule paper_table:
    input:
        unpack(table_sources),
    output:
        **with_report(table_outputs("{table}"), "../report/table.rst", "{table}"),
    log:
        paths.log("tables", "{table}"),
    conda:
        CONDA_ENV
    threads: rule_threads("paper_table")
    resources:
        **rule_resources("paper_table"),
    params:
        **table_params(),
        code=code_version("paper_table"),
    script:
        "../scripts/paper_table.py"


rule parameter_table:
    input:
        unpack(parameter_table_inputs),
    output:
        **with_report(
            parameter_table_outputs("{parameter_table}"),
            "../report/table.rst",
            "{parameter_table}",
        ),
    log:
        paths.log("tables", "{parameter_table}"),
    wildcard_constraints:
        parameter_table=alternatives(PARAMETER_TABLES),
    conda:
        CONDA_ENV
    threads: rule_threads("parameter_table")
    resources:
        **rule_resources("parameter_table"),
    params:
        **parameter_table_params(),
        code=code_version("parameter_table"),
    script:
        "../scripts/parameter_table.py"


# One rule per figure kind (hybrid_ir.reports.figures.kinds): PNG and SVG, and what the kind writes besides.
for _kind, _entry in FIGURE_KINDS.items():

    rule:
        name:
            f"figure_{_kind}"
        input:
            unpack(figure_inputs),
        output:
            **with_report(
                kind_outputs(_kind, "{figure}"),
                "../report/figure.rst",
                "{figure}",
                "png",
            ),
        log:
            paths.log("figures", "{figure}"),
        benchmark:
            paths.benchmark("figures", "{figure}")
        wildcard_constraints:
            figure=alternatives(figures_of_kind(_kind)),
        conda:
            CONDA_ENV
        threads: rule_threads(_entry.resources)
        resources:
            **rule_resources(_entry.resources),
        params:
            code=code_version("figure"),
            spec=figure_spec,
            sweep=figure_sweep,
        script:
            "../scripts/figure.py"


rule claims:
    input:
        unpack(claims_inputs),
    output:
        **with_report(
            claims_outputs("{paper}"),
            "../report/claims.rst",
            "paper{paper}-claims",
        ),
    log:
        paths.log("claims", "paper{paper}"),
    conda:
        CONDA_ENV
    threads: rule_threads("claims")
    resources:
        **rule_resources("claims"),
    params:
        setups=claims_setups,
        code=code_version("claims"),
    script:
        "../scripts/claims.py"
