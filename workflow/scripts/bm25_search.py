"""Snakemake adapter: BM25 top-k run for one topic set."""

import logging

from hybrid_ir.logged import run_step
from hybrid_ir.lucene.search import bm25_search


def main():
    params = snakemake.params
    lines = bm25_search(
        snakemake.input.index,
        snakemake.input.topics,
        snakemake.output.run,
        layout=params.layout,
        k1=params.k1,
        b=params.b,
        depth=params.depth,
        remove_query=params.remove_query,
        query_fields=params.query_fields,
        tag=params.tag,
        threads=snakemake.threads,
    )
    logging.info("wrote %d run lines", lines)


run_step(snakemake, main)
