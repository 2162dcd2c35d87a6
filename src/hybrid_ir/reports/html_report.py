"""What Snakemake's HTML report (``make report``) shows for each table: the table as a
self-contained page, its notes as the caption, and a category per paper.

A table is written once, as Markdown; the page and the notes fragment are rendered from that
text, so that the report, the Markdown and the LaTeX legend never disagree. Pages carry their
style inline and load nothing, so the report opens offline.
"""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

from hybrid_ir.data.formats import atomic_output

PAPERS = {
    "000": "Zhong et al. 2022, math dense retrieval and Approach0",
    "001": "Rohatgi et al. 2020, PSU at ARQMath",
    "002": "Ahadinia et al., ensemble retrieval",
    "003": "Mandikal and Mooney 2024, sparse meets dense",
    "004": "Ide et al., AskMe",
}
"""Each paper's category in the report, by the three digits its results' names start with;
short, because the report's menu widens to fit it (the README has the full references)."""

BEYOND = "Beyond the papers"
"""The category of results named after no paper (the BM25 regressions, the checks)."""

_PAPER_PREFIX = re.compile(r"paper(\d{3})-")

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #1a1a1a; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; }
td { text-align: right; } td:nth-child(-n+2) { text-align: left; }
th { background: #eee; } tr:nth-child(even) td { background: #f7f7f7; }
li { margin: 0.3em 0; max-width: 60em; }
code { background: #f0f0f0; padding: 0 0.2em; }
"""


def category(name: str) -> str:
    """The report category of a table or figure: its paper (``paperNNN-...``), else
    :data:`BEYOND`."""
    match = _PAPER_PREFIX.match(name)
    return paper_category(match.group(1)) if match else BEYOND


def paper_category(paper: str) -> str:
    return f"Paper {paper}: {PAPERS[paper]}"


def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def table_page(markdown: str) -> str:
    """A table's Markdown as a standalone HTML page; its first heading is the page title."""
    title = next(
        (line.lstrip("# ").strip() for line in markdown.splitlines() if line.startswith("#")),
        "table",
    )
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f"{_markdown().render(markdown)}</body>\n</html>\n"
    )


def notes_fragment(markdown: str) -> str:
    """HTML of what follows a table's last row (legend, notes, provenance footer): the caption
    the report shows beside the table."""
    lines = markdown.splitlines()
    last_row = max((i for i, line in enumerate(lines) if line.startswith("|")), default=-1)
    return _markdown().render("\n".join(lines[last_row + 1 :]))


def write_pages(markdown: str, page: str, notes: str) -> None:
    """The table page and its notes fragment, each written whole or not at all."""
    with atomic_output(page) as out:
        out.write(table_page(markdown))
    with atomic_output(notes) as out:
        out.write(notes_fragment(markdown))
