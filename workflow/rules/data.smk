rule fetch_raw:
    output:
        "results/raw/{path}",
    log:
        "results/logs/fetch/{path}.log",
    wildcard_constraints:
        path=alternatives(MANIFEST),
    localrule: True
    conda:
        CONDA_ENV
    params:
        code=code_version("fetch_raw"),
        entry=lambda wildcards: MANIFEST[wildcards.path],
        mirror=MIRROR,
    script:
        "../scripts/fetch_raw.py"


for _name in COLLECTIONS:

    rule:
        name:
            f"convert_{_name}"
        input:
            **sources_of(_name),
        output:
            **converted_outputs(_name),
        log:
            f"results/logs/convert/{_name}.log",
        benchmark:
            f"results/benchmarks/convert/{_name}.tsv"
        conda:
            CONDA_ENV
        params:
            code=code_version("convert_collection"),
            collection=_name,
            reader=COLLECTIONS[_name]["reader"],
        script:
            "../scripts/convert_collection.py"
