"""The explorer page: one self-contained HTML file holding its data, its script, its style and,
where one was found, the math renderer (:mod:`hybrid_ir.reports.explore.katex`), so that it opens
offline, from disk or inside the Snakemake report.

The data is a ``<script type="application/json">`` block whose ``<``, ``>`` and ``&`` are JSON
escapes, so no text of an input file can close it or be read as markup; the script builds the
page from it with text nodes only. A content security policy lets the page load nothing (fonts
are ``data:`` URLs) and run only its own two scripts, named by their sha256: even markup that
reached the page some other way could not run. The same data give the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from typing import Any

from hybrid_ir.reports.explore.katex import Katex, NoRenderer
from hybrid_ir.reports.explore.script import SCRIPT

STYLE = """
:root { --win: #2e7d32; --loss: #c62828; --tie: #9e9e9e; --line: #bbb; }
body { font-family: system-ui, sans-serif; margin: 1.2em 1.5em; color: #1a1a1a; }
h1 { font-size: 1.25em; margin-bottom: 0.2em; } h2 { font-size: 1.1em; } h3 { font-size: 1em; }
.about, .footer { color: #555; font-size: 0.85em; max-width: 75em; }
.notice { background: #fff3cd; border: 1px solid #e0c060; padding: 0.5em 0.8em; }
.controls { display: flex; flex-wrap: wrap; gap: 0.6em 1.2em; align-items: center; }
.controls select { max-width: 28em; }
#summary { font-size: 0.95em; }
.count.win, .legend .win { color: var(--win); } .count.loss { color: var(--loss); }
#chart svg { width: 100%; height: 240px; border-bottom: 1px solid #eee; }
rect.bar { cursor: pointer; } rect.bar.win { fill: var(--win); }
rect.bar.loss { fill: var(--loss); } rect.bar.tie { fill: var(--tie); }
rect.bar.selected { stroke: #000; stroke-width: 2px; } rect.bar.dim { opacity: 0.2; }
rect.bar:focus { outline: none; stroke: #1565c0; stroke-width: 2px; }
line.zero { stroke: #666; stroke-width: 1px; } text.tick { font-size: 11px; fill: #555; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; vertical-align: middle; }
.swatch.win { background: var(--win); } .swatch.loss { background: var(--loss); }
.swatch.tie { background: var(--tie); }
.legend, .help, .notes, #missing { font-size: 0.85em; color: #444; }
table.breakdown { border-collapse: collapse; margin: 0.4em 1.5em 0.8em 0; display: inline-table;
  font-size: 0.85em; vertical-align: top; }
table.breakdown caption { text-align: left; font-weight: 600; }
table.breakdown td, table.breakdown th { border-bottom: 1px solid #ddd; padding: 0.15em 0.5em; }
table.breakdown tr[data-value] { cursor: pointer; }
table.breakdown tr.active { background: #e3f2fd; }
line.whisker { stroke: #333; stroke-width: 1.5px; } circle.dot.win { fill: var(--win); }
circle.dot.loss { fill: var(--loss); } circle.dot.tie { fill: var(--tie); }
#topic { border-top: 2px solid #ddd; margin-top: 1em; }
.labels, .topic-scores, .alpha, .judged { font-size: 0.9em; margin: 0.3em 0; }
.query { background: #f7f7f7; padding: 0.6em 0.8em; white-space: pre-wrap; max-width: 75em; }
.rankings { display: grid; grid-template-columns: minmax(0, 1fr) 90px minmax(0, 1fr);
  margin-top: 0.8em; }
.ranking ol { list-style: none; padding: 0; margin: 0; }
li.doc { border: 1px solid #ddd; border-left-width: 5px; margin: 0 0 0.4em; padding: 0.3em 0.5em;
  background: #fff; }
li.doc.g3 { border-left-color: #1b5e20; } li.doc.g2 { border-left-color: #43a047; }
li.doc.g1 { border-left-color: #a5d6a7; } li.doc.g0 { border-left-color: #ef9a9a; }
li.doc.unjudged { border-left-color: #e0e0e0; }
.doc-head { display: flex; gap: 0.6em; font-size: 0.85em; align-items: baseline; }
.doc-head .rank { font-weight: 700; min-width: 1.6em; }
.grade { padding: 0 0.4em; border-radius: 0.6em; background: #eee; }
li.g3 .grade, li.g2 .grade { background: #c8e6c9; } li.g0 .grade { background: #ffcdd2; }
.docid { font-family: ui-monospace, monospace; } .moved { color: #666; margin-left: auto; }
.doc-title { font-size: 0.9em; margin: 0.2em 0; }
details.doc-text summary { font-size: 0.8em; color: #1565c0; cursor: pointer; }
details.doc-text .text { white-space: pre-wrap; font-size: 0.88em; margin-top: 0.3em; }
.cut, .no-text, .no-ranking { color: #777; font-style: italic; }
svg.gutter { width: 90px; height: 100%; overflow: visible; }
svg.gutter path { fill: none; stroke: var(--line); stroke-width: 1.5px; }
svg.gutter path.g3, svg.gutter path.g2 { stroke: #2e7d32; stroke-width: 2.5px; }
svg.gutter path.g1 { stroke: #81c784; } svg.gutter path.g0 { stroke: #e57373; }
svg.gutter path.unjudged { stroke-dasharray: 4 3; }
.tex-source, .tex-error { font-family: ui-monospace, monospace; font-size: 0.9em; }
.tex-error { text-decoration: underline wavy #c62828; }
.math.display { display: block; overflow-x: auto; }
"""


def _json_for_html(data: Any) -> str:
    """``data`` as JSON that no HTML parser reads as markup: ``<``, ``>``, ``&`` and the two
    JavaScript line separators escaped."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, escape in (
        ("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
        ("\u2028", "\\u2028"), ("\u2029", "\\u2029"),
    ):  # fmt: skip
        text = text.replace(char, escape)
    return text


_CLOSING_SCRIPT = re.compile("</(script)", re.IGNORECASE)


def _inline_script(code: str) -> str:
    """Code safe inside a ``<script>`` element (a ``</script`` in a string literal written
    ``<\\/script``, which JavaScript reads the same)."""
    return _CLOSING_SCRIPT.sub(r"<\\/\1", code)


def _source_hash(code: str) -> str:
    digest = hashlib.sha256(code.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def explorer_page(data: dict[str, Any], renderer: Katex | NoRenderer, footer: str = "") -> str:
    """The page for ``data`` (:func:`hybrid_ir.reports.explore.data.explorer_data`), with KaTeX
    inline when ``renderer`` is one; ``footer`` (provenance), if any, is a line of its own."""
    data = dict(data)
    if isinstance(renderer, Katex):
        data["renderer"] = {"name": "KaTeX", "version": renderer.version,
                            "source": renderer.source}  # fmt: skip
        scripts = [_inline_script(renderer.script), _inline_script(SCRIPT)]
        katex_style = f"<style>{renderer.style}</style>\n"
        math = f"Formulas: KaTeX {renderer.version} ({renderer.source}), inline."
    else:
        data["renderer"] = {"reason": renderer.reason}
        scripts = [_inline_script(SCRIPT)]
        katex_style = ""
        math = f"Formulas: shown as TeX source ({renderer.reason})."
    policy = (
        "default-src 'none'; script-src "
        + " ".join(_source_hash(code) for code in scripts)
        + "; style-src 'unsafe-inline'; font-src data:; img-src data:"
    )
    title = html.escape(str(data.get("title", "explorer")))
    about = html.escape(str(data.get("about", "")))
    lines = [
        "<!doctype html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Per-topic explorer: {title}</title>",
        katex_style + f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>Per-topic explorer: {title}</h1>",
        f'<p class="about">{about} {html.escape(math)}</p>',
        "<noscript><p>This page draws its charts and rankings with JavaScript, which is off: "
        "its data is in the explorer-data block of the page's source.</p></noscript>",
        '<main id="app"><p>Loading…</p></main>',
        f'<script type="application/json" id="explorer-data">{_json_for_html(data)}</script>',
        *(f"<script>{code}</script>" for code in scripts),
    ]
    if footer:
        lines.append(f'<p class="footer">{html.escape(footer)}</p>')
    lines += ["</body>", "</html>", ""]
    return "\n".join(lines)
