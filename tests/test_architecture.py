"""docs/architecture.md stays the map of the workflow: its rule graph and its table name every
rule file, rule and script there is, and its table of the package's folders is the imports'."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
PACKAGE = REPO / "src" / "hybrid_ir"
SHARED = {"errors", "paths"}
"""The modules every layer uses, the only ones outside a folder."""
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
    """The modules column is the scripts' transitive package imports
    (hybrid_ir.planning.code_digest), besides the ones every step uses; readers count as
    `data.collections`, and folders' ``__init__`` modules are left out."""
    from hybrid_ir.planning.code_digest import imported_modules

    everywhere = SHARED | {
        "data.formats",
        "data.hub_access",
        "data.raw_check",
        "data.fetch",
        "data.downloads",
        "data.members",
        "jobs.run",
        "jobs.provenance",
        "jobs.environment",
        "joblog.configure",
        "joblog.progress",
        "joblog.import_hooks",
        "joblog.process_title",
        "config.sources",
    }
    folders = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
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
                name = module.removeprefix("hybrid_ir").removeprefix(".")
                if name.startswith("data.collections"):
                    name = "data.collections"
                if name and name not in folders and not _is_package(name):
                    imported.add(name)
        listed = set(re.findall(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*", cells[4]))
        assert listed & imported == imported - everywhere, (cells[0], sorted(imported - listed))
        checked += 1
    assert checked >= 12


def _is_package(name: str) -> bool:
    return (
        name != "data.collections" and (PACKAGE / name.replace(".", "/") / "__init__.py").is_file()
    )


def _folder_table() -> dict[str, set[str]]:
    """The package-by-layer table: folder -> the folders it imports from, in the table's order."""
    text = (DOCS / "architecture.md").read_text()
    section = text.split("## The package by layer", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        if len(cells) == 3 and cells[0].startswith("`"):
            table[cells[0].strip("`")] = set(re.findall(r"`(\w+)`", cells[2]))
    return table


def _imports(path: Path) -> set[str]:
    """Every ``hybrid_ir`` module a file imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hybrid_ir"):
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("hybrid_ir"))
    return found


def _folder(module: str) -> str | None:
    """The top folder of ``hybrid_ir.<folder>....``; None for a module every layer uses."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and (PACKAGE / parts[1]).is_dir() else None


def test_the_package_folders_import_as_the_architecture_table_says():
    table = _folder_table()
    folders = sorted(path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file())
    assert sorted(table) == folders, "a folder of src/hybrid_ir is missing from the table"
    imported: dict[str, set[str]] = {folder: set() for folder in folders}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if len(relative.parts) == 1:
            continue
        for module in _imports(path):
            target = _folder(module)
            if target and target != relative.parts[0]:
                imported[relative.parts[0]].add(target)
    assert imported == table, {
        folder: {"table": sorted(table[folder]), "code": sorted(imported[folder])}
        for folder in folders
        if imported[folder] != table[folder]
    }
    order = list(table)
    for position, folder in enumerate(order):
        assert all(order.index(target) > position for target in table[folder]), (
            f"{folder} imports a folder listed above it: the table runs top down"
        )


def test_only_the_modules_every_layer_uses_stand_outside_a_folder():
    loose = {path.stem for path in PACKAGE.glob("*.py")} - {"__init__"}
    assert loose == SHARED


def test_a_folders_init_is_its_docstring_only():
    for init in PACKAGE.glob("*/**/__init__.py"):
        body = ast.parse(init.read_text()).body
        if init.parent.name == "collections":
            continue  # the readers' registry, which every reader imports anyway
        assert len(body) == 1 and isinstance(body[0], ast.Expr), init.relative_to(PACKAGE)


def test_where_to_add_a_figure_kind_names_its_registry():
    from hybrid_ir.reports.figures.kinds import FIGURE_KINDS

    text = (DOCS / "architecture.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| a figure |"))
    assert "hybrid_ir.reports.figures.kinds.FIGURE_KINDS" in row and "FigureKind" in row
    assert FIGURE_KINDS  # the registry the row points to exists and lists the kinds


@pytest.mark.parametrize(
    ("row", "registry", "entry"),
    [
        ("| a run origin ", "hybrid_ir.config.run_origins.RUN_ORIGINS", "RunOrigin"),
        ("| a kind of output ", "hybrid_ir.planning.output_kinds.OUTPUT_KINDS", "OutputKind"),
    ],
)
def test_where_to_add_an_origin_or_output_kind_names_its_registry(row, registry, entry):
    text = (DOCS / "architecture.md").read_text()
    line = next(line for line in text.splitlines() if line.startswith(row))
    assert registry in line and entry in line
    module, _, name = registry.rpartition(".")
    assert getattr(importlib.import_module(module), name)
