"""Snakemake adapter: an Approach0 index of a collection's canonical corpus.

The index (many small files) is built in a temporary directory, in ``structure_scratch`` where
that has room for it, else in the job's tmpdir (Snakemake's ``tmpdir`` resource), and moved
into ``results/`` when complete (:func:`hybrid_ir.approach0.build_index`).
"""

import json
import logging

from hybrid_ir.approach0 import index_corpus, index_scratch
from hybrid_ir.formats import atomic_output
from hybrid_ir.logged import run_step
from hybrid_ir.structure import DocumentTemplate, Terms


def main():
    entry = snakemake.params.entry
    corpus = snakemake.input.corpus
    tmpdir = getattr(snakemake.resources, "tmpdir", None)
    scratch = index_scratch(snakemake.config.get("structure_scratch"), corpus, tmpdir)
    stats = index_corpus(
        corpus,
        DocumentTemplate(entry["document"], tuple(entry["formula_fields"])),
        Terms(entry["stemmer"]),
        snakemake.output.index,
        entry["max_unparsed_rate"],
        scratch=scratch,
    )
    logging.info("index statistics: %s", json.dumps(stats, sort_keys=True))
    with atomic_output(snakemake.output.stats) as out:
        json.dump(stats, out, indent=1, sort_keys=True)


run_step(snakemake, main)
