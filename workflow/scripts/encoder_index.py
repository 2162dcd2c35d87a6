"""Snakemake adapter: index the pre-tokenized corpus with a fine-tuned DPR or ColBERT model."""

import json
import logging
from pathlib import Path

from hybrid_ir.dense import topic_texts
from hybrid_ir.formats import atomic_output, read_records
from hybrid_ir.logged import run_step
from hybrid_ir.models import set_threads


def main():
    set_threads(snakemake.params.threads)
    settings = snakemake.params.settings
    documents = topic_texts(
        read_records(snakemake.input.corpus), snakemake.params.doc_fields, separator="\n"
    )
    model, index = Path(snakemake.input.model), Path(snakemake.output.index)
    if snakemake.wildcards.encoder == "dpr":
        from hybrid_ir.dpr import index_dpr

        facts = index_dpr(
            model,
            documents,
            index,
            max_length=settings.get("passage_max_length", 512),
            batch_size=settings.get("encode_batch_size", 32),
        )
    else:
        from hybrid_ir.colbert import index_colbert

        facts = index_colbert(
            model,
            documents,
            index,
            nbits=settings.get("nbits", 2),
            doc_maxlen=settings.get("doc_maxlen", 180),
            extensions_dir=Path(snakemake.params.extensions),
            seed=settings["seed"],
        )
    logging.info("%s", facts)
    with atomic_output(snakemake.output.stats) as out:
        json.dump(facts, out, indent=1, sort_keys=True)


run_step(snakemake, main)
