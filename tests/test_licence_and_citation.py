"""The licence and the citation file: Apache-2.0, and CITATION.cff naming this workflow's version
and the five papers it regenerates."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
PAPERS = REPO.parent / "shared" / "papers"


def test_the_licence_is_the_apache_license_2():
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text


def test_the_citation_file_names_the_package_version_and_the_five_papers():
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert citation["cff-version"] == "1.2.0"
    assert citation["version"] == project["version"]
    assert citation["license"] == "Apache-2.0"
    if not PAPERS.is_dir():
        pytest.skip(f"the papers are not beside the repository ({PAPERS})")
    texts = [" ".join(path.read_text(encoding="utf-8")[:1500].split()) for path in
             sorted(PAPERS.glob("[0-9][0-9][0-9]_*.txt"))]  # fmt: skip
    assert len(citation["references"]) == len(texts) == 5
    for reference, text in zip(citation["references"], texts, strict=True):
        words = re.sub(r"[*#]", "", text)
        assert reference["title"] in words, (reference["title"], words[:200])
        assert all(author["family-names"] in words for author in reference["authors"])
