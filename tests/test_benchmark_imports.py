"""The benchmarks import the package inside their functions (so that one benchmark's heavy
imports do not slow another's start), where no linter sees a name that moved: each such import
must name what its module has. And every benchmark imports the shared harness
(benchmarks/harness.py) rather than keeping its own timing, memory and formatting code."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted((REPO / "benchmarks").glob("*.py"))
HARNESS = REPO / "benchmarks" / "harness.py"


def _package_imports(path: Path) -> list[tuple[int, str, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return [
        (node.lineno, node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hybrid_ir")
        for alias in node.names
    ]


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda path: path.name)
def test_every_package_import_of_a_benchmark_exists(path):
    missing = []
    for line, module, name in _package_imports(path):
        imported = importlib.import_module(module)
        submodule = hasattr(imported, "__path__") and importlib.util.find_spec(f"{module}.{name}")
        if not hasattr(imported, name) and not submodule:
            missing.append(f"{path.name}:{line}: {module} has no {name}")
    assert not missing, missing


def _imports_harness(path: Path) -> bool:
    """Whether ``path`` imports the harness at module level (``import harness`` or ``from
    harness import ...``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return any(
        (isinstance(node, ast.Import) and any(alias.name == "harness" for alias in node.names))
        or (isinstance(node, ast.ImportFrom) and node.module == "harness" and not node.level)
        for node in tree.body
    )


def test_the_harness_is_there_and_imports_no_other_benchmark():
    assert HARNESS in BENCHMARKS
    others = {path.stem for path in BENCHMARKS} - {"harness"}
    tree = ast.parse(HARNESS.read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not imported & others


@pytest.mark.parametrize(
    "path", [path for path in BENCHMARKS if path != HARNESS], ids=lambda path: path.name
)
def test_every_benchmark_imports_the_harness(path):
    assert _imports_harness(path), f"{path.name} does not import benchmarks/harness.py"
