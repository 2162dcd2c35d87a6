"""Snakemake adapter: a configured figure (PNG and SVG; rank_scatter, head_to_head and
ndcg_at_k also write the numbers they draw as TSV)."""

import json
from pathlib import Path

from hybrid_ir.evaluate import load_qrels
from hybrid_ir.figures import draw, read_topic_labels
from hybrid_ir.logged import run_step
from hybrid_ir.runs import read_run


def main():
    spec = snakemake.params.spec
    runs = {label: read_run(snakemake.input[label]) for label in spec["runs"]}
    report = labels = fused = sweep = None
    fused_name = "the fused run"
    if spec["kind"] == "sweep":
        with open(snakemake.input.sweep, encoding="utf-8") as handle:
            report = json.load(handle)
    elif "sweep" in spec:  # curves per swept value, fused here from the sweep's input runs
        sweep = (snakemake.params.sweep, [read_run(path) for path in snakemake.input.sweep_runs])
    if spec["kind"] in ("by_label", "head_to_head"):  # only the rows of the figure's topic set
        labels = read_topic_labels(snakemake.input.label_table, spec["topics"])
    if spec["kind"] == "rank_scatter":
        fused_name = snakemake.input.fused_run
        fused = read_run(fused_name)
    stem = Path(snakemake.output.png).with_suffix("")
    qrels = load_qrels(snakemake.input.qrels)
    draw(spec["kind"], spec, runs, qrels, report, stem, labels, fused, fused_name, sweep)


run_step(snakemake, main)
