"""This workflow used from another one: as a Snakemake module of a user's own Snakefile, and
deployed with snakedeploy (docs/guides/use-as-a-module.md).

The user's folder is apart from the repository: their own Snakefile imports this workflow as a
module with their configuration (the toy collection of tests/toy_workflow.py, plus a run file
of their own listed in their manifest and imported as an external run), renames its rules
``hir_*``, and adds a rule of its own that reads a table the module makes. Their paths (mirror,
manifest, expected scores) are relative to their folder; the workflow's schema, scripts, report
captions and package come from the repository (the Snakefile's ``HYBRID_IR_ROOT``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from toy_workflow import (
    DATASET,
    EXTERNAL_RUN,
    OTHER_RUN,
    REPO,
    SNAKEMAKE,
    beir_zip,
    make_toy,
    snakemake_environment,
    write_manifest,
)

HYBRID_IR = SNAKEMAKE.with_name("hybrid-ir")
SNAKEDEPLOY = SNAKEMAKE.with_name("snakedeploy")
MY_RUN = "toy/my-system.trec"
MY_RUN_TEXT = b"q1 Q0 d1 1 3.0 mine\nq2 Q0 d4 1 2.0 mine\nq2 Q0 d2 2 1.0 mine\n"

USER_SNAKEFILE = """\
configfile: "config.yaml"


module hybrid_ir:
    snakefile:
        "{snakefile}"
    config:
        config


use rule * from hybrid_ir as hir_*


# Snakemake runs only the main Snakefile's handlers: the module's start its job servers and
# print its summary when called from here.
onstart:
    hybrid_ir.onstart()


onsuccess:
    hybrid_ir.onsuccess()


onerror:
    hybrid_ir.onerror()


rule count_table_rows:
    input:
        "results/tables/toy-table.md",
    output:
        "counts/toy-table.rows",
    run:
        rows = [line for line in open(input[0]) if line.startswith("|")][2:]
        with open(output[0], "w") as handle:
            handle.write(f"{{len(rows)}}\\n")


rule all:
    default_target: True
    input:
        rules.hir_all.input,
        "counts/toy-table.rows",
"""


def make_study(root: Path, snakefile: Path) -> Path:
    """A user's folder: the toy mirror, manifest and configuration, their own run file listed in
    their manifest and imported as ``mine``, paths relative to the folder, and their Snakefile
    using the workflow at ``snakefile`` as a module."""
    make_toy(root)
    (root / "mirror" / MY_RUN).write_bytes(MY_RUN_TEXT)
    files = {DATASET: beir_zip(), EXTERNAL_RUN: OTHER_RUN, MY_RUN: MY_RUN_TEXT}
    write_manifest(root / "manifest.tsv", files)
    config = yaml.safe_load((root / "config.yaml").read_text())
    config["mirror"], config["manifest"] = "mirror", "manifest.tsv"
    config["external_runs"]["toy"]["test"]["mine"] = MY_RUN
    rows = config["tables"]["toy-table"]["blocks"][0]["rows"]
    rows.insert(2, {"label": "mine", "run": "mine"})
    (root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (root / "Snakefile").write_text(USER_SNAKEFILE.format(snakefile=snakefile))
    return root


def run(command: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        command,
        cwd=cwd,
        env=snakemake_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.lucene
def test_the_workflow_runs_as_a_module_of_a_users_snakefile(tmp_path):
    study = make_study(tmp_path / "study", REPO / "Snakefile")
    done = run([str(SNAKEMAKE), "--cores", "2"], study)
    assert done.returncode == 0, done.stderr[-6000:]
    # The module's summary, printed by the user's onsuccess handler.
    assert "hybrid-ir: the workflow finished." in done.stdout + done.stderr

    # The user's own rule read the module's table: five rows, theirs among them.
    assert (study / "counts" / "toy-table.rows").read_text() == "5\n"
    table = (study / "results" / "tables" / "toy-table.md").read_text()
    assert "| mine | 0.500 |" in table, table
    assert not (REPO / "counts").exists()

    # Provenance: the table's record names the prefixed rule and the user's raw run file.
    record = study / "results" / "provenance" / "results" / "tables" / "toy-table.md.json"
    assert record.is_file()
    chain = run([str(HYBRID_IR), "provenance", "results/tables/toy-table.md"], study)
    assert chain.returncode == 0, chain.stderr
    assert "rule hir_paper_table table=toy-table" in chain.stdout
    assert MY_RUN in chain.stdout

    # The report: the module's results under its captions and description.
    report = run([str(SNAKEMAKE), "--report", "report.html"], study)
    assert report.returncode == 0, report.stderr[-6000:]
    page = (study / "report.html").read_text(encoding="utf-8")
    assert "toy-table" in page and "five retrieval papers" in page


def source_tree(destination: Path) -> Path:
    """This repository's files as a clone of its working tree holds them (tracked and
    untracked-but-not-ignored, links kept as links): what snakedeploy copies from a local
    repository, without .venv or results/."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if not (source.exists() or source.is_symlink()):
            continue  # deleted in the working tree
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        else:
            shutil.copy2(source, target)
    return destination


def test_snakedeploy_deploys_from_a_local_repository_and_the_deployment_plans(tmp_path):
    """snakedeploy 0.17 takes a local repository as a path (not as a file:// URL), copies its
    config/, profiles/ and licence, and writes workflow/Snakefile with a module whose
    ``snakefile:`` is the path inside the repository ("workflow/Snakefile"), which Snakemake
    resolves against the deployment's own workflow/ folder. With that path made the clone's
    (what snakedeploy writes as ``github("owner/repo", path="workflow/Snakefile", tag=...)``
    for a GitHub repository), the deployment's default configuration plans the whole workflow
    from the deployment's folder."""
    clone = source_tree(tmp_path / "hybrid-ir")
    deployment = tmp_path / "deployment"

    deploy_workflow = [str(SNAKEDEPLOY), "deploy-workflow"]
    url = run([*deploy_workflow, clone.as_uri(), str(deployment), "--branch", "main"], tmp_path)
    assert url.returncode == 1
    assert f"No matching provider for source url {clone.as_uri()}" in url.stdout + url.stderr

    deploy = run([*deploy_workflow, str(clone), str(deployment), "--branch", "main"], tmp_path)
    assert deploy.returncode == 0, deploy.stderr
    snakefile = deployment / "workflow" / "Snakefile"
    generated = snakefile.read_text()
    assert 'configfile: "config/config.yaml"' in generated
    assert "module hybrid_ir:" in generated and "use rule * from hybrid_ir" in generated
    assert '"workflow/Snakefile"' in generated
    # The configuration is a copy of the workflow's default (config/config.yaml links to it).
    assert (deployment / "config" / "config.yaml").read_text() == (REPO / "config.yaml").read_text()
    assert (deployment / "config" / "README.md").is_file()
    assert (deployment / "profiles" / "default" / "config.yaml").is_file()

    snakefile.write_text(
        generated.replace('"workflow/Snakefile"', f'"{clone / "workflow" / "Snakefile"}"')
    )
    dry = run([str(SNAKEMAKE), "--dry-run", "--cores", "2"], deployment)
    assert dry.returncode == 0, dry.stderr[-6000:]
    planned = dry.stdout + dry.stderr
    assert "assert_scores" in planned and "paper_table" in planned
    assert not (deployment / "results").exists()
