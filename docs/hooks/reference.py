"""MkDocs hook (mkdocs.yml's ``hooks``): adds the pages generated from the code at build time,
the reference pages and the changelog (:func:`hybrid_ir.cli.docs_reference.reference_pages`), to
the site's files. Nothing is written into docs/; a file there at a generated page's path is an
error, as it would hide the generated page."""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

from hybrid_ir.cli.docs_reference import reference_pages

ROOT = Path(__file__).resolve().parents[2]
"""The repository root (this file is docs/hooks/reference.py)."""


def on_files(files: Files, config: MkDocsConfig) -> Files:
    try:
        pages = reference_pages(ROOT)
    except OSError as error:
        raise PluginError(f"docs/hooks/reference.py: a generated page's source: {error}") from error
    for path, content in pages.items():
        if files.get_file_from_path(path) is not None:
            raise PluginError(
                f"docs/{path} is generated when the site is built (hybrid_ir.cli.docs_reference): "
                "remove the file"
            )
        files.append(File.generated(config, path, content=content))
    return files
