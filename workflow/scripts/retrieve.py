"""Snakemake adapter: one configured retriever's run on one topic set."""

import json
import logging

from hybrid_ir.formats import atomic_output
from hybrid_ir.logged import run_step
from hybrid_ir.retrieval import Request, retrieve
from hybrid_ir.runs import write_run


def main():
    spec = snakemake.params.retriever
    inputs = snakemake.input
    request = Request(
        corpus=inputs.corpus,
        topics=inputs.topics,
        params=spec["params"],
        doc_fields=spec["doc_fields"],
        query_fields=spec["query_fields"],
        analyzer=spec.get("analyzer"),
        depth=spec["depth"],
        base=inputs.get("base"),
        tune=spec.get("tune"),
        tune_topics=inputs.get("tune_topics"),
        tune_qrels=inputs.get("tune_qrels"),
    )
    run, facts = retrieve(spec["model"], request)
    lines = write_run(run, snakemake.output.run, tag=snakemake.wildcards.system, k=request.depth)
    facts |= {"model": spec["model"], "topics": len(run), "lines": lines}
    logging.info("%s", facts)
    with atomic_output(snakemake.output.facts) as out:
        json.dump(facts, out, indent=1, sort_keys=True)


run_step(snakemake, main)
