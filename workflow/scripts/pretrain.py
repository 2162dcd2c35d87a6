"""Snakemake adapter: MLM (+NSP) further pretraining of one backbone, with its loss curves."""

import json
import logging
from pathlib import Path

from hybrid_ir.figures import loss_curves
from hybrid_ir.logged import run_step
from hybrid_ir.neural.models import read_vocabulary, set_threads
from hybrid_ir.neural.pretrain import mlm_documents, pretrain, settings_from_config, write_losses


def main():
    set_threads(snakemake.threads)
    documents = mlm_documents(
        list(zip(snakemake.input.corpora, snakemake.params.fields, strict=True))
    )
    settings = settings_from_config(snakemake.params.settings, device=snakemake.params.device)
    facts = pretrain(
        snakemake.params.model,
        documents,
        read_vocabulary(snakemake.input.vocabulary),
        Path(snakemake.output.model),
        Path(snakemake.params.workdir),
        settings,
    )
    history = facts.pop("history")
    logging.info("%s", json.dumps(facts, indent=1))
    write_losses(history, Path(snakemake.output.losses))
    stem = Path(snakemake.output.figure_png).with_suffix("")
    loss_curves(history, stem, f"MLM further pretraining: {snakemake.wildcards.backbone}")


run_step(snakemake, main)
