"""The code a workflow step runs, as one digest: its adapter script and every ``hybrid_ir``
module the script imports, transitively.

Snakemake re-runs a job when its script changes but cannot see the package modules the script
calls, so each rule passes this digest as a param. The imports are read from the source
(``ast``), not executed: ``import``/``from ... import`` statements anywhere in a file (function
bodies too, where heavy modules are imported lazily), the packages that contain each module,
and module names written as strings (the collection readers are imported by name).

Every Snakemake start digests every rule (a no-op re-run included), so :class:`DigestCache`
keeps each script's digest on disk with the size and modification time of each file it
covers and the list of the package's module files; a digest is recomputed only when one of
them differs.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import re
import threading
from pathlib import Path

PACKAGE = "hybrid_ir"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
_MODULE_NAME = re.compile(rf"{PACKAGE}(\.\w+)*")


def module_file(name: str) -> Path | None:
    """The source file of a ``hybrid_ir`` module or package, or None if there is none."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = PACKAGE_DIR.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _with_packages(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:end]) for end in range(1, len(parts) + 1)}


def direct_imports(path: Path) -> set[str]:
    """The ``hybrid_ir`` modules (and their packages) one source file imports."""
    status = path.stat()
    return set(_direct_imports(str(path), status.st_mtime_ns, status.st_size))


# CPython 3.11's AST constructor keeps its recursion depth per interpreter, not per thread:
# two threads parsing at once (Snakemake runs local jobs in threads, and each asks whether its
# script is served) fail with "AST constructor recursion depth mismatch" (cpython gh-106905).
_PARSING = threading.Lock()


# Every rule's digest walks the same modules: parsed once per process and file version (a
# dry run of the default configuration parsed 483 files for 37 rules, 7 of its 12 s).
@functools.cache
def _direct_imports(path: str, mtime_ns: int, size: int) -> frozenset[str]:
    source = Path(path).read_text(encoding="utf-8")
    with _PARSING:
        tree = ast.parse(source, filename=path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            # ``from hybrid_ir import paths`` imports a module; ``from x import function`` not.
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if _MODULE_NAME.fullmatch(node.value):
                names.add(node.value)
    found: set[str] = set()
    for name in names:
        if module_file(name) is not None:
            found |= {part for part in _with_packages(name) if module_file(part) is not None}
    return frozenset(found)


def imported_modules(script: str | Path) -> list[str]:
    """Every ``hybrid_ir`` module ``script`` imports, directly or through other modules."""
    seen: set[str] = set()
    pending = sorted(direct_imports(Path(script)))
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        file = module_file(name)
        assert file is not None  # direct_imports keeps only names with a source file
        pending.extend(direct_imports(file) - seen)
    return sorted(seen)


def code_digest(script: str | Path) -> str:
    """16 hex digits of sha256 over the script and the modules it imports, in name order."""
    digest = hashlib.sha256(Path(script).read_bytes())
    for name in imported_modules(script):
        file = module_file(name)
        assert file is not None
        digest.update(name.encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()[:16]


def _module_files() -> list[str]:
    """Every module file of the package, relative to it: a module added or removed can change
    what a script's imports resolve to."""
    return sorted(str(path.relative_to(PACKAGE_DIR)) for path in PACKAGE_DIR.rglob("*.py"))


def _stamp(path: Path) -> list[int]:
    status = path.stat()
    return [status.st_mtime_ns, status.st_size]


class DigestCache:
    """:func:`code_digest` of scripts, remembered in a JSON file between processes. A missing or
    unreadable file is an empty cache; it is rewritten whole (temporary name, then rename) when
    a digest was recomputed, so that Snakemake processes started at once never read half of it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            saved = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            saved = {}
        modules = _module_files()
        self.entries: dict = saved.get("scripts", {}) if saved.get("modules") == modules else {}
        self.modules = modules

    def _valid(self, entry: dict) -> bool:
        try:
            return all(_stamp(Path(file)) == stamp for file, stamp in entry["files"].items())
        except OSError:
            return False

    def digest(self, script: str | Path) -> str:
        key = str(Path(script).resolve())
        entry = self.entries.get(key)
        if entry is not None and self._valid(entry):
            return entry["digest"]
        files = [Path(key)] + [module_file(name) for name in imported_modules(key)]
        # Stamped before hashing: a file edited meanwhile leaves a stale stamp, not a stale digest.
        stamps = {str(file): _stamp(file) for file in files if file is not None}
        self.entries[key] = {"digest": code_digest(key), "files": stamps}
        self._save()
        return self.entries[key]["digest"]

    def _save(self) -> None:
        payload = json.dumps({"modules": self.modules, "scripts": self.entries}, sort_keys=True)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            staging = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
            staging.write_text(payload, encoding="utf-8")
            staging.replace(self.path)
        except OSError:
            pass  # a read-only working directory digests every start, as before the cache
