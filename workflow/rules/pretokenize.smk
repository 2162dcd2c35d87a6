for _name in MATH.get("pretokenize", {}):

    rule:
        name:
            f"pretokenize_{_name}"
        input:
            **pretok_inputs(_name),
        output:
            **pretok_outputs(_name),
            stats=f"{paths.RESULTS}/pretok/{_name}/stats.json",
            tokens=f"{paths.RESULTS}/pretok/{_name}/math_tokens.tsv",
        log:
            f"results/logs/pretok/{_name}.log",
        benchmark:
            f"results/benchmarks/pretok/{_name}.tsv"
        conda:
            CONDA_ENV
        params:
            code=code_version("pretokenize"),
            fields=MATH["pretokenize"][_name].get("fields", []),
            formula_fields=MATH["pretokenize"][_name].get("formula_fields", []),
        script:
            "../scripts/pretokenize.py"
