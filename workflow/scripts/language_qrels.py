"""Snakemake adapter: one language's view of a qrels set (the judgments of its queries)."""

import logging

from hybrid_ir.evaluation.views import write_language_qrels
from hybrid_ir.jobs.run import run_step


def main():
    counts = write_language_qrels(
        snakemake.input.qrels,
        snakemake.input.topics,
        snakemake.params.language,
        snakemake.output[0],
    )
    logging.getLogger("hybrid_ir").info(
        "%s: kept %d of %d topics",
        snakemake.params.language,
        counts["topics_kept"],
        counts["topics"],
    )


run_step(snakemake, main)
