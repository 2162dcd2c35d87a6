"""Snakemake adapter: fetch one raw file from the mirror or its pinned URL, verified."""

import logging

from hybrid_ir.fetch import ManifestEntry, fetch, mirror_root
from hybrid_ir.logged import run_step


def main():
    entry = ManifestEntry(**snakemake.params.entry)
    # Read here, not a recorded parameter: where the mirror lies cannot change a verified file,
    # and a moved mirror (or CI's absolute HYBRID_IR_MIRROR) must not re-run the workflow.
    source = fetch(entry, mirror_root(snakemake.config["mirror"]), snakemake.output[0])
    logging.info("fetched %s from %s (sha256 %s verified)", entry.path, source, entry.sha256)


run_step(snakemake, main, raw={snakemake.params.entry["path"]: snakemake.params.entry["sha256"]})
