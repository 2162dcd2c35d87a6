"""Snakemake adapter: evaluate one run against one qrels set (aggregate and per query)."""

import json
import logging

from hybrid_ir.evaluate import evaluate_files
from hybrid_ir.formats import atomic_output
from hybrid_ir.logged import run_step


def main():
    aggregate, per_query = evaluate_files(
        snakemake.input.qrels,  # noqa: F821
        snakemake.input.run,  # noqa: F821
        snakemake.params.measures,  # noqa: F821
    )
    logging.info("%s", aggregate)
    with atomic_output(snakemake.output[0]) as out:  # noqa: F821
        json.dump({"aggregate": aggregate, "per_query": per_query}, out, indent=1, sort_keys=True)


run_step(snakemake.log[0], main)  # noqa: F821
