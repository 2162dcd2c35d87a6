"""Snakemake adapter: a configured figure of any kind (PNG and SVG, and the files its kind
writes besides: hybrid_ir.reports.figures.kinds)."""

import json
from pathlib import Path

from hybrid_ir.data.qrels import read_qrels
from hybrid_ir.data.runs import read_run
from hybrid_ir.jobs.run import run_step
from hybrid_ir.reports.figures.data import read_topic_labels
from hybrid_ir.reports.figures.draw import Dataset, draw
from hybrid_ir.reports.figures.kinds import figure_kind


def datasets(spec, inputs):
    return [
        Dataset(name, settings, inputs.corpora[i], inputs.topics[i], inputs.qrels[i])
        for i, (name, settings) in enumerate(spec["datasets"].items())
    ]


def main():
    spec, inputs = snakemake.params.spec, snakemake.input
    reads = figure_kind(spec["kind"]).reads
    runs = {label: read_run(inputs[label]) for label in spec["runs"]}
    report = labels = fused = sweep = None
    if "sweep_report" in reads:
        with open(inputs.sweep, encoding="utf-8") as handle:
            report = json.load(handle)
    if "sweep_runs" in reads and "sweep" in spec:  # curves per swept value, fused here
        sweep = (snakemake.params.sweep, [read_run(path) for path in inputs.sweep_runs])
    if "label_table" in reads:  # only the rows of the figure's topic set
        labels = read_topic_labels(inputs.label_table, spec["topics"])
    fused_name = inputs.fused_run if "fused_run" in reads else "the fused run"
    if "fused_run" in reads:
        fused = read_run(fused_name)
    rows = datasets(spec, inputs) if "datasets" in reads else ()
    qrels = read_qrels(inputs.qrels) if figure_kind(spec["kind"]).runs else None
    stem = Path(snakemake.output.png).with_suffix("")
    draw(spec["kind"], spec, runs, qrels, report, stem, labels, fused, fused_name, sweep, rows)


run_step(snakemake, main)
