"""Snakemake adapter: fail the workflow when any expected-score check failed."""

import logging

from hybrid_ir.evaluation.checks import assert_all_passed
from hybrid_ir.jobs.run import run_step


def main():
    passed = assert_all_passed(snakemake.input[0])
    logging.info("all %d checks passed", passed)


run_step(snakemake, main)
