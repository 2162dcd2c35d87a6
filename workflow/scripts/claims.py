"""Snakemake adapter: a paper's claims judged on the per-topic scores of the tables they
compare (JSON, Markdown and the report's page)."""

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.jobs.run import run_step
from hybrid_ir.reports.claims.comparability import with_relevant_shares
from hybrid_ir.reports.claims.verdicts import judge_files, write_verdicts
from hybrid_ir.reports.html_report import table_page


def main():
    inputs = dict(snakemake.input.items())
    tables = {
        key.removeprefix("csv_"): (inputs[f"per_query_{key.removeprefix('csv_')}"], path)
        for key, path in inputs.items()
        if key.startswith("csv_")
    }
    runs = {}
    for key, path in inputs.items():
        role, _, reproduction = key.partition("_")
        if role in ("original", "reproduced"):
            runs.setdefault(reproduction, {})[role] = path
    setups = with_relevant_shares(snakemake.params.setups, inputs)
    verdicts, reproductions = judge_files(inputs["claims"], tables, runs, setups)
    write_verdicts(
        inputs["claims"],
        verdicts,
        snakemake.output.json,
        snakemake.output.markdown,
        reproductions,
    )
    with open(snakemake.output.markdown, encoding="utf-8") as handle:
        page = table_page(handle.read())
    with atomic_output(snakemake.output.html) as out:
        out.write(page)


run_step(snakemake, main)
