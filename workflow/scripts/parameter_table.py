"""Snakemake adapter: a table of the parameters chosen per language beside the paper's
(Markdown, CSV and the report's HTML page)."""

import json

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.jobs.provenance import identity
from hybrid_ir.jobs.run import run_step
from hybrid_ir.reports.html_report import write_pages
from hybrid_ir.reports.tables.notes import sweep_notes
from hybrid_ir.reports.tables.parameters import (
    load_published,
    parameter_rows,
    preprocessing_notes,
    render_markdown,
    write_csv,
)


def main():
    spec = snakemake.params.spec
    with open(snakemake.input.sweep, encoding="utf-8") as handle:
        report = json.load(handle)
    facts = None
    if "facts" in snakemake.input.keys():
        with open(snakemake.input.facts, encoding="utf-8") as handle:
            facts = json.load(handle)
    published = None
    if "published" in snakemake.input.keys():
        published = load_published(snakemake.input.published)
    rows = parameter_rows(snakemake.params.name, spec["languages"], report, facts, published)
    notes = [*spec["notes"], *sweep_notes({spec["sweep"]: report}), *preprocessing_notes(facts)]
    markdown = render_markdown(spec["title"], report, rows, notes, identity(snakemake).footer())
    with atomic_output(snakemake.output.markdown) as out:
        out.write(markdown)
    write_pages(markdown, snakemake.output.html, snakemake.output.notes)
    write_csv(rows, report["parameter"], snakemake.output.csv)


run_step(snakemake, main)
