"""Snakemake adapter: one configured retriever's run on one topic set."""

import json
import logging

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.data.runs import write_run
from hybrid_ir.jobs.run import run_step
from hybrid_ir.retrieval.retrievers import request_from, retrieve


def main():
    spec = snakemake.params.retriever
    request = request_from(spec, dict(snakemake.input.items()), snakemake.threads)
    run, facts = retrieve(spec["model"], request)
    lines = write_run(run, snakemake.output.run, tag=snakemake.wildcards.system, k=request.depth)
    facts |= {"model": spec["model"], "topics": len(run), "lines": lines}
    logging.info("%s", facts)
    with atomic_output(snakemake.output.facts) as out:
        json.dump(facts, out, indent=1, sort_keys=True)


run_step(snakemake, main)
