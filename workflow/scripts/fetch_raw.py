"""Snakemake adapter: fetch one raw file from the mirror, its URL or its members, verified."""

import logging
from pathlib import Path

from hybrid_ir import paths
from hybrid_ir.data.downloads import byte_progress
from hybrid_ir.data.fetch import ManifestEntry, Network, fetch, mirror_root, raw_url_base
from hybrid_ir.data.members import find_member_list
from hybrid_ir.data.raw_check import remember_verified
from hybrid_ir.jobs.run import run_step


def main():
    entry = ManifestEntry(**snakemake.params.entry)
    config = snakemake.config
    # Read here, not recorded parameters: where the mirror lies or which host serves the
    # pinned URLs cannot change a verified file, and a moved mirror (or CI's absolute
    # HYBRID_IR_MIRROR) must not re-run the workflow.
    network = Network(raw_url=raw_url_base(config["raw_url"]))
    members = find_member_list(config["manifest"], entry.path)
    with byte_progress(entry.path, members.total_size() if members else entry.size) as progress:
        source = fetch(
            entry,
            mirror_root(config["mirror"]),
            snakemake.output[0],
            members=members,
            network=network,
            partial_dir=paths.partial_downloads(),
            progress=progress,
        )
    remember_verified(Path(snakemake.output[0]))
    logging.info("fetched %s from %s (sha256 %s verified)", entry.path, source, entry.sha256)


run_step(snakemake, main, raw={snakemake.params.entry["path"]: snakemake.params.entry["sha256"]})
