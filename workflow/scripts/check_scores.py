"""Snakemake adapter: compare reproduced scores with their expected bands (summary table)."""

import logging

from hybrid_ir.evaluation.checks import load_expected, run_checks, write_summary
from hybrid_ir.jobs.run import run_step


def main():
    results = run_checks(load_expected(list(snakemake.input.expected)))
    write_summary(results, snakemake.output[0])
    for result in results:
        logging.info("%s", result)


run_step(snakemake, main)
