"""Snakemake adapter: paper 000's re-ranking of a base run's candidates by a DPR or ColBERT model
(fine-tuned here or released), scored as that model's search scores them, from the vectors its
index of the collection holds."""

import logging
from pathlib import Path

from hybrid_ir.data.formats import read_records
from hybrid_ir.data.runs import read_run, write_run
from hybrid_ir.jobs.run import run_step
from hybrid_ir.neural.candidates import top_candidates
from hybrid_ir.neural.dense import topic_texts
from hybrid_ir.neural.devices import claim_gpus, resolve_device, set_threads
from hybrid_ir.neural.encoders import Job, encoder


def main():
    claim_gpus(snakemake.resources.gpu)
    set_threads(snakemake.threads)
    spec, settings = snakemake.params.reranker, snakemake.params.settings
    queries = topic_texts(
        read_records(snakemake.input.topics), snakemake.params.query_fields, separator="\n"
    )
    candidates = top_candidates(
        read_run(snakemake.input.base, topics=queries), queries, spec["depth"]
    )
    logging.info(
        "%s re-ranking (model %s, index %s) of %s: %d of %d topics, %d candidates (depth %d)",
        spec["encoder"],
        snakemake.params.model,
        snakemake.input.index,
        spec["base"],
        len(candidates),
        len(queries),
        sum(len(docs) for docs in candidates.values()),
        spec["depth"],
    )
    job = Job(
        device=resolve_device(snakemake.params.device, tf32=snakemake.params.tf32),
        precision=snakemake.params.precision,
        extensions_dir=Path(snakemake.params.extensions),
    )
    run = encoder(spec["encoder"]).rerank(
        Path(snakemake.params.model),
        Path(snakemake.input.index),
        candidates,
        queries,
        settings,
        job,
    )
    lines = write_run(run, snakemake.output.run, tag=snakemake.wildcards.system)
    logging.info("%d topics re-ranked, %d lines", len(run), lines)


run_step(snakemake, main)
