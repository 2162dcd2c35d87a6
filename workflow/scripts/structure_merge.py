"""Snakemake adapter: the searches of every shard of an Approach0 index merged into one run."""

import json
import logging

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.data.runs import read_run, write_run
from hybrid_ir.jobs.run import run_step
from hybrid_ir.retrieval.approach0 import merge_shard_searches


def main():
    depth = snakemake.params.depth
    parts = []
    for run_path, facts_path in zip(snakemake.input.runs, snakemake.input.facts, strict=True):
        with open(facts_path, encoding="utf-8") as handle:
            parts.append((read_run(run_path), json.load(handle)))
    run, facts = merge_shard_searches(parts, depth)
    lines = write_run(run, snakemake.output.run, tag=snakemake.wildcards.system, k=depth)
    facts |= {"model": "approach0 (pya0 0.3.7)", "lines": lines, "depth": depth}
    logging.info("%s", json.dumps({k: v for k, v in facts.items() if k != "shards"}))
    with atomic_output(snakemake.output.facts) as out:
        json.dump(facts, out, indent=1, sort_keys=True)


run_step(snakemake, main)
