rule bm25_table:
    input:
        evaluations=[e for name in BM25["experiments"] for e in bm25_evaluations(name)],
        expected=config["expected"],
    output:
        markdown=paths.result_table("bm25", "md"),
        csv=paths.result_table("bm25", "csv"),
        html=report(
            paths.result_table("bm25", "html"),
            caption="../report/bm25.rst",
            category=BEYOND,
            labels={"name": "bm25"},
        ),
        notes=paths.result_table("bm25", "notes.html"),
    log:
        paths.log("tables", "bm25"),
    conda:
        CONDA_ENV
    threads: rule_threads("bm25_table")
    resources:
        **rule_resources("bm25_table"),
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
        unpack(lambda w: table_sources(w.table)),
    output:
        markdown=paths.result_table("{table}", "md"),
        latex=paths.result_table("{table}", "tex"),
        csv=paths.result_table("{table}", "csv"),
        per_query=paths.result_table("{table}", "per_query.tsv"),
        # Name alone: Snakemake's report turns a second label with two values into a toggle,
        # which blanks a two-result category; the title is in the caption and on the page.
        html=report(
            paths.result_table("{table}", "html"),
            caption="../report/table.rst",
            category=lambda w: report_category(w.table),
            labels=lambda w: {"name": w.table},
        ),
        notes=paths.result_table("{table}", "notes.html"),
    log:
        paths.log("tables", "{table}"),
    conda:
        CONDA_ENV
    threads: rule_threads("paper_table")
    resources:
        **rule_resources("paper_table"),
    params:
        code=code_version("paper_table"),
        name="{table}",
        spec=lambda w: TABLES[w.table],
        claims=lambda w: table_claims(w.table),
    script:
        "../scripts/paper_table.py"


rule parameter_table:
    input:
        unpack(parameter_table_inputs),
    output:
        markdown=paths.result_table("{parameter_table}", "md"),
        csv=paths.result_table("{parameter_table}", "csv"),
        html=report(
            paths.result_table("{parameter_table}", "html"),
            caption="../report/table.rst",
            category=lambda w: report_category(w.parameter_table),
            labels=lambda w: {"name": w.parameter_table},
        ),
        notes=paths.result_table("{parameter_table}", "notes.html"),
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
        code=code_version("parameter_table"),
        name="{parameter_table}",
        spec=lambda w: PARAMETER_TABLES[w.parameter_table],
    script:
        "../scripts/parameter_table.py"


# One rule per figure kind (hybrid_ir.figure_kinds): PNG and SVG, and what the kind writes besides.
for _kind, _entry in FIGURE_KINDS.items():

    rule:
        name:
            f"figure_{_kind}"
        input:
            unpack(figure_inputs),
        output:
            **figure_rule_outputs(_kind),
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
            spec=lambda w: FIGURES[w.figure],
            sweep=lambda w: (
                SWEEPS[FIGURES[w.figure]["sweep"]]
                if "sweep" in FIGURES[w.figure]
                else None
            ),
        script:
            "../scripts/figure.py"


rule claims:
    input:
        unpack(lambda w: claims_inputs(w.paper)),
    output:
        json=paths.claims("{paper}", "json"),
        markdown=paths.claims("{paper}", "md"),
        html=report(
            paths.claims("{paper}", "html"),
            caption="../report/claims.rst",
            category=lambda w: paper_category(w.paper),
            labels=lambda w: {"name": f"paper{w.paper}-claims"},
        ),
    log:
        paths.log("claims", "paper{paper}"),
    conda:
        CONDA_ENV
    threads: rule_threads("claims")
    resources:
        **rule_resources("claims"),
    params:
        code=code_version("claims"),
    script:
        "../scripts/claims.py"
