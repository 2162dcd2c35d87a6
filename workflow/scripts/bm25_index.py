"""Snakemake adapter: build a Lucene BM25 index and record its statistics."""

import json
import logging

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.jobs.run import run_step
from hybrid_ir.retrieval.lucene.index import build_bm25_index


def main():
    stats = build_bm25_index(
        snakemake.input.corpus,
        snakemake.output.index,
        snakemake.params.layout,
        threads=snakemake.threads,
        text_fields=snakemake.params.text_fields,
        store_raw=snakemake.params.store_raw,
    )
    logging.info("index statistics: %s", stats)
    with atomic_output(snakemake.output.stats) as out:
        json.dump(stats, out, indent=2, sort_keys=True)


run_step(snakemake, main)
