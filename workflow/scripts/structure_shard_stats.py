"""Snakemake adapter: the statistics of a sharded Approach0 index, as one index's."""

import json
import logging

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.jobs.run import run_step
from hybrid_ir.retrieval.approach0 import merge_shard_stats


def main():
    parts = []
    for path in snakemake.input.stats:
        with open(path, encoding="utf-8") as handle:
            parts.append(json.load(handle))
    stats = merge_shard_stats(parts)
    logging.info("index statistics: %s", json.dumps(stats, sort_keys=True))
    with atomic_output(snakemake.output.stats) as out:
        json.dump(stats, out, indent=1, sort_keys=True)


run_step(snakemake, main)
