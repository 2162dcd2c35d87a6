"""Snakemake adapter: cross-validate the weight of a linear fusion, one alpha per metric."""

import json
import logging

from hybrid_ir.data.formats import atomic_output, write_table
from hybrid_ir.data.qrels import read_qrels
from hybrid_ir.data.runs import read_run
from hybrid_ir.errors import ConfigError, ParameterError
from hybrid_ir.fusion.crossval import crossvalidate_linear, fold_assignment_table, report
from hybrid_ir.jobs.run import run_step


def main():
    entry = snakemake.params.entry
    try:
        results = crossvalidate_linear(
            read_run(snakemake.input.dense),
            read_run(snakemake.input.base),
            read_qrels(snakemake.input.qrels),
            entry["measures"],
            alphas=entry["alphas"],
            k_folds=entry["folds"],
            seed=entry["seed"],
            mode=entry["mode"],
            k=snakemake.params.depth,
        )
    except ParameterError as error:
        raise ConfigError(f"config: crossval.{snakemake.wildcards.crossval}: {error}") from None
    summary = report(results)
    for column, result in summary["columns"].items():
        logging.info(
            "%s: mean test %.4f, alphas %s",
            column,
            result["mean_test_score"],
            result["frequencies"],
        )
    with atomic_output(snakemake.output.report) as out:
        json.dump(summary, out, indent=1, sort_keys=True)
    write_table(snakemake.output.folds, fold_assignment_table(summary["folds"]))


run_step(snakemake, main)
