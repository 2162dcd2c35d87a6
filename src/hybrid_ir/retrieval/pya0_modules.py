"""pya0 0.3.7's own Python modules, loaded in one place, for checking this package against them.

``import pya0`` puts pya0's folder first on ``sys.path``, where its modules (``preprocess``,
``eval``, ``timer`` ...) can shadow others: import it only through here, in processes that need
it (tests and benchmarks).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path

from hybrid_ir.errors import HybridIRError


def load_crossvalidate() -> tuple[types.ModuleType, types.ModuleType]:
    """pya0's ``crossvalidate`` and ``mergerun`` modules, never modifying site-packages.

    ``crossvalidate`` imports ``fire`` (a CLI dependency that is not installed: stubbed while
    importing) and ``mergerun`` as a top-level module, which works once pya0's folder is on
    ``sys.path`` (pya0's ``__init__`` puts it there; if the package cannot be imported, the file
    is loaded with the folder on ``sys.path`` for the duration).
    """
    stub = importlib.util.find_spec("fire") is None and "fire" not in sys.modules
    if stub:
        sys.modules["fire"] = types.ModuleType("fire")
    try:
        try:
            crossvalidate = importlib.import_module("pya0.crossvalidate")
        except (ImportError, OSError):
            crossvalidate = _load_from_folder("crossvalidate")
    finally:
        if stub:
            del sys.modules["fire"]
    return crossvalidate, sys.modules["mergerun"]


def _load_from_folder(name: str) -> types.ModuleType:
    spec = importlib.util.find_spec("pya0")
    if spec is None or spec.origin is None:
        raise HybridIRError("pya0 is not installed")
    folder = str(Path(spec.origin).parent)
    sys.path.insert(0, folder)
    try:
        file_spec = importlib.util.spec_from_file_location(
            f"pya0_{name}", Path(folder, f"{name}.py")
        )
        assert file_spec is not None and file_spec.loader is not None
        module = importlib.util.module_from_spec(file_spec)
        file_spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(folder)
