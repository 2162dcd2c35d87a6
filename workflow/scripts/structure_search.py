"""Snakemake adapter: one topic set searched with Approach0 (pya0 in a worker process), on a
whole index or on one shard of it."""

import json
import logging

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.data.runs import write_run
from hybrid_ir.jobs.run import run_step
from hybrid_ir.retrieval.approach0 import search


def main():
    depth = snakemake.params.depth
    with open(snakemake.input.queries, encoding="utf-8") as handle:
        queries = [json.loads(line) for line in handle]
    run, facts = search(snakemake.input.index, queries, depth)
    lines = write_run(run, snakemake.output.run, tag=snakemake.wildcards.system, k=depth)
    facts |= {"model": "approach0 (pya0 0.3.7)", "lines": lines, "depth": depth}
    logging.info("%s", json.dumps(facts, sort_keys=True))
    with atomic_output(snakemake.output.facts) as out:
        json.dump(facts, out, indent=1, sort_keys=True)


run_step(snakemake, main)
