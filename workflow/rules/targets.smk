# Targets one can name (hybrid_ir.planning.targets; `hybrid-ir targets` lists them): one rule per paper
# (paper000 ...) asking for its tables, figures and claims page, and one per table, figure and
# claims page (paper000_table1 ...), from the output kinds' registry. Included last, so that
# none takes the name of another rule.
for _name, _files in target_rules(taken=[rule.name for rule in workflow.rules]).items():

    rule:
        name:
            _name
        input:
            _files,


# A file under results/tables, results/figures or results/claims that the configuration does
# not build (a misspelled target) fails before any job runs, naming the nearest files it does
# build; the constraint leaves every file another rule makes to that rule.
rule unknown_result:
    input:
        unknown_result,
    output:
        f"{paths.RESULTS}/{{unknown_result}}",
    wildcard_constraints:
        unknown_result=unknown_results(),


# A target named like a paper's rule that is none (paper000_table3): Snakemake would look for a
# file of that name; this fails naming the nearest target rules.
rule unknown_target:
    input:
        unknown_target,
    output:
        "{unknown_target}",
    wildcard_constraints:
        unknown_target=unknown_targets(),
