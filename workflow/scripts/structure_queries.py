"""Snakemake adapter: the Approach0 keyword queries of one topic set, written for reading."""

import json
import logging
from collections import Counter

from hybrid_ir.data.formats import atomic_output, read_records
from hybrid_ir.jobs.run import run_step
from hybrid_ir.retrieval.structure import QueryRule, Terms, read_keyword_file, topic_queries


def main():
    entry = snakemake.params.entry
    terms = Terms(entry["stemmer"])
    keyword_file = None
    if "keywords" in snakemake.input.keys():
        keyword_file = read_keyword_file(snakemake.input.keywords, terms, entry["boost"])
    rule = QueryRule.from_entry(entry["query"])
    topics = snakemake.input.topics
    queries = topic_queries(
        read_records(topics), keyword_file, rule, terms, entry["boost"], where=topics
    )
    with atomic_output(snakemake.output.queries) as out:
        for query in queries:
            out.write(json.dumps(query, ensure_ascii=False) + "\n")
    origins = Counter(query["origin"] for query in queries)
    kinds = Counter(kw["type"] for query in queries for kw in query["keywords"])
    logging.info("%d queries (%s); keywords: %s", len(queries), dict(origins), dict(kinds))


run_step(snakemake, main)
