"""Snakemake adapter: top-k search of pre-tokenized topics with a DPR or ColBERT index."""

import logging
from pathlib import Path

from hybrid_ir.data.formats import read_records
from hybrid_ir.data.runs import write_run
from hybrid_ir.jobs.run import run_step
from hybrid_ir.neural.dense import topic_texts
from hybrid_ir.neural.devices import claim_gpus, resolve_device, set_threads
from hybrid_ir.neural.encoders import Job, encoder


def main():
    claim_gpus(snakemake.resources.gpu)
    set_threads(snakemake.threads)
    settings, depth = snakemake.params.settings, snakemake.params.depth
    queries = topic_texts(
        read_records(snakemake.input.topics), snakemake.params.query_fields, separator="\n"
    )
    logging.info("%s model %s", snakemake.params.encoder, snakemake.params.model)
    job = Job(
        device=resolve_device(snakemake.params.device, tf32=snakemake.params.tf32),
        precision=snakemake.params.precision,
        extensions_dir=Path(snakemake.params.extensions),
    )
    run = encoder(snakemake.params.encoder).search(
        Path(snakemake.params.model), Path(snakemake.input.index), queries, depth, settings, job
    )
    lines = write_run(run, snakemake.output.run, tag=snakemake.wildcards.system, k=depth)
    logging.info("%d topics, %d lines", len(run), lines)


run_step(snakemake, main)
