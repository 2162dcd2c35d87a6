"""Snakemake adapter: convert one raw collection into the canonical formats."""

import logging

from hybrid_ir.data.collections import convert
from hybrid_ir.jobs.run import run_step


def main():
    counts = convert(
        snakemake.params.reader,
        dict(snakemake.input.items()),
        dict(snakemake.output.items()),
        label=f"collections.{snakemake.params.collection}",
        options=snakemake.params.options,
    )
    for name, count in counts.items():
        logging.info("%s: %d records", name, count)


run_step(snakemake, main)
