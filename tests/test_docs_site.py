"""The documentation site builds: ``mkdocs build --strict`` of mkdocs.yml (every page of the nav
present, no broken link or anchor), its reference pages generated from the code by
docs/hooks/reference.py, and nothing fetched from the web when a page is read.

MkDocs and Material come from requirements-docs.txt, which ``make docs`` installs (CI's gate)
and ``make test`` does not: without them this module skips."""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hybrid_ir import paths
from hybrid_ir.cli.docs_reference import commands, load_schema
from hybrid_ir.cli.main import build_parser
from hybrid_ir.evaluation import measures as evaluate

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None,
    reason="MkDocs and Material are not installed (make docs installs requirements-docs.txt)",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet"]
        + ["--config-file", str(REPO / "mkdocs.yml"), "--site-dir", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return site


def page(site: Path, name: str) -> str:
    return (site / name / "index.html").read_text(encoding="utf-8")


def ids(html: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', html))


def test_configuration_page_has_every_top_level_key_and_definition(site):
    schema = load_schema(REPO)
    found = ids(page(site, "reference/configuration"))
    assert set(schema["properties"]) <= found
    assert {f"def-{name}" for name in schema["$defs"]} <= found


def test_cli_page_has_every_command(site):
    found = ids(page(site, "reference/cli"))
    assert {command.anchor for command in commands(build_parser())} <= found


def test_measures_and_outputs_pages_list_the_code(site):
    assert set(evaluate.SETS) <= ids(page(site, "reference/measures"))
    outputs = page(site, "reference/outputs")
    assert "results/collections/&lt;collection&gt;/corpus.jsonl" in outputs
    assert paths.MANIFEST in outputs


def test_changelog_page_is_the_repositorys(site):
    changelog = page(site, "changelog")
    first = next(
        line.lstrip("# ").strip()
        for line in (REPO / "CHANGELOG.md").read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    )
    assert html.escape(first, quote=False) in changelog


def test_pages_load_nothing_from_the_web(site):
    """No web fonts, scripts or styles: the site reads offline (theme.font: false)."""
    for file in site.rglob("*.html"):
        text = file.read_text(encoding="utf-8")
        remote = re.findall(r'<(?:link|script)[^>]+(?:href|src)="(?:https?:)?//[^"]+"', text)
        assert remote == [], file
