"""Snakemake adapter: an Approach0 index of a collection's canonical corpus."""

import json
import logging

from hybrid_ir.approach0 import index_corpus
from hybrid_ir.formats import atomic_output
from hybrid_ir.logged import run_step
from hybrid_ir.structure import DocumentTemplate, Terms


def main():
    entry = snakemake.params.entry
    stats = index_corpus(
        snakemake.input.corpus,
        DocumentTemplate(entry["document"], tuple(entry["formula_fields"])),
        Terms(entry["stemmer"]),
        snakemake.output.index,
        entry["max_unparsed_rate"],
    )
    logging.info("index statistics: %s", json.dumps(stats, sort_keys=True))
    with atomic_output(snakemake.output.stats) as out:
        json.dump(stats, out, indent=1, sort_keys=True)


run_step(snakemake, main)
