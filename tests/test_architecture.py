"""docs/architecture.md stays the map of the workflow: its rule graph and its table name every
rule file, rule and script there is."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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
        "docs/rulegraph.dot is out of date: run `make docs`"
    )
    assert (DOCS / "rulegraph.svg").read_text().count("<svg") == 1


def test_architecture_table_names_every_rule_file_and_script():
    text = (DOCS / "architecture.md").read_text()
    for rule_file in (REPO / "workflow" / "rules").glob("*.smk"):
        if rule_file.name != "common.smk":
            assert f"`{rule_file.name}`" in text, rule_file.name
    for script in (REPO / "workflow" / "scripts").glob("*.py"):
        assert f"`{script.name}`" in text, script.name
