"""docs/architecture.md stays the map of the workflow: its rule graph and its table name every
rule file, rule and script there is."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
SNAKEMAKE = Path(sys.executable).with_name("snakemake")


def rule_edges(dot: str) -> set[tuple[str, str]]:
    """``(from rule, to rule)`` pairs of a rule graph (node numbers and colours vary by run)."""
    labels = dict(re.findall(r'^\s*(\d+)\[label = "([^"]+)"', dot, re.MULTILINE))
    edges = re.findall(r"^\s*(\d+) -> (\d+)", dot, re.MULTILINE)
    return {(labels[source], labels[target]) for source, target in edges}


def test_committed_rule_graph_is_the_workflows():
    current = subprocess.run(
        [str(SNAKEMAKE), "--rulegraph", "--quiet", "all"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    committed = (DOCS / "rulegraph.dot").read_text()
    assert rule_edges(current) and rule_edges(committed) == rule_edges(current), (
        "docs/rulegraph.dot is out of date: run `make rulegraph`"
    )
    assert (DOCS / "rulegraph.svg").read_text().count("<svg") == 1


def test_architecture_table_names_every_rule_file_and_script():
    text = (DOCS / "architecture.md").read_text()
    rules = REPO / "workflow" / "rules"
    for rule_file in rules.rglob("*.smk"):
        if rule_file.name != "common.smk":
            name = rule_file.relative_to(rules).as_posix()
            assert f"`{name}`" in text, name
    for script in (REPO / "workflow" / "scripts").glob("*.py"):
        assert f"`{script.name}`" in text, script.name


def test_architecture_table_lists_the_modules_each_stage_imports():
    """The modules column is the scripts' transitive package imports (hybrid_ir.code_digest),
    besides the ones every step uses; readers count as `collections`."""
    from hybrid_ir.code_digest import imported_modules

    everywhere = {
        "hybrid_ir",
        "errors",
        "formats",
        "logged",
        "job_log",
        "job_progress",
        "import_hooks",
        "process_title",
        "provenance",
        "paths",
        "config_sources",
        "environment",
        "raw_check",
        "fetch",
        "downloads",
        "members",
        "neural",
        "lucene",
    }
    text = (DOCS / "architecture.md").read_text()
    rows = [line.split("|")[1:-1] for line in text.splitlines() if line.startswith("| ")]
    checked = 0
    for cells in rows:
        scripts = re.findall(r"`(\w+\.py)`", cells[3]) if len(cells) == 5 else []
        if not scripts:
            continue
        imported = set()
        for script in scripts:
            for module in imported_modules(REPO / "workflow" / "scripts" / script):
                name = module.removeprefix("hybrid_ir.")
                imported.add("collections" if name.startswith("collections") else name)
        listed = set(re.findall(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*", cells[4]))
        assert listed & imported == imported - everywhere, (cells[0], sorted(imported - listed))
        checked += 1
    assert checked >= 12


def test_where_to_add_a_figure_kind_names_its_registry():
    from hybrid_ir.figure_kinds import FIGURE_KINDS

    text = (DOCS / "architecture.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| a figure |"))
    assert "hybrid_ir.figure_kinds.FIGURE_KINDS" in row and "FigureKind" in row
    assert FIGURE_KINDS  # the registry the row points to exists and lists the kinds


@pytest.mark.parametrize(
    ("row", "registry", "entry"),
    [
        ("| a run origin ", "hybrid_ir.run_origins.RUN_ORIGINS", "RunOrigin"),
        ("| a kind of output ", "hybrid_ir.output_kinds.OUTPUT_KINDS", "OutputKind"),
    ],
)
def test_where_to_add_an_origin_or_output_kind_names_its_registry(row, registry, entry):
    text = (DOCS / "architecture.md").read_text()
    line = next(line for line in text.splitlines() if line.startswith(row))
    assert registry in line and entry in line
    module, _, name = registry.rpartition(".")
    assert getattr(importlib.import_module(module), name)
