"""Snakemake adapter: MLM (+NSP) further pretraining of one backbone, with its loss curves."""

import json
import logging
from pathlib import Path

from hybrid_ir.jobs.run import run_step
from hybrid_ir.neural.devices import claim_gpus, resolve_device, set_threads
from hybrid_ir.neural.distributed import process_count
from hybrid_ir.neural.pretrain import pretrain_job, write_losses
from hybrid_ir.reports.figures.loss import loss_curves


def main():
    claim_gpus(snakemake.resources.gpu)
    set_threads(snakemake.threads)
    device = resolve_device(snakemake.params.device, tf32=snakemake.params.tf32)
    gpus = getattr(snakemake.resources, "gpu", 0)
    arguments = {
        "backbone": snakemake.params.model,
        "corpora": list(zip(snakemake.input.corpora, snakemake.params.fields, strict=True)),
        "vocabulary": snakemake.input.vocabulary,
        "output": snakemake.output.model,
        "workdir": snakemake.params.workdir,
        "settings": snakemake.params.settings,
        "precision": snakemake.params.precision,
    }
    processes = process_count(device, gpus, snakemake.params.cpu_processes)
    facts = pretrain_job(arguments, device, processes, snakemake.threads)
    history = facts.pop("history")
    logging.info("%s", json.dumps(facts, indent=1))
    write_losses(history, Path(snakemake.output.losses))
    stem = Path(snakemake.output.figure_png).with_suffix("")
    loss_curves(history, stem, f"MLM further pretraining: {snakemake.wildcards.backbone}")


run_step(snakemake, main)
