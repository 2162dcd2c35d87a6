"""Snakemake adapter: BM25 top-k run for one topic set."""

import logging

from hybrid_ir.logged import run_step
from hybrid_ir.search import bm25_search


def main():
    params = snakemake.params  # noqa: F821
    lines = bm25_search(
        snakemake.input.index,  # noqa: F821
        snakemake.input.topics,  # noqa: F821
        snakemake.output.run,  # noqa: F821
        layout=params.layout,
        k1=params.k1,
        b=params.b,
        hits=params.hits,
        remove_query=params.remove_query,
        query_fields=params.query_fields,
        tag=params.tag,
        threads=snakemake.threads,  # noqa: F821
    )
    logging.info("wrote %d run lines", lines)


run_step(snakemake.log[0], main)  # noqa: F821
