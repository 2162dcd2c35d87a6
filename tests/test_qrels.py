"""Qrels: the TREC reader's rules, both in-memory forms, the canonical writer, and that
:mod:`hybrid_ir.data.qrels` is the one module that reads, writes and holds qrels."""

from __future__ import annotations

import ast
import gzip
import logging
from pathlib import Path

import pytest

import hybrid_ir.data.formats
import hybrid_ir.evaluation.measures
from hybrid_ir.data.qrels import (
    Judgment,
    judgments,
    read_judgments,
    read_qrels,
    write_judgments,
    write_qrels,
)
from hybrid_ir.errors import InputFormatError
from hybrid_ir.interfaces import api

LOGGER = "hybrid_ir.data.qrels"
REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "hybrid_ir"


def test_read_qrels_reads_integral_floats_with_a_warning(tmp_path, caplog):
    path = tmp_path / "qrels.txt"
    path.write_text("T1 xxx a 3.0\nT1 xxx b 0.0\nT1 xxx c 1\n")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert read_qrels(path) == {"T1": {"a": 3, "b": 0, "c": 1}}
    assert "2 relevance value(s) written as floats" in caplog.text


def test_read_qrels_keeps_the_highest_of_repeated_judgments(tmp_path, caplog):
    path = tmp_path / "qrels.txt.gz"
    with gzip.open(path, "wt") as handle:
        handle.write("T1\t0\ta\t1\nT1\t0\ta\t3\nT1\t0\ta\t0\nT2\t0\ta\t2\n")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert read_qrels(path) == {"T1": {"a": 3}, "T2": {"a": 2}}
    assert "2 repeated (topic, doc) line(s)" in caplog.text
    assert read_judgments(path) == [
        Judgment("T1", "a", 1), Judgment("T1", "a", 3), Judgment("T1", "a", 0),
        Judgment("T2", "a", 2),
    ]  # fmt: skip


def test_read_qrels_rejects_non_integral_relevance_naming_file_and_line(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("T1 0 a 1\nT1 0 b 0.5\n")
    for reader in (read_qrels, read_judgments, api.read_qrels):
        with pytest.raises(InputFormatError, match=r"qrels.txt:2: relevance '0.5' is not integral"):
            reader(path)


def test_qrels_errors_stay_errors_beside_comments(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("# header\nT1 0 a 1\nT1 0 b 1 extra\n")
    with pytest.raises(InputFormatError, match=r"qrels.txt:3: expected 4 fields .*got 5$"):
        read_qrels(path)
    path.write_text("# nothing judged yet\n")
    with pytest.raises(InputFormatError, match=r"qrels.txt: no judgments"):
        read_qrels(path)


def test_write_qrels_is_canonical_and_reads_back(tmp_path):
    qrels = {"A.10": {"b": 1, "a": 0}, "A.2": {"z": 2, "c": 3}}
    path = tmp_path / "out.qrels"
    assert write_qrels(qrels, path) == 4
    assert path.read_text() == "A.2 0 c 3\nA.2 0 z 2\nA.10 0 a 0\nA.10 0 b 1\n"
    assert read_qrels(path) == qrels
    assert list(judgments(qrels)) == read_judgments(path)
    # The API writes the same bytes, and an equal dict in another order writes them too.
    again = tmp_path / "again.qrels"
    assert api.write_qrels({"A.10": {"a": 0, "b": 1}, "A.2": qrels["A.2"]}, again) == 4
    assert again.read_bytes() == path.read_bytes()


def test_write_judgments_keeps_the_readers_order(tmp_path):
    lines = [Judgment("q2", "d1", 1), Judgment("q1", "d9", 0), Judgment("q1", "d1", 2)]
    path = tmp_path / "converted.qrels"
    assert write_judgments(path, lines) == 3
    assert path.read_text() == "q2 0 d1 1\nq1 0 d9 0\nq1 0 d1 2\n"
    assert read_judgments(path) == lines


def _defined_functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


# The names a qrels reader, writer or line parser went by (formats.read_qrels, formats.
# write_qrels, formats.qrels_lines, measures.load_qrels, beir._read_qrels).
_READERS_AND_WRITERS = {
    "load_qrels", "read_qrels", "_read_qrels", "write_qrels", "read_judgments",
    "write_judgments", "qrels_lines", "parse_relevance",
}  # fmt: skip
# Where one may be defined besides hybrid_ir/data/qrels.py: the API's wrappers, which call it,
# and the BEIR reader of its own source format (tab-separated, with a header).
_ELSEWHERE = {
    "interfaces/api.py": {"read_qrels", "write_qrels"},
    "data/collections/beir.py": {"read_beir_qrels"},
}


def test_only_data_qrels_reads_writes_and_parses_trec_qrels():
    """One road: every qrels reader and writer is data/qrels.py's; no other module of the
    package or script of the workflow defines one, calls the line parser or spells out its
    layout, and the old entry points are gone."""
    assert not hasattr(hybrid_ir.evaluation.measures, "load_qrels")
    for name in ("read_qrels", "write_qrels", "qrels_lines", "parse_relevance", "Judgment"):
        assert not hasattr(hybrid_ir.data.formats, name), name
    found = []
    files = [*PACKAGE.rglob("*.py"), *(REPO / "workflow" / "scripts").glob("*.py")]
    for path in files:
        relative = path.relative_to(PACKAGE).as_posix() if PACKAGE in path.parents else path.name
        if relative == "data/qrels.py":
            continue
        allowed = _ELSEWHERE.get(relative, set())
        for name in (_defined_functions(path) & _READERS_AND_WRITERS) - allowed:
            found.append(f"{relative}: defines {name}")
        text = path.read_text(encoding="utf-8")
        for spelled in ("qrels_lines(", "qid iter docid rel", 'f"{judgment.query_id} 0 '):
            if spelled in text:
                found.append(f"{relative}: {spelled}")
    assert not found, found
