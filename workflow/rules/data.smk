rule fetch_raw:
    output:
        paths.raw("{path}"),
    log:
        paths.log("fetch", "{path}"),
    # No rule but this one writes under results/raw/, and raw_file_entry refuses a path the
    # manifest lacks when the DAG is built: an alternation of every manifest path (13 KB of
    # regex, compiled for the output and the log at each start) would only repeat that.
    localrule: True
    conda:
        CONDA_ENV
    threads: rule_threads("fetch_raw")
    resources:
        **rule_resources("fetch_raw"),
    params:
        code=code_version("fetch_raw"),
        entry=raw_file_entry,
    script:
        "../scripts/fetch_raw.py"


rule restrict_qrels:
    input:
        unpack(restricted_qrels_inputs),
    output:
        paths.qrels("{collection}", "{restricted}"),
    log:
        paths.log("qrels", "{collection}/{restricted}"),
    wildcard_constraints:
        restricted=alternatives(
            {name for c in COLLECTIONS.values() for name in c["restricted_qrels"]}
        ),
    conda:
        CONDA_ENV
    threads: rule_threads("restrict_qrels")
    resources:
        **rule_resources("restrict_qrels"),
    params:
        code=code_version("restrict_qrels"),
    script:
        "../scripts/restrict_qrels.py"


rule language_qrels:
    input:
        unpack(language_qrels_inputs),
    output:
        paths.qrels("{collection}", "{view}"),
    log:
        paths.log("qrels", "{collection}/{view}"),
    wildcard_constraints:
        view=alternatives(
            {name for c in COLLECTIONS.values() for name in c["language_qrels"]}
        ),
    conda:
        CONDA_ENV
    threads: rule_threads("language_qrels")
    resources:
        **rule_resources("language_qrels"),
    params:
        code=code_version("language_qrels"),
        language=qrels_language,
    script:
        "../scripts/language_qrels.py"


rule fetch_hub_model:
    output:
        directory(hub_cache_dir("{hub_model}", "{revision}")),
    log:
        paths.log("hub", "{hub_model}/{revision}"),
    wildcard_constraints:
        hub_model=alternatives(HUB_MODELS),
        revision="[0-9a-f]{40}",
    localrule: True
    conda:
        CONDA_ENV
    threads: rule_threads("fetch_hub_model")
    resources:
        **rule_resources("fetch_hub_model"),
    params:
        code=code_version("fetch_hub_model"),
    script:
        "../scripts/fetch_hub_model.py"


for _name in COLLECTIONS:

    rule:
        name:
            f"convert_{_name}"
        input:
            **sources_of(_name),
        output:
            **converted_outputs(_name),
        log:
            paths.log("convert", _name),
        benchmark:
            paths.benchmark("convert", _name)
        conda:
            CONDA_ENV
        threads: rule_threads(f"convert_{_name}")
        resources:
            **rule_resources(f"convert_{_name}"),
        params:
            code=code_version("convert_collection"),
            collection=_name,
            reader=COLLECTIONS[_name]["reader"],
            options=reader_options(COLLECTIONS[_name]["reader"], COLLECTIONS[_name]),
        script:
            "../scripts/convert_collection.py"
