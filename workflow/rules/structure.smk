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
        system=structure_names(sharded=False),
    priority: CRITICAL_PATH
    conda:
        CONDA_ENV
    threads: rule_threads("structure_index")
    resources:
        **rule_resources("structure_index"),
    params:
        code=code_version("structure_index"),
        entry=structure_entry,
        shard=0,
        shards=1,
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
        entry=structure_entry,
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
        system=structure_names(sharded=False, per_topics=True),
    conda:
        CONDA_ENV
    threads: rule_threads("structure_search")
    resources:
        **rule_resources("structure_search"),
    params:
        code=code_version("structure_search"),
        depth=structure_depth,
    script:
        "../scripts/structure_search.py"


# structure.<collection>.<name>.shards above 1: each shard indexed and searched in its own jobs,
# then the shards' hits merged into the run, and their statistics into the index's.
rule structure_shard_index:
    input:
        corpus=paths.corpus("{collection}"),
    output:
        index=directory(paths.structure_shard("{collection}", "{system}", "{shard}")),
        stats=paths.structure_shard_stats("{collection}", "{system}", "{shard}"),
    log:
        paths.log("index", "{collection}/{system}.shard{shard}"),
    benchmark:
        paths.benchmark("index", "{collection}/{system}.shard{shard}")
    wildcard_constraints:
        system=structure_names(sharded=True),
        shard=r"\d+",
    priority: CRITICAL_PATH
    conda:
        CONDA_ENV
    threads: rule_threads("structure_shard_index")
    resources:
        **rule_resources("structure_shard_index"),
    params:
        code=code_version("structure_index"),
        entry=structure_entry,
        shard=structure_shard_number,
        shards=structure_shard_count,
    script:
        "../scripts/structure_index.py"


rule structure_shard_stats:
    input:
        unpack(structure_shard_stats_inputs),
    output:
        stats=paths.index_stats("{collection}", "{system}"),
    log:
        paths.log("index", "{collection}/{system}.shards"),
    wildcard_constraints:
        system=structure_names(sharded=True),
    localrule: True
    conda:
        CONDA_ENV
    threads: rule_threads("structure_shard_stats")
    resources:
        **rule_resources("structure_shard_stats"),
    params:
        code=code_version("structure_shard_stats"),
    script:
        "../scripts/structure_shard_stats.py"


rule structure_shard_search:
    input:
        index=paths.structure_shard("{collection}", "{system}", "{shard}"),
        stats=paths.structure_shard_stats("{collection}", "{system}", "{shard}"),
        queries=paths.structure_queries("{collection}", "{topics}", "{system}"),
    output:
        run=paths.structure_shard_run("{collection}", "{topics}", "{system}", "{shard}"),
        facts=paths.structure_shard_facts(
            "{collection}", "{topics}", "{system}", "{shard}"
        ),
    log:
        paths.log("runs", "{collection}/{topics}/{system}.search.shard{shard}"),
    benchmark:
        paths.benchmark("runs", "{collection}/{topics}/{system}.shard{shard}")
    wildcard_constraints:
        system=structure_names(sharded=True, per_topics=True),
        shard=r"\d+",
    conda:
        CONDA_ENV
    threads: rule_threads("structure_shard_search")
    resources:
        **rule_resources("structure_shard_search"),
    params:
        code=code_version("structure_search"),
        depth=structure_depth,
    script:
        "../scripts/structure_search.py"


rule structure_merge:
    input:
        unpack(structure_merge_inputs),
    output:
        run=paths.run("{collection}", "{topics}", "{system}"),
        facts=paths.run_facts("{collection}", "{topics}", "{system}"),
    log:
        paths.log("runs", "{collection}/{topics}/{system}.merge"),
    wildcard_constraints:
        system=structure_names(sharded=True, per_topics=True),
    localrule: True
    conda:
        CONDA_ENV
    threads: rule_threads("structure_merge")
    resources:
        **rule_resources("structure_merge"),
    params:
        code=code_version("structure_merge"),
        depth=structure_depth,
    script:
        "../scripts/structure_merge.py"
