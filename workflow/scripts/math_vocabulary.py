"""Snakemake adapter: the math tokens of the pretraining corpus that enter the vocabulary."""

import logging
from collections import Counter

from hybrid_ir.data.pretok import read_token_counts, write_token_counts
from hybrid_ir.jobs.run import run_step


def main():
    counts = Counter()
    for path in snakemake.input:
        counts.update(read_token_counts(path))
    kept = write_token_counts(counts, snakemake.output[0], snakemake.params.min_count)
    logging.info(
        "%d math token types seen, %d seen at least %d times enter the vocabulary",
        len(counts),
        kept,
        snakemake.params.min_count,
    )


run_step(snakemake, main)
