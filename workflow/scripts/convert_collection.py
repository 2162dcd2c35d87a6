"""Snakemake adapter: convert one raw collection into the canonical formats."""

import logging

from hybrid_ir.collections import convert
from hybrid_ir.logged import run_step


def main():
    counts = convert(
        snakemake.params.reader,  # noqa: F821
        dict(snakemake.input.items()),  # noqa: F821
        dict(snakemake.output.items()),  # noqa: F821
        label=f"collections.{snakemake.params.collection}",  # noqa: F821
    )
    for name, count in counts.items():
        logging.info("%s: %d records", name, count)


run_step(snakemake.log[0], main)  # noqa: F821
