rule structure_index:
    input:
        corpus=paths.corpus("{collection}"),
    output:
        index=directory(paths.index("{collection}", "{system}")),
        stats=paths.index_stats("{collection}", "{system}"),
    log:
        paths.log("index", "{collection}/{system}"),
    benchmark:
        paths.benchmark("index", "{collection}/{system}")
    wildcard_constraints:
        system=alternatives({name for runs in STRUCTURE.values() for name in runs}),
    priority: CRITICAL_PATH
    conda:
        CONDA_ENV
    threads: rule_threads("structure_index")
    resources:
        **rule_resources("structure_index"),
    params:
        code=code_version("structure_index"),
        entry=lambda w: STRUCTURE[w.collection][w.system],
    script:
        "../scripts/structure_index.py"


rule structure_queries:
    input:
        unpack(structure_query_inputs),
    output:
        queries=paths.structure_queries("{collection}", "{topics}", "{system}"),
    log:
        paths.log("runs", "{collection}/{topics}/{system}.queries"),
    wildcard_constraints:
        system=alternatives({name for runs in STRUCTURE.values() for name in runs}),
    conda:
        CONDA_ENV
    threads: rule_threads("structure_queries")
    resources:
        **rule_resources("structure_queries"),
    params:
        code=code_version("structure_queries"),
        entry=lambda w: STRUCTURE[w.collection][w.system],
    script:
        "../scripts/structure_queries.py"


rule structure_search:
    input:
        index=paths.index("{collection}", "{system}"),
        stats=paths.index_stats("{collection}", "{system}"),
        queries=paths.structure_queries("{collection}", "{topics}", "{system}"),
    output:
        run=paths.run("{collection}", "{topics}", "{system}"),
        facts=paths.run_facts("{collection}", "{topics}", "{system}"),
    log:
        paths.log("runs", "{collection}/{topics}/{system}.search"),
    benchmark:
        paths.benchmark("runs", "{collection}/{topics}/{system}")
    wildcard_constraints:
        system=alternatives({name for runs in STRUCTURE.values() for name in runs}),
    conda:
        CONDA_ENV
    threads: rule_threads("structure_search")
    resources:
        **rule_resources("structure_search"),
    params:
        code=code_version("structure_search"),
        depth=lambda w: STRUCTURE[w.collection][w.system]["depth"],
    script:
        "../scripts/structure_search.py"
