"""Snakemake adapter: fetch one pinned hub model into the workflow's model cache (a local rule,
the only job allowed to reach the hub); its files' sha256 go into the provenance."""

import logging

from hybrid_ir.data.hub import fetch_model
from hybrid_ir.jobs.run import run_step

files: dict[str, str] = {}


def main():
    model, revision = snakemake.wildcards.hub_model, snakemake.wildcards.revision
    hashes = fetch_model(model, revision, snakemake.output[0])
    files.update({f"hub:{model}@{revision}/{name}": sha256 for name, sha256 in hashes.items()})
    logging.info("fetched %s at %s: %d files", model, revision, len(hashes))


run_step(snakemake, main, raw=files, hub_access=True)
