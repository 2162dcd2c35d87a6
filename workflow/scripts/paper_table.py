"""Snakemake adapter: a paper-style table (Markdown, LaTeX, CSV, per-topic scores, and the
report's HTML page and notes)."""

import json

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.jobs.provenance import identity
from hybrid_ir.jobs.run import run_step
from hybrid_ir.reports.html_report import write_pages
from hybrid_ir.reports.tables.notes import (
    claims_notes,
    explorer_notes,
    largest_gain_notes,
    overlap_notes,
    sweep_notes,
    verdict_notes,
)
from hybrid_ir.reports.tables.results import (
    render_latex,
    render_markdown,
    score_rows,
    table_cells,
    table_spec,
    write_per_query,
    write_table_csv,
)


def main():
    config = snakemake.params.spec
    inputs = dict(snakemake.input.items())
    spec = table_spec(snakemake.params.name, config, inputs)
    per_query, aggregate = score_rows(spec, inputs)
    cells = table_cells(spec, per_query, aggregate)
    footer = identity(snakemake).footer()
    with atomic_output(snakemake.output.markdown) as out:
        reports = {}
        for name in config["sweeps"]:
            with open(snakemake.input[f"sweep_{name}"], encoding="utf-8") as handle:
                reports[name] = json.load(handle)
        notes = verdict_notes(spec, cells) + overlap_notes(spec) + sweep_notes(reports)
        notes += largest_gain_notes(spec, per_query)
        notes += claims_notes(snakemake.params.claims)
        notes += explorer_notes(snakemake.params.explorer)
        markdown = render_markdown(spec, cells, notes, footer)
        out.write(markdown)
    write_pages(markdown, snakemake.output.html, snakemake.output.notes)
    with atomic_output(snakemake.output.latex) as out:
        out.write(render_latex(spec, cells, footer))
    write_table_csv(spec, cells, snakemake.output.csv)
    write_per_query(spec, per_query, snakemake.output.per_query)


run_step(snakemake, main)
