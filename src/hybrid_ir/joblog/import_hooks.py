"""Run a function on a module as soon as it is imported, or now if it already is.

A job's log is cleaned up by adjusting third-party modules (tqdm's bars, transformers' log
handler) that most jobs never import: importing them up front would cost every job their
import time (tqdm alone 50-70 ms on 2 cores), so the adjustment waits for the job's own
import instead.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

_LOCK = threading.Lock()


def after_import(name: str, action: Callable[[ModuleType], None]) -> None:
    """Call ``action(module)`` once module ``name`` is imported: now if it is already."""
    with _LOCK:
        module = sys.modules.get(name)
        if module is None:
            sys.meta_path.insert(0, _AfterImport(name, action))
            return
    action(module)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for its one module, it wraps the loader the other finders give."""

    def __init__(self, name: str, action: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.action = action

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        with _LOCK:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None and spec.loader is not None:
                spec.loader = _RunAfter(spec.loader, self.action)
                return spec
        return None


class _RunAfter(importlib.abc.Loader):
    def __init__(self, loader: Any, action: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._action = action

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._action(module)

    def __getattr__(self, name: str) -> Any:  # get_source and the like, for tracebacks
        return getattr(self._loader, name)
