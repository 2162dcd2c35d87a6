"""Snakemake adapter: index the pre-tokenized corpus with a DPR or ColBERT model, fine-tuned here
or released (a hub id or a local checkpoint)."""

import json
import logging
from pathlib import Path

from hybrid_ir.formats import atomic_output, read_records
from hybrid_ir.logged import run_step
from hybrid_ir.neural.dense import topic_texts
from hybrid_ir.neural.encoders import Job, encoder
from hybrid_ir.neural.models import set_threads


def main():
    set_threads(snakemake.threads)
    settings = snakemake.params.settings
    documents = topic_texts(
        read_records(snakemake.input.corpus), snakemake.params.doc_fields, separator="\n"
    )
    logging.info("%s model %s", snakemake.params.encoder, snakemake.params.model)
    job = Job(extensions_dir=Path(snakemake.params.extensions))
    facts = encoder(snakemake.params.encoder).index(
        Path(snakemake.params.model), documents, Path(snakemake.output.index), settings, job
    )
    logging.info("%s", facts)
    with atomic_output(snakemake.output.stats) as out:
        json.dump(facts, out, indent=1, sort_keys=True)


run_step(snakemake, main)
