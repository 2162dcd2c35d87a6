"""The workflow's own files that a configuration names, found when it runs from another folder.

A configuration's paths are relative to the working directory: the mirror, the manifest,
expected-score and claims files, a table's ``published_from``, a run file's ``path``. When the
workflow is used as a module of another workflow, or deployed with snakedeploy, the working
directory is the user's, and the default configuration's own files (``manifest:
workflow/resources/manifest.tsv``, ``expected/*.yaml``, ``expected/claims/*.yaml``) are not in
it. :func:`with_workflow_files` gives each such key whose file the working directory lacks the
workflow's file at that path, where the workflow has one: the user's own files win, the
workflow's defaults still resolve, and a run from the workflow's own folder is unchanged
(docs/guides/use-as-a-module.md).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

WORKFLOW_FILE_KEYS = (
    "manifest",
    "expected[]",
    "claims[]",
    "tables.<name>.published_from",
    "parameter_tables.<name>.published_from",
)
"""The configuration keys that may name one of the workflow's own files (a list's entries for
``[]``). The mirror and run files are the user's data and stay relative to the working
directory."""


def _slots(config: dict[str, Any]) -> Iterator[tuple[Any, Any]]:
    """(container, key) of every value :data:`WORKFLOW_FILE_KEYS` names in ``config``."""
    if isinstance(config.get("manifest"), str):
        yield config, "manifest"
    for section in ("expected", "claims"):
        entries = config.get(section)
        if isinstance(entries, list):
            for index, entry in enumerate(entries):
                if isinstance(entry, str):
                    yield entries, index
    for section in ("tables", "parameter_tables"):
        specs = config.get(section)
        if isinstance(specs, dict):
            for spec in specs.values():
                if isinstance(spec, dict) and isinstance(spec.get("published_from"), str):
                    yield spec, "published_from"


def with_workflow_files(
    config: dict[str, Any], root: str | Path, workdir: str | Path | None = None
) -> list[str]:
    """Point each key of :data:`WORKFLOW_FILE_KEYS` whose relative path is no file in ``workdir``
    (the working directory) but one under ``root`` (the workflow's folder) at that file, in
    place; return the paths so resolved. Nothing changes when ``root`` is the working directory."""
    workdir = Path(workdir if workdir is not None else os.getcwd())
    root = Path(root)
    if not root.is_dir() or root.resolve() == workdir.resolve():
        return []
    resolved = []
    for container, key in _slots(config):
        path = container[key]
        if os.path.isabs(path) or (workdir / path).exists():
            continue
        candidate = root / path
        if candidate.is_file():
            container[key] = str(candidate)
            resolved.append(path)
    return resolved
