"""Snakemake adapter: an Approach0 index of a collection's canonical corpus."""

import json
import logging

from hybrid_ir.approach0 import build_index
from hybrid_ir.formats import atomic_output, read_records
from hybrid_ir.logged import run_step
from hybrid_ir.structure import DocumentTemplate, Terms


def main():
    entry = snakemake.params.entry
    corpus = snakemake.input.corpus
    records = list(read_records(corpus))
    template = DocumentTemplate(entry["document"], tuple(entry["formula_fields"]))
    terms = Terms(entry["stemmer"])
    documents = ((str(r["id"]), template.render(r, terms, corpus)) for r in records)
    stats = build_index(
        documents,
        snakemake.output.index,
        entry["max_unparsed_rate"],
        where=corpus,
        total=len(records),
    )
    logging.info("index statistics: %s", json.dumps(stats, sort_keys=True))
    with atomic_output(snakemake.output.stats) as out:
        json.dump(stats, out, indent=1, sort_keys=True)


run_step(snakemake, main)
