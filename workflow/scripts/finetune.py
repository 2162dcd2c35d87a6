"""Snakemake adapter: fine-tune DPR or ColBERT from one backbone on the triplets."""

import json
import logging
from dataclasses import fields
from pathlib import Path

from hybrid_ir.formats import atomic_output
from hybrid_ir.logged import run_step
from hybrid_ir.models import backbone_path, set_threads, training_steps
from hybrid_ir.triplets import read_triplets


def train(encoder, source, triplets_path, output, entry, device, extensions):
    triplets = read_triplets(triplets_path)
    steps = training_steps(entry, len(triplets))
    if encoder == "dpr":
        from hybrid_ir.dpr import DPRSettings, train_dpr

        known = {f.name for f in fields(DPRSettings)}
        values = {k: v for k, v in entry.items() if k in known}
        settings = DPRSettings(**(values | {"steps": steps, "device": device}))
        return train_dpr(source, triplets, output, settings)
    from hybrid_ir.colbert import train_colbert

    return train_colbert(
        Path(backbone_path(source)),
        Path(triplets_path),
        output,
        steps=steps,
        batch_size=entry["batch_size"],
        lr=entry["lr"],
        weight_decay=entry.get("weight_decay", 0.01),
        dim=entry.get("dim", 128),
        query_maxlen=entry.get("query_maxlen", 32),
        doc_maxlen=entry.get("doc_maxlen", 180),
        seed=entry["seed"],
        extensions_dir=Path(extensions),
    )


def main():
    set_threads(snakemake.params.threads)
    facts = train(
        snakemake.wildcards.encoder,
        snakemake.params.source,
        snakemake.input.triplets,
        Path(snakemake.output.model),
        snakemake.params.settings,
        snakemake.params.device,
        snakemake.params.extensions,
    )
    summary = {k: v for k, v in facts.items() if k != "losses"}
    logging.info("%s", summary)
    with atomic_output(snakemake.output.facts) as out:
        json.dump(facts, out, indent=1, sort_keys=True)


run_step(snakemake, main)
