"""Snakemake adapter: a configured figure (PNG and SVG; a rank_scatter also writes its TSV)."""

import json
from pathlib import Path

from hybrid_ir.evaluate import load_qrels
from hybrid_ir.figures import draw, read_topic_labels
from hybrid_ir.logged import run_step
from hybrid_ir.runs import read_run


def main():
    spec = snakemake.params.spec
    runs = {label: read_run(snakemake.input[label]) for label in spec["runs"]}
    report = labels = fused = None
    fused_name = "the fused run"
    if spec["kind"] == "sweep":
        with open(snakemake.input.sweep, encoding="utf-8") as handle:
            report = json.load(handle)
    if spec["kind"] == "by_label":  # only the rows of the figure's topic set
        labels = read_topic_labels(snakemake.input.label_table, spec["topics"])
    if spec["kind"] == "rank_scatter":
        fused_name = snakemake.input.fused_run
        fused = read_run(fused_name)
    stem = Path(snakemake.output.png).with_suffix("")
    qrels = load_qrels(snakemake.input.qrels)
    draw(spec["kind"], spec, runs, qrels, report, stem, labels, fused, fused_name)


run_step(snakemake, main)
