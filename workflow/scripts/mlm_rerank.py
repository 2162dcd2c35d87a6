"""Snakemake adapter: paper 001's re-ranking of a first-stage run with MLM mean embeddings."""

import logging

from hybrid_ir.formats import read_records
from hybrid_ir.logged import run_step
from hybrid_ir.neural.dense import topic_texts
from hybrid_ir.neural.models import set_threads
from hybrid_ir.neural.rerank import rerank_by_embeddings
from hybrid_ir.runs import read_run, write_run


def main():
    set_threads(snakemake.threads)
    spec = snakemake.params.reranker
    documents = topic_texts(
        read_records(snakemake.input.corpus), snakemake.params.doc_fields, separator="\n"
    )
    queries = topic_texts(
        read_records(snakemake.input.topics), snakemake.params.query_fields, separator="\n"
    )
    run = rerank_by_embeddings(
        snakemake.input.model,
        read_run(snakemake.input.base),
        documents,
        queries,
        depth=spec["depth"],
        max_length=spec["max_length"],
        batch_size=spec["batch_size"],
    )
    lines = write_run(run, snakemake.output.run, tag=snakemake.wildcards.system)
    logging.info("%d topics re-ranked, %d lines", len(run), lines)


run_step(snakemake, main)
