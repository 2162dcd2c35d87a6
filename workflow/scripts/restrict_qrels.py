"""Snakemake adapter: the pool-restricted view of a qrels set (the judgments of documents the
corpus holds)."""

import logging

from hybrid_ir.logged import run_step
from hybrid_ir.views import write_restricted_qrels


def main():
    counts = write_restricted_qrels(
        snakemake.input.qrels, snakemake.input.corpus, snakemake.output[0]
    )
    logging.getLogger("hybrid_ir").info(
        "kept %(kept)d of %(judgments)d judgments and %(topics_kept)d of %(topics)d topics",
        counts,
    )


run_step(snakemake, main)
