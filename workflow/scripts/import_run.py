"""Snakemake adapter: import an external run file as a canonical TREC run."""

import logging

from hybrid_ir.data.runs import read_run, write_run
from hybrid_ir.jobs.run import run_step


def main():
    run = read_run(
        snakemake.input[0],
        run_format=snakemake.params.run_format,
        duplicates=snakemake.params.duplicates,
    )
    lines = write_run(
        run, snakemake.output.run, tag=snakemake.wildcards.system, k=snakemake.params.depth
    )
    logging.info("%d topics, %d lines (top %d per topic)", len(run), lines, snakemake.params.depth)


run_step(snakemake, main)
