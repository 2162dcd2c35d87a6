"""Snakemake adapter: a table's per-topic explorer page (results/tables/<table>.explore.html)."""

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.jobs.provenance import identity
from hybrid_ir.jobs.run import run_step
from hybrid_ir.reports.explore.data import ExplorerSettings
from hybrid_ir.reports.explore.pages import table_explorer


def main():
    params = snakemake.params
    page = table_explorer(
        params.name,
        params.spec,
        dict(snakemake.input.items()),
        ExplorerSettings(**params.settings),
        params.katex,
        identity(snakemake).footer(),
    )
    with atomic_output(snakemake.output.page) as out:
        out.write(page)


run_step(snakemake, main)
