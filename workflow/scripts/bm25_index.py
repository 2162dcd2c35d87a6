"""Snakemake adapter: build a Lucene BM25 index and record its statistics."""

import json
import logging

from hybrid_ir.formats import atomic_output
from hybrid_ir.index import build_bm25_index
from hybrid_ir.logged import run_step


def main():
    stats = build_bm25_index(
        snakemake.input.corpus,  # noqa: F821
        snakemake.output.index,  # noqa: F821
        snakemake.params.layout,  # noqa: F821
        threads=snakemake.threads,  # noqa: F821
    )
    logging.info("index statistics: %s", stats)
    with atomic_output(snakemake.output.stats) as out:  # noqa: F821
        json.dump(stats, out, indent=2, sort_keys=True)


run_step(snakemake.log[0], main)  # noqa: F821
