"""Snakemake adapter: an Approach0 index of a collection's canonical corpus, or of one shard of
it (``params.shard`` of ``params.shards``).

The index (many small files) is built in a temporary directory, in ``structure_scratch`` where
that has room for it, else in the job's tmpdir (Snakemake's ``tmpdir`` resource), and moved
into ``results/`` when complete (:func:`hybrid_ir.retrieval.approach0.build_index`).
"""

import json
import logging
import signal

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.jobs.run import run_step
from hybrid_ir.retrieval.approach0 import index_corpus, index_scratch
from hybrid_ir.retrieval.structure import DocumentTemplate, Terms


def _terminated(signum, _frame):
    raise SystemExit(128 + signum)


def main():
    # Snakemake stops a job it gives up on (and SLURM one past its time) with SIGTERM: leave
    # through build_index's clean-up, which removes the half-built index from RAM or the tmpdir.
    signal.signal(signal.SIGTERM, _terminated)
    entry = snakemake.params.entry
    corpus = snakemake.input.corpus
    tmpdir = getattr(snakemake.resources, "tmpdir", None)
    scratch = index_scratch(snakemake.config["structure_scratch"], corpus, tmpdir)
    stats = index_corpus(
        corpus,
        DocumentTemplate(entry["document"], tuple(entry["formula_fields"])),
        Terms(entry["stemmer"]),
        snakemake.output.index,
        entry["max_unparsed_rate"],
        scratch=scratch,
        shard=snakemake.params.shard,
        shards=snakemake.params.shards,
    )
    logging.info("index statistics: %s", json.dumps(stats, sort_keys=True))
    with atomic_output(snakemake.output.stats) as out:
        json.dump(stats, out, indent=1, sort_keys=True)


run_step(snakemake, main)
