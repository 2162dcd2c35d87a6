# Per-topic explorer pages (hybrid_ir.reports.explore.pages): one per table of explore.tables, written beside
# the table's files and shown in the report under the table's paper (unless explore.report is
# false).
rule explore_table:
    input:
        unpack(explorer_inputs),
    output:
        **(
            with_report(
                explorer_outputs("{table}"),
                "../report/explore.rst",
                "{table}-explorer",
                "page",
            )
            if config["explore"]["report"]
            else explorer_outputs("{table}")
        ),
    log:
        paths.log("tables", "{table}.explore"),
    wildcard_constraints:
        table=alternatives(explored_tables()),
    conda:
        CONDA_ENV
    threads: rule_threads("explore_table")
    resources:
        **rule_resources("explore_table"),
    params:
        **explorer_params(),
        code=code_version("explore_table"),
    script:
        "../scripts/explore_table.py"
