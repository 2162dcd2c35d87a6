"""Snakemake adapter: BM25 top-k run for one topic set."""

import logging

from hybrid_ir.jobs.run import run_step
from hybrid_ir.retrieval.bm25 import BM25Settings
from hybrid_ir.retrieval.lucene.search import bm25_search


def main():
    params = snakemake.params
    settings = BM25Settings(
        layout=params.layout,
        k1=params.k1,
        b=params.b,
        depth=params.depth,
        query_fields=tuple(params.query_fields),
        remove_query=params.remove_query,
        tag=params.tag,
        threads=snakemake.threads,
    )
    lines = bm25_search(
        snakemake.input.index, snakemake.input.topics, snakemake.output.run, settings
    )
    logging.info("wrote %d run lines", lines)


run_step(snakemake, main)
