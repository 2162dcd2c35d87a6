"""Snakemake adapter: PyA0 pre-tokenization of a collection's corpus and topic files."""

import json
import logging
from collections import Counter

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.data.pretok import pretokenize_file, write_token_counts
from hybrid_ir.jobs.run import run_step


def main():
    report, corpus_tokens = {}, Counter()
    for key, source in snakemake.input.items():
        stats = pretokenize_file(
            source,
            snakemake.output[key],
            snakemake.params.fields,
            snakemake.params.formula_fields,
        )
        report[source] = stats.summary()
        logging.info("%s: %s", source, report[source])
        for example in stats.unparsed_examples:
            logging.warning("%s: formula kept as raw LaTeX: %r", source, example)
        if key == "corpus":
            corpus_tokens = stats.math_tokens
    with atomic_output(snakemake.output.stats) as out:
        json.dump(report, out, indent=1, sort_keys=True)
    write_token_counts(corpus_tokens, snakemake.output.tokens)


run_step(snakemake, main)
