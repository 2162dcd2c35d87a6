"""Snakemake adapter: statistics of configured collections (paper 004 Fig. 3) as a table
figure (PNG, SVG), TSV and Markdown."""

import logging
from pathlib import Path

from hybrid_ir.collection_stats import (
    HEADER,
    collection_stats_of_files,
    table_rows,
    write_stats_markdown,
    write_stats_tsv,
)
from hybrid_ir.evaluate import load_qrels
from hybrid_ir.figures import table_figure
from hybrid_ir.logged import run_step

LOGGER = logging.getLogger("collection_stats")


def main():
    spec = snakemake.params.spec
    stats = []
    for index, (name, dataset) in enumerate(spec["datasets"].items()):
        LOGGER.info("%s: reading %s", name, snakemake.input.corpora[index])
        stats.append(
            collection_stats_of_files(
                name,
                snakemake.input.corpora[index],
                snakemake.input.topics[index],
                load_qrels(snakemake.input.qrels[index]),
                dataset["sections"],
                dataset["query_fields"],
                dataset["min_relevance"],
            )
        )
    table_figure(HEADER, table_rows(stats), Path(snakemake.output.png).with_suffix(""),
                 spec["title"])  # fmt: skip
    write_stats_tsv(stats, snakemake.output.tsv)
    write_stats_markdown(stats, snakemake.output.markdown, spec["title"], spec["notes"])


run_step(snakemake, main)
