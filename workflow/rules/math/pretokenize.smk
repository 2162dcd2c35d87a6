for _name in MATH["pretokenize"]:

    rule:
        name:
            f"pretokenize_{_name}"
        input:
            **pretok_inputs(_name),
        output:
            **pretok_outputs(_name),
            stats=paths.pretok_facts(_name, "stats.json"),
            tokens=paths.pretok_facts(_name, "math_tokens.tsv"),
        log:
            paths.log("pretok", _name),
        benchmark:
            paths.benchmark("pretok", _name)
        priority: CRITICAL_PATH
        conda:
            MATH_CONDA_ENV
        threads: rule_threads(f"pretokenize_{_name}")
        resources:
            **rule_resources(f"pretokenize_{_name}"),
        params:
            code=code_version("pretokenize"),
            fields=MATH["pretokenize"][_name]["fields"],
            formula_fields=MATH["pretokenize"][_name]["formula_fields"],
        script:
            "../../scripts/pretokenize.py"
