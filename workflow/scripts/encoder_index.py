"""Snakemake adapter: index the pre-tokenized corpus with a DPR or ColBERT model, fine-tuned here
or released (a hub id or a local checkpoint)."""

import json
import logging
from pathlib import Path

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.jobs.run import run_step
from hybrid_ir.neural.dense import corpus_texts
from hybrid_ir.neural.devices import claim_gpus, resolve_device, set_threads
from hybrid_ir.neural.encoders import Job, encoder


def main():
    claim_gpus(snakemake.resources.gpu)
    set_threads(snakemake.threads)
    settings = snakemake.params.settings
    # Streamed: the index encodes the corpus as it is read, never holding it whole.
    documents = corpus_texts(snakemake.input.corpus, snakemake.params.doc_fields, separator="\n")
    logging.info("%s model %s", snakemake.params.encoder, snakemake.params.model)
    job = Job(
        device=resolve_device(snakemake.params.device, tf32=snakemake.params.tf32),
        precision=snakemake.params.precision,
        extensions_dir=Path(snakemake.params.extensions),
    )
    facts = encoder(snakemake.params.encoder).index(
        Path(snakemake.params.model), documents, Path(snakemake.output.index), settings, job
    )
    logging.info("%s", facts)
    with atomic_output(snakemake.output.stats) as out:
        json.dump(facts, out, indent=1, sort_keys=True)


run_step(snakemake, main)
