"""Snakemake adapter: the pool-restricted view of a qrels set (the judgments of documents the
corpus holds)."""

import logging

from hybrid_ir.evaluation.views import write_restricted_qrels
from hybrid_ir.jobs.run import run_step


def main():
    counts = write_restricted_qrels(
        snakemake.input.qrels, snakemake.input.corpus, snakemake.output[0]
    )
    logging.getLogger("hybrid_ir").info(
        "kept %(kept)d of %(judgments)d judgments and %(topics_kept)d of %(topics)d topics",
        counts,
    )


run_step(snakemake, main)
