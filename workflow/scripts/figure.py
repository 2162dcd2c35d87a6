"""Snakemake adapter: a configured figure (PNG and SVG)."""

import json
from pathlib import Path

from hybrid_ir.evaluate import load_qrels
from hybrid_ir.figures import draw
from hybrid_ir.logged import run_step
from hybrid_ir.runs import read_run


def main():
    spec = snakemake.params.spec
    runs = {label: read_run(snakemake.input[label]) for label in spec["runs"]}
    report = None
    if spec["kind"] == "sweep":
        with open(snakemake.input.sweep, encoding="utf-8") as handle:
            report = json.load(handle)
    stem = Path(snakemake.output.png).with_suffix("")
    draw(spec["kind"], spec, runs, load_qrels(snakemake.input.qrels), report, stem)


run_step(snakemake, main)
