"""Snakemake adapter: a fusion parameter sweep, its report and the run at the selected value."""

import json
import logging

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.data.qrels import read_qrels
from hybrid_ir.data.runs import read_run, write_run
from hybrid_ir.evaluation.views import topic_languages
from hybrid_ir.fusion.sweeps import sweep
from hybrid_ir.jobs.run import run_step


def main():
    entry = snakemake.params.entry
    inputs = snakemake.input
    select_on = None
    if "select_on" in entry:
        select_on = (
            [read_run(path) for path in inputs.select_runs],
            read_qrels(inputs.select_qrels),
        )
    by_language = None
    if entry["by_language"]:
        evaluated = topic_languages(inputs.topics)
        selection = topic_languages(inputs.select_topics) if select_on else evaluated
        by_language = (evaluated, selection)
    report, best = sweep(
        entry["method"],
        [read_run(path) for path in inputs.runs],
        entry["parameter"],
        entry["values"],
        read_qrels(inputs.qrels),
        entry["measures"],
        entry["select"],
        params=entry["params"],
        select_on=select_on,
        by_language=by_language,
    )
    logging.info("best %s = %s (%s)", entry["parameter"], report["best"], report["selected_on"])
    with atomic_output(snakemake.output.report) as out:
        json.dump(report, out, indent=1, sort_keys=True)
    write_run(best, snakemake.output.run, tag=snakemake.wildcards.sweep, k=snakemake.params.depth)


run_step(snakemake, main)
