"""Snakemake adapter: paper 001's re-ranking of a first-stage run with MLM mean embeddings."""

import logging

from hybrid_ir.data.formats import read_records
from hybrid_ir.data.runs import read_run, write_run
from hybrid_ir.jobs.run import run_step
from hybrid_ir.neural.dense import topic_texts
from hybrid_ir.neural.devices import claim_gpus, resolve_device, set_threads
from hybrid_ir.neural.rerank import rerank_by_embeddings


def main():
    claim_gpus(snakemake.resources.gpu)
    set_threads(snakemake.threads)
    spec = snakemake.params.reranker
    documents = topic_texts(read_records(snakemake.input.corpus), spec["doc_fields"], "\n")
    queries = topic_texts(read_records(snakemake.input.topics), spec["query_fields"], "\n")
    logging.info(
        "backbone %s; documents: %s; queries: %s",
        snakemake.params.model,
        " + ".join(spec["doc_fields"]),
        " + ".join(spec["query_fields"]),
    )
    run = rerank_by_embeddings(
        snakemake.params.model,
        read_run(snakemake.input.base, topics=queries),
        documents,
        queries,
        depth=spec["depth"],
        max_length=spec["max_length"],
        batch_size=spec["batch_size"],
        device=resolve_device(snakemake.params.device, tf32=snakemake.params.tf32),
        precision=snakemake.params.precision,
    )
    lines = write_run(run, snakemake.output.run, tag=snakemake.wildcards.system)
    logging.info("%d topics re-ranked, %d lines", len(run), lines)


run_step(snakemake, main)
