"""The benchmarks import the package inside their functions (so that one benchmark's heavy
imports do not slow another's start), where no linter sees a name that moved: each such import
must name what its module has."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = sorted((REPO / "benchmarks").glob("*.py"))


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
