"""Snakemake adapter: the BM25 table, reproduced numbers beside the expected ones."""

from hybrid_ir.evaluation.checks import load_expected
from hybrid_ir.jobs.provenance import identity
from hybrid_ir.jobs.run import run_step
from hybrid_ir.reports.html_report import write_pages
from hybrid_ir.reports.tables.bm25 import bm25_averaging_notes, bm25_rows, write_csv, write_markdown


def main():
    params = snakemake.params
    rows = bm25_rows(params.experiments, load_expected(list(snakemake.input.expected)))
    write_csv(rows, snakemake.output.csv)
    notes = [
        f"Lucene BM25 (pyserini 1.6.0, Anserini), k1={params.k1}, b={params.b}; "
        f"top {params.depth} hits.",
        *bm25_averaging_notes(params.experiments),
        "Expected values come from the files under expected/ (published or pinned; see each "
        "file's header); `–` means no expected value.",
    ]
    markdown = snakemake.output.markdown
    write_markdown(rows, markdown, "BM25 baselines", notes, identity(snakemake).footer())
    with open(markdown, encoding="utf-8") as handle:
        write_pages(handle.read(), snakemake.output.html, snakemake.output.notes)


run_step(snakemake, main)
