"""Snakemake adapter: evaluate one run against one qrels set (aggregate and per query)."""

import json
import logging

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.evaluation.measures import evaluate_files
from hybrid_ir.jobs.run import run_step


def main():
    aggregate, per_query = evaluate_files(
        snakemake.input.qrels,
        snakemake.input.run,
        snakemake.params.measures,
    )
    logging.info("%s", aggregate)
    with atomic_output(snakemake.output[0]) as out:
        json.dump({"aggregate": aggregate, "per_query": per_query}, out, indent=1, sort_keys=True)


run_step(snakemake, main)
