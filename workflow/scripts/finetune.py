"""Snakemake adapter: fine-tune DPR or ColBERT from one backbone on the triplets."""

import json
import logging
from pathlib import Path

from hybrid_ir.data.formats import atomic_output
from hybrid_ir.jobs.run import run_step
from hybrid_ir.neural.devices import claim_gpus, resolve_device, set_threads
from hybrid_ir.neural.distributed import process_count
from hybrid_ir.neural.encoders import Job, encoder


def main():
    claim_gpus(snakemake.resources.gpu)
    set_threads(snakemake.threads)
    device = resolve_device(snakemake.params.device, tf32=snakemake.params.tf32)
    gpus = getattr(snakemake.resources, "gpu", 0)
    job = Job(
        device,
        Path(snakemake.params.extensions),
        precision=snakemake.params.precision,
        processes=process_count(device, gpus, snakemake.params.cpu_processes),
        threads=snakemake.threads,
    )
    facts = encoder(snakemake.wildcards.encoder).train(
        snakemake.params.source,
        Path(snakemake.input.triplets),
        Path(snakemake.output.model),
        snakemake.params.settings
        | {"snapshot_dirs": snakemake.params.snapshots, "workdir": snakemake.params.workdir},
        job,
    )
    summary = {k: v for k, v in facts.items() if k != "losses"}
    logging.info("%s", summary)
    with atomic_output(snakemake.output.facts) as out:
        json.dump(facts, out, indent=1, sort_keys=True)


run_step(snakemake, main)
