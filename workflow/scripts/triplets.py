"""Snakemake adapter: fine-tuning triplets from pre-tokenized ARQMath posts, without leakage."""

import json
import logging
from dataclasses import asdict

from hybrid_ir.data.formats import atomic_output, read_records
from hybrid_ir.data.qrels import read_qrels
from hybrid_ir.jobs.run import run_step
from hybrid_ir.neural.triplets import TripletRules, build_triplets


def main():
    settings = snakemake.params.settings
    excluded = {
        doc
        for path in snakemake.input.qrels
        for judged in read_qrels(path).values()
        for doc in judged
    }
    judged = len(excluded)
    excluded |= {topic["id"] for path in snakemake.input.topics for topic in read_records(path)}
    sources = [
        (name, read_records(path))
        for name, path in zip(snakemake.params.collections, snakemake.input.corpora, strict=True)
    ]
    triplets, counts = build_triplets(
        sources,
        excluded,
        seed=settings["seed"],
        rules=TripletRules.from_settings(settings),
        query_fields=settings["query_fields"],
        passage_fields=settings["passage_fields"],
    )
    with atomic_output(snakemake.output.triplets) as out:
        out.writelines(json.dumps(t, ensure_ascii=False) + "\n" for t in triplets)
    report = asdict(counts) | {"judged_posts_excluded": judged, "excluded_ids": len(excluded)}
    logging.info("%s", report)
    with atomic_output(snakemake.output.counts) as out:
        json.dump(report, out, indent=1, sort_keys=True)


run_step(snakemake, main)
