"""Snakemake adapter: a table's per-topic explorer page (results/tables/<table>.explore.html)."""

from hybrid_ir.explore import table_explorer
from hybrid_ir.explore_data import ExplorerSettings
from hybrid_ir.formats import atomic_output
from hybrid_ir.logged import run_step
from hybrid_ir.provenance import identity


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
