"""The report's table pages and captions (hybrid_ir.reports.html_report), from a table's
Markdown."""

from __future__ import annotations

from hybrid_ir.reports.html_report import BEYOND, PAPERS, category, notes_fragment, table_page

MARKDOWN = """# Paper 001, Table 1: ARQMath-1

| | run | nDCG' |
|---|---|---|
| Baselines | BM25 (ref.) | 0.250 |
| | PSU1 | 0.263* |

- `*` / `**`: the row differs from the reference row.
- PSU3: nDCG' is 0.211 against the printed 0.210.

_hybrid-ir at commit 0123456789ab, configuration sha256 abcdefabcdef_
"""


def test_each_paper_has_a_category_and_other_results_go_beyond():
    assert category("paper001-table1") == f"Paper 001: {PAPERS['001']}"
    assert category("paper000-fig2").startswith("Paper 000: Zhong et al. 2022")
    assert category("bm25") == category("toy-table") == BEYOND
    assert category("mypaper001-x") == BEYOND


def test_table_page_is_standalone_html_with_the_title_table_and_notes():
    page = table_page(MARKDOWN)
    assert page.startswith("<!doctype html>")
    assert "<title>Paper 001, Table 1: ARQMath-1</title>" in page
    assert "<td>0.263*</td>" in page and "<th>nDCG'</th>" in page.replace("&#x27;", "'")
    assert "PSU3: nDCG" in page and "configuration sha256 abcdefabcdef" in page
    # Nothing to fetch: no scripts, links or remote resources.
    assert "<script" not in page and "<link" not in page and "http" not in page


def test_notes_fragment_is_what_follows_the_table():
    fragment = notes_fragment(MARKDOWN)
    assert "<table" not in fragment and "Paper 001, Table 1" not in fragment
    assert fragment.count("<li>") == 2
    assert "<em>hybrid-ir at commit 0123456789ab" in fragment


def test_markdown_html_is_not_passed_through():
    page = table_page("# t\n\n| a |\n|---|\n| <script>x</script> |\n")
    assert "<script>" not in page and "&lt;script&gt;" in page
