"""What the Snakemake workflow catalog requires, as its own code decides it.

The rules are quoted from snakemake/snakemake-workflow-catalog at commit 2cac294 (February
2025): ``scripts/generate-catalog.py`` (which repositories are listed, and which get the
"standardized usage" the catalog prints), ``index.html`` (how that usage is printed) and the
README's "Rules for inclusion". The catalog fetches a release's tarball (or clones the default
branch) and runs these checks in its root; here they run on this checkout.

This repository keeps its top-level ``Snakefile`` and ``config.yaml``. ``workflow/Snakefile``
includes the top-level one whole (so the catalog and snakedeploy find the workflow where they
look), and ``config/config.yaml`` is a link to ``config.yaml`` beside the configuration guide
``config/README.md``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
SETTINGS = REPO / ".snakemake-workflow-catalog.yml"


def catalog_paths(tmp: Path) -> tuple[Path, Path, Path]:
    """generate-catalog.py::

    workflow = tmp / "workflow"
    if not workflow.exists():
        workflow = tmp

    rules = workflow / "rules"
    snakefile = workflow / "Snakefile"
    """
    workflow = tmp / "workflow"
    if not workflow.exists():
        workflow = tmp
    return workflow, workflow / "rules", workflow / "Snakefile"


def test_the_catalog_finds_the_snakefile_where_it_looks():
    """generate-catalog.py::

        if not snakefile.exists():
            log_skip("of missing Snakefile")

    With a ``workflow/`` folder the catalog looks only at ``workflow/Snakefile`` (README:
    "have their main workflow definition named ``workflow/Snakefile``" for standardized usage).
    """
    workflow, _, snakefile = catalog_paths(REPO)
    assert workflow == REPO / "workflow"
    assert snakefile.is_file()
    assert 'include: "../Snakefile"' in snakefile.read_text()


def test_rule_modules_use_the_smk_extension():
    """generate-catalog.py::

    if rules.exists() and rules.is_dir():
        if not any(
            rule_file.suffix == ".smk"
            for rule_file in rules.iterdir()
            if rule_file.is_file()
        ):
            log_skip("rule modules are not using .smk extension")
    """
    _, rules, _ = catalog_paths(REPO)
    assert rules.is_dir()
    assert any(rule_file.suffix == ".smk" for rule_file in rules.iterdir() if rule_file.is_file())


def test_the_readme_names_snakemake_and_workflow():
    """README, "Rules for inclusion": "The repository has a ``README.md`` file, containing the
    words "snakemake" and "workflow" (case insensitive)." (the search is ``snakemake workflow
    in:readme``)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8").lower()
    assert "snakemake" in readme and "workflow" in readme


def test_standardized_usage_settings_and_configuration_guide():
    """generate-catalog.py::

        settings_file = tmp / ".snakemake-workflow-catalog.yml"
        if settings_file.exists():
            with open(settings_file) as settings_file:
                try:
                    settings = yaml.load(settings_file, yaml.SafeLoader)
        ...
        config_readme_path = tmp / "config" / "README.md"
        ...
        if settings is not None and config_readme is not None:
            self.mandatory_flags = settings.get("usage", {}).get("mandatory-flags", None)
            self.report = settings.get("usage", {}).get("report", False)
            self.software_stack_deployment = settings.get("usage", {}).get(
                "software-stack-deployment", {})
            ...
            self.standardized = True

    (Later versions also skip a settings file that is not a YAML mapping.) README: "definition
    of software deployment method (at least one of conda, singularity, or singularity+conda)".
    """
    with open(SETTINGS) as handle:
        settings = yaml.load(handle, yaml.SafeLoader)
    assert isinstance(settings, dict)
    config_readme = (REPO / "config" / "README.md").read_text(encoding="utf-8")
    assert config_readme.strip()
    usage = settings["usage"]
    assert set(usage) <= {"mandatory-flags", "software-stack-deployment", "report"}
    deployment = usage["software-stack-deployment"]
    assert set(deployment) <= {"conda", "singularity", "singularity+conda"}
    assert all(isinstance(value, bool) for value in deployment.values())
    assert any(deployment.values())
    assert usage["report"] is True
    flags = usage["mandatory-flags"]
    assert set(flags) == {"desc", "flags"} and isinstance(flags["flags"], str)
    # config/config.yaml is what snakedeploy's deployment reads: the workflow's configuration.
    assert (REPO / "config" / "config.yaml").resolve() == (REPO / "config.yaml").resolve()


def printed_usage(settings: dict, repo_url: str, release: str) -> list[str]:
    """The commands the catalog prints (index.html, ``render_usage_modal``)::

    var flags = ""
    if (rowdata.mandatory_flags && rowdata.mandatory_flags.flags) {
        flags = rowdata.mandatory_flags.flags
    }
    var method_flags = {
        "conda": "--use-conda",
        "singularity": "--use-singularity",
        "singularity+conda": "--use-conda --use-singularity"
    }
    for (const method in rowdata.software_stack_deployment) {
        if (rowdata.software_stack_deployment[method]) {
            deployment_methods[method] =
                `snakemake --cores all ${method_flags[method]} ${flags}`
    ...
    .text(`snakedeploy deploy-workflow ${repo_url} . --tag ${rowdata.latest_release}`)
    """
    method_flags = {
        "conda": "--use-conda",
        "singularity": "--use-singularity",
        "singularity+conda": "--use-conda --use-singularity",
    }
    usage = settings["usage"]
    flags = (usage.get("mandatory-flags") or {}).get("flags") or ""
    commands = [f"snakedeploy deploy-workflow {repo_url} . --tag {release}"]
    for method, used in usage["software-stack-deployment"].items():
        if used:
            commands.append(f"snakemake --cores all {method_flags[method]} {flags}")
    return commands


def test_the_printed_usage_is_what_the_guide_shows():
    """The usage the catalog prints for this workflow is the one docs/guides/snakedeploy.md
    explains (Snakemake 9 spells --use-conda as --sdm conda and still takes it)."""
    settings = yaml.safe_load(SETTINGS.read_text())
    commands = printed_usage(settings, "https://github.com/OWNER/hybrid-ir", "vX.Y.Z")
    assert commands == [
        "snakedeploy deploy-workflow https://github.com/OWNER/hybrid-ir . --tag vX.Y.Z",
        "snakemake --cores all --use-conda ",
    ]
    guide = (REPO / "docs" / "guides" / "snakedeploy.md").read_text(encoding="utf-8")
    assert "snakedeploy deploy-workflow https://github.com/OWNER/hybrid-ir . --tag" in guide
    assert "snakemake --cores all --use-conda" in guide


@pytest.mark.parametrize(
    "command",
    [
        pytest.param([str(BIN / "snakemake"), "--lint"], id="snakemake --lint"),
        pytest.param(
            [str(BIN / "snakefmt"), "--check", "-v", "workflow/Snakefile", "workflow/rules"],
            id="snakefmt",
        ),
    ],
)
def test_lint_and_format_pass_as_the_catalog_runs_them(command):
    """generate-catalog.py (the catalog records their output as the workflow's "linting" and
    "formatting" problems)::

        out = sp.run(["snakemake", "--lint"], capture_output=True, cwd=tmp, check=True)
        ...
        snakefiles = [workflow / "Snakefile"] + list(rules.glob("*.smk"))
        sp.run(["snakefmt", "--check", "-v"] + snakefiles, cwd=tmp, check=True, ...)

    ``snakemake --lint`` in the root reads the top-level Snakefile (Snakemake's first choice);
    snakefmt is given the whole rules folder, a superset of the catalog's ``rules/*.smk``."""
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
