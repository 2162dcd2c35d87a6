"""Snakemake adapter: fuse configured runs with one fusion method."""

import logging

from hybrid_ir.data.runs import read_run, write_run
from hybrid_ir.fusion.methods import fuse
from hybrid_ir.jobs.run import run_step


def main():
    params = snakemake.params
    runs = [read_run(path) for path in snakemake.input]
    fused = fuse(params.method, runs, **({"k": params.depth} | params.params))
    lines = write_run(fused, snakemake.output.run, tag=snakemake.wildcards.system, k=params.depth)
    logging.info("%s of %d runs: %d topics, %d lines", params.method, len(runs), len(fused), lines)


run_step(snakemake, main)
