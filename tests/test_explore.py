"""The per-topic explorer (hybrid_ir.reports.explore.pages): a synthetic ARQMath-like table in the
official formats (canonical corpus and topics, TREC qrels and runs, a cross-validation report, the
table's per-topic scores as hybrid_ir.reports.tables.results writes them, a topic label table), with
every kind of bad input the page must survive; the page's data checked in Python, and the page
itself in headless Chromium (the report test's browser: Debian's chromium and chromium-driver, and
Debian's libjs-katex for the math); and ``hybrid-ir explore`` on the toy collection.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import quote

import pytest
from test_report import browser as _report_browser
from toy_workflow import DOCS, OTHER_RUN, QRELS, QUERIES

from hybrid_ir import paths
from hybrid_ir.cli.main import main
from hybrid_ir.data.qrels import read_qrels
from hybrid_ir.data.runs import ranked, read_run, topic_sort_key
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.evaluation.significance import paired_ttest
from hybrid_ir.fusion.crossval import crossvalidate_linear, report
from hybrid_ir.fusion.methods import linear
from hybrid_ir.reports.explore.data import ExplorerSettings, explorer_data, read_per_query
from hybrid_ir.reports.explore.inputs import PER_QUERY, explored_tables, explorer_inputs
from hybrid_ir.reports.explore.katex import (
    DEBIAN_KATEX,
    Katex,
    NoRenderer,
    katex_version,
    load_katex,
)
from hybrid_ir.reports.explore.page import _json_for_html
from hybrid_ir.reports.explore.pages import table_explorer, table_input
from hybrid_ir.reports.explore.rankings import fused_ranking
from hybrid_ir.reports.explore.stats import pair_stats, t_quantile
from hybrid_ir.reports.explore.text import formulas, segments, truncate
from hybrid_ir.reports.tables.results import score_rows, table_spec, write_per_query
from hybrid_ir.reports.tables.spec import source_key

browser = _report_browser  # the report test's headless Chromium (skips without it)

NAME = "syn-table"
INJECTED = '<script>window.__injected = 1;</script><img src=x onerror="window.__injected = 2">'
MALFORMED = "$\\frac{1}{2$"
TOPICS = {
    "T.1": ("Evaluate $\\int_0^1 x^2\\,dx$", "How do I compute $$\\int_0^1 x^2\\,dx$$ by hand?"),
    "T.2": ("Limits", "Show that $\\lim_{n\\to\\infty} (1+1/n)^n = e$, <b>not</b> by tables."),
    "T.3": ("Sums", "Is $\\sum_{k=1}^n k = n(n+1)/2$ true for every $n$?"),
    "T.4": ("Primes", "Are there infinitely many primes $p$?"),
}
CORPUS = {
    "d1": ("Power rule", "Integrate term by term: $x^3/3$ from 0 to 1 gives $\\frac{1}{3}$."),
    "d2": ("Riemann sums", "Take $\\sum_{i=1}^n (i/n)^2 \\cdot 1/n$ and let $n\\to\\infty$."),
    "d3": ("Injected", f"Careful: {INJECTED} and $a^2+b^2=c^2$ still holds."),
    "d4": ("Malformed", f"A formula that does not parse: {MALFORMED} and then text."),
    "d5": ("Euler", "By the binomial theorem $(1+1/n)^n \\to e$. " + "More words here. " * 100),
    "d6": ("Tables", "Look it up in a table."),
    "d7": ("Gauss", "Pair the terms: $1+n$, $2+(n-1)$, ..."),
    "d8": ("Euclid", "Suppose finitely many primes $p_1,\\dots,p_k$."),
}
JUDGED = {
    "T.1": {"d1": 3, "d2": 2, "d3": 0, "d4": 1},
    "T.2": {"d5": 3, "d6": 0, "d2": 1},
    "T.3": {"d7": 2, "d8": 0},
    "T.4": {"d1": 0, "d8": 2},
}
RUNS = {
    # T.9 is a topic the qrels lack; "ghost" a document the corpus lacks.
    "a": {"T.1": ["d1", "d2", "ghost", "d3"], "T.2": ["d5", "d2"], "T.3": ["d7"],
          "T.4": ["d8", "d1"], "T.9": ["d1"]},
    # No ranking at all for T.3: a system with no run for some topics.
    "b": {"T.1": ["d3", "d4", "d1", "d2"], "T.2": ["d6", "d5"], "T.4": ["d1", "d8"]},
}  # fmt: skip
TABLE = {
    "title": "Synthetic table: A, B and their cross-validated fusion",
    "collection": "syn",
    "topics": "t",
    "qrels": "t",
    "measures": ["arqmath"],
    "columns": ["nDCG'", "P'@10"],
    "reference": "A",
    "blocks": [
        {
            "name": "runs",
            "rows": [
                {"label": "A", "run": "a"},
                {"label": "B", "run": "b"},
                {"label": "A + B (cv)", "crossval": "syn-cv"},
            ],
        }
    ],
}
CONFIG = {
    "tables": {NAME: TABLE},
    "collections": {"syn": {"corpus": True, "tables": ["topic_labels"]}},
    "crossval": {"syn-cv": {"collection": "syn", "topics": "t", "dense": "a", "base": "b"}},
    "explore": {"tables": None, "label_table": "topic_labels"},
}
SETTINGS = ExplorerSettings(top_k=3, text_chars=200, label_order={"difficulty": ["Low", "High"]})
HAS_KATEX = (Path(DEBIAN_KATEX) / "katex.min.js").is_file()


def _write_jsonl(path: Path, records: dict[str, tuple[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, (t, x) in records.items()
        )
    )


def _write_run(path: Path, run: dict[str, list[str]], tag: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        f"{topic} Q0 {doc} {rank} {10 - rank} {tag}\n"
        for topic, docs in run.items()
        for rank, doc in enumerate(docs, start=1)
    ]
    path.write_text("".join(lines))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The synthetic collection, runs, cross-validation and table scores under a root; the
    explorer's inputs (absolute paths) by the names the workflow's rule gives them."""
    root = tmp_path_factory.mktemp("explore")
    _write_jsonl(root / paths.corpus("syn"), CORPUS)
    _write_jsonl(root / paths.topics("syn", "t"), TOPICS)
    qrels = root / paths.qrels("syn", "t")
    qrels.parent.mkdir(parents=True, exist_ok=True)
    qrels.write_text(
        "".join(f"{t} 0 {d} {g}\n" for t, docs in JUDGED.items() for d, g in docs.items())
    )
    labels = root / paths.table("syn", "topic_labels")
    labels.parent.mkdir(parents=True, exist_ok=True)
    # T.2 has no row: a label file missing a topic.
    labels.write_text(
        "topic_id\tset\tcategory\tdifficulty\nT.1\tt\tComputation\tHigh\n"
        "T.3\tt\tProof\tLow\nT.4\tt\tProof\tHigh\nT.5\tother\tConcept\tLow\n"
    )
    for system, run in RUNS.items():
        _write_run(root / paths.run("syn", "t", system), run, system)
    results = crossvalidate_linear(
        read_run(root / paths.run("syn", "t", "a")), read_run(root / paths.run("syn", "t", "b")),
        read_qrels(qrels), ["arqmath"], alphas=[0.2, 0.8], k_folds=2, seed=7,
    )  # fmt: skip
    crossval = root / paths.crossval("syn-cv")
    crossval.parent.mkdir(parents=True, exist_ok=True)
    crossval.write_text(json.dumps(report(results), indent=1, sort_keys=True))
    inputs = {
        key: str(root / path) for key, path in explorer_inputs(NAME, CONFIG, paths.run).items()
    }
    sources = {
        source_key("A", ""): inputs["row//A"],
        source_key("B", ""): inputs["row//B"],
        source_key("A + B (cv)", ""): inputs["row//A + B (cv)"],
        source_key("qrels", ""): str(qrels),
    }
    spec = table_spec(NAME, TABLE, sources)
    per_query, _ = score_rows(spec, sources)
    Path(inputs[PER_QUERY]).parent.mkdir(parents=True, exist_ok=True)
    write_per_query(spec, per_query, inputs[PER_QUERY])
    return root, inputs


@pytest.fixture(scope="module")
def data(synthetic) -> dict:
    return explorer_data(table_input(NAME, TABLE, synthetic[1]), SETTINGS)


@pytest.fixture(scope="module")
def pages(synthetic, tmp_path_factory) -> dict[str, Path]:
    """The page with KaTeX (where Debian's libjs-katex is installed) and without a renderer."""
    folder = tmp_path_factory.mktemp("pages")
    built = {}
    for kind, katex in (("katex", DEBIAN_KATEX), ("plain", folder / "no-katex")):
        page = table_explorer(NAME, TABLE, synthetic[1], SETTINGS, katex, "footer line")
        built[kind] = folder / f"{kind}.html"
        built[kind].write_text(page, encoding="utf-8")
    return built


# --- text, statistics, renderer ---------------------------------------------------------------


def test_formulas_are_found_as_the_page_splits_them():
    text = "Cost \\$5, $x^2$ and $$\\int f$$ or \\(a\\), \\[b\\]; $unclosed"
    assert formulas(text) == ["x^2", "\\int f", "a", "b"]
    assert [s.display for s in segments(text) if s.tex is not None] == [False, True, False, True]
    assert "".join(text[s.start : s.end] for s in segments(text)) == text


def test_a_cut_text_never_ends_inside_a_formula():
    text = "Intro words $\\frac{a}{b} + c$ tail"
    for limit in range(1, len(text) + 2):
        kept, left_out = truncate(text, limit)
        assert len(kept) <= limit
        assert kept.count("$") % 2 == 0, (limit, kept)
        assert left_out == len(text) - len(kept)
    assert truncate(text, 14) == ("Intro words", len(text) - len("Intro words"))
    assert truncate("short", 10) == ("short", 0)


def test_pair_statistics_are_the_tables_t_test_with_the_t_interval():
    system = {"q1": 0.5, "q2": 0.7, "q3": 0.2, "q4": 0.4}
    baseline = {"q1": 0.1, "q2": 0.7, "q3": 0.3, "q5": 0.9}
    stats = pair_stats(system, baseline)
    differences = [0.4, 0.0, -0.1]
    mean = sum(differences) / 3
    sd = (sum((d - mean) ** 2 for d in differences) / 2) ** 0.5
    assert (stats.n, stats.wins, stats.losses, stats.ties) == (3, 1, 1, 1)
    assert stats.mean == pytest.approx(mean)
    assert stats.high - stats.mean == pytest.approx(t_quantile(2) * sd / 3**0.5)
    assert stats.p == paired_ttest(system, baseline).pvalue
    constant = pair_stats({"q1": 1.0, "q2": 1.0}, {"q1": 0.5, "q2": 0.5})
    assert constant.low is None and constant.p == 0.0


def test_katex_is_inlined_with_its_fonts_or_its_absence_explained(tmp_path):
    assert isinstance(load_katex(tmp_path / "none"), NoRenderer)
    assert "libjs-katex" in load_katex(tmp_path / "none").reason
    assert katex_version(tmp_path / "none") == "none"
    (tmp_path / "fonts").mkdir()
    (tmp_path / "katex.min.js").write_text('var katex={version:"0.16.9"};')
    (tmp_path / "katex.min.css").write_text(
        "@font-face{font-family:A;src:url(fonts/A.woff2) format('woff2'),url(fonts/A.woff) "
        "format('woff');font-weight:400}@font-face{font-family:B;src:url(fonts/B.woff2) "
        "format('woff2')}.katex{color:red}"
    )
    (tmp_path / "fonts" / "A.woff2").write_bytes(b"wOF2font")
    loaded = load_katex(tmp_path)
    assert isinstance(loaded, Katex) and loaded.version == "0.16.9" and loaded.fonts == 1
    assert "src:url(data:font/woff2;base64,d09GMmZvbnQ=) format('woff2');font-weight:400" in (
        loaded.style
    )
    assert "fonts/" not in loaded.style and ".katex{color:red}" in loaded.style
    assert katex_version(tmp_path) == f"KaTeX 0.16.9 ({tmp_path})"


# --- the page's data ----------------------------------------------------------------------------


def test_which_tables_get_a_page():
    one_row = {"blocks": [{"rows": [{"label": "A", "run": "a"}]}]}
    one_topic = {"blocks": [{"topic": "39", "rows": [{"label": "A", "run": "a"},
                                                     {"label": "B", "run": "b"}]}]}  # fmt: skip
    config = {"tables": {NAME: TABLE, "one-row": one_row, "one-topic": one_topic},
              "explore": {"tables": None}}  # fmt: skip
    assert explored_tables(config) == [NAME]
    config["explore"]["tables"] = ["one-row"]
    assert explored_tables(config) == ["one-row"]
    config["explore"]["tables"] = ["no-such-table"]
    with pytest.raises(ConfigError, match=r"^config: explore\.tables: 'no-such-table' is not a"):
        explored_tables(config)


def test_the_data_says_what_each_input_lacks(data, synthetic):
    root, inputs = synthetic
    notes = " ".join(data["notes"])
    assert "A ranks 1 topic(s) that" in notes and "(T.9)" in notes
    assert "1 document(s) of the rankings' top 3 are not in" in notes and "(e.g. ghost)" in notes
    corpus = data["corpora"][inputs["corpus/"]]["docs"]
    assert corpus["ghost"] is None and corpus["d1"][0] == "Power rule"
    space = data["spaces"][0]
    assert space["labels"]["missing"] == ["T.2"]
    assert space["labels"]["order"] == {"category": ["Computation", "Proof"],
                                        "difficulty": ["Low", "High"]}  # fmt: skip
    assert "T.9" not in space["order"] and space["order"] == ["T.1", "T.2", "T.3", "T.4"]
    b = next(i for i, s in enumerate(data["systems"]) if s["label"] == "B")
    # B has no run for T.3: no score (prime measures skip it), no document ranked there.
    assert "T.3" not in data["scores"]["nDCG'"][str(b)]
    ranker = data["systems"][b]["rankers"]["0"]
    assert not any(space["ranks"]["T.3"]["ranks"][ranker])


def test_texts_and_rankings_are_cut_to_the_configured_size(data):
    for record in data["corpora"][next(iter(data["corpora"]))]["docs"].values():
        if record is not None:
            assert len(record[0]) <= SETTINGS.text_chars and len(record[2]) <= SETTINGS.text_chars
    euler = data["corpora"][next(iter(data["corpora"]))]["docs"]["d5"]
    assert euler[3] == len(CORPUS["d5"][1]) - len(euler[2]) > 0
    space = data["spaces"][0]
    for entry in space["ranks"].values():
        for ranks in entry["ranks"]:
            assert sum(1 for rank in ranks if 1 <= rank <= SETTINGS.top_k) <= SETTINGS.top_k


def test_a_cross_validated_row_shows_the_fusion_each_topic_was_scored_on(data, synthetic):
    _, inputs = synthetic
    cv = json.loads(Path(inputs["row//A + B (cv)"]).read_text())
    dense, base = read_run(inputs["dense/syn-cv"]), read_run(inputs["base/syn-cv"])
    space = data["spaces"][0]
    system = next(s for s in data["systems"] if s["label"] == "A + B (cv)")
    for fold, topics in enumerate(cv["folds"]):
        alpha = cv["columns"]["nDCG'"]["folds"][fold]["param"]
        for topic in topics:
            ranker = system["rankers"]["0"]["by_measure"]["nDCG'"][topic]
            assert space["rankers"][ranker]["alpha"] == alpha
            entry = space["ranks"][topic]
            shown = sorted((r, d) for r, d in zip(entry["ranks"][ranker], entry["docs"],
                                                  strict=True) if r)  # fmt: skip
            expected = [doc for doc, _ in ranked(linear(dense, base, alpha)[topic])]
            assert [d for _, d in shown] == expected[: len(shown)]
            assert fused_ranking(dense, base, alpha, 3)[topic] == expected[:3]


def test_the_p_value_of_a_row_against_the_reference_is_the_tables(data, synthetic):
    scores = read_per_query(synthetic[1][PER_QUERY])
    labels = [s["label"] for s in data["systems"]]
    for column in TABLE["columns"]:
        row = data["pairs"][column]["0,1"]  # A (the reference) against B
        assert row[4] == paired_ttest(scores["A"][column], scores["B"][column]).pvalue
        assert row[0] == len(scores["A"][column].keys() & scores["B"][column].keys())
    assert data["defaults"] == {"system": labels.index("A"), "baseline": labels.index("B")}


def test_a_malformed_per_topic_line_is_one_line_naming_file_and_line(tmp_path):
    path = tmp_path / "t.per_query.tsv"
    path.write_text("run\tcolumn\ttopic\tvalue\nA\tP@1\tq1\t0.5\nA\tP@1\tq2\tlots\n")
    with pytest.raises(InputFormatError, match=r"t\.per_query\.tsv:3: score 'lots' is no number"):
        read_per_query(str(path))


def test_the_page_is_deterministic_and_no_input_text_is_markup(pages, synthetic):
    again = table_explorer(NAME, TABLE, synthetic[1], SETTINGS, DEBIAN_KATEX, "footer line")
    text = pages["katex"].read_text(encoding="utf-8")
    assert again == text
    block = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', text,
                      re.S).group(1)  # fmt: skip
    assert "<" not in block and "window.__injected" in block
    assert json.loads(_json_for_html({"x": "</script><b>&"})) == {"x": "</script><b>&"}
    # Only the page's own scripts may run: each is named by its sha256 in the policy.
    policy = re.search(r'Content-Security-Policy" content="([^"]+)"', text).group(1)
    scripts = re.findall(r"<script>(.*?)</script>", text, re.S)
    assert len(scripts) == (2 if HAS_KATEX else 1)
    assert policy.count("'sha256-") == len(scripts) and "default-src 'none'" in policy
    assert text.count('\n<p class="footer">footer line</p>\n') == 1


# --- the page in a browser ----------------------------------------------------------------------


def _open(driver, page: Path, hash_: str = ""):
    from selenium.webdriver.common.by import By

    driver.get("about:blank")
    driver.get(page.as_uri() + hash_)
    driver.find_element(By.CSS_SELECTOR, "body[data-ready='true']")


def _select(driver, element_id: str, text: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(driver.find_element(By.ID, element_id)).select_by_visible_text(text)


def _ranking(driver, side: str) -> list[tuple[str, str]]:
    """(document id, grade label) of one side's list, in rank order."""
    from selenium.webdriver.common.by import By

    items = driver.find_elements(By.CSS_SELECTOR, f".ranking.{side} li.doc")
    return [
        (item.get_attribute("data-doc"), item.find_element(By.CSS_SELECTOR, ".grade").text)
        for item in items
    ]


def _grade(topic: str, doc: str) -> str:
    grade = JUDGED[topic].get(doc)
    return "unjudged" if grade is None else f"grade {grade}"


def test_the_explorer_in_a_browser(pages, synthetic, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    if not HAS_KATEX and os.environ.get("HYBRID_IR_REQUIRE_BROWSER") == "1":
        pytest.fail(f"no KaTeX at {DEBIAN_KATEX} (Debian's libjs-katex)")
    if not HAS_KATEX:
        pytest.skip(f"no KaTeX at {DEBIAN_KATEX} (Debian's libjs-katex)")
    scores = read_per_query(synthetic[1][PER_QUERY])
    _open(browser, pages["katex"])
    _select(browser, "system", "A")
    _select(browser, "baseline", "B")
    _select(browser, "measure", "nDCG'")

    # The bar chart: one bar per topic both score, sorted by difference, coloured by outcome.
    a, b = scores["A"]["nDCG'"], scores["B"]["nDCG'"]
    shared = sorted(a.keys() & b.keys(), key=lambda t: (-(a[t] - b[t]), topic_sort_key(t)))
    bars = browser.find_elements(By.CSS_SELECTOR, "#chart rect.bar")
    assert [bar.get_attribute("data-topic") for bar in bars] == shared
    kinds = [bar.get_attribute("class").split()[1] for bar in bars]
    expected = ["win" if a[t] - b[t] > 1e-12 else "loss" if a[t] - b[t] < -1e-12 else "tie"
                for t in shared]  # fmt: skip
    assert kinds == expected
    summary = browser.find_element(By.ID, "summary").text
    stats = pair_stats(a, b)
    assert f"mean difference {stats.mean:+.3f}" in summary and f"{stats.wins} wins" in summary
    assert f"p = {float(f'{stats.p:.2g}'):g}" in summary, summary
    # T.3: A scores it, B has no run for it; the page says so where it lists the topics.
    assert "T.3: no nDCG' score for B" in browser.find_element(By.ID, "missing").text
    # The label breakdown, and the topic without a label row named.
    breakdown = browser.find_element(By.ID, "breakdown").text
    assert "category" in breakdown and "Computation" in breakdown
    assert "no row in" in breakdown and "T.2" in breakdown

    # A topic: its query's math rendered, both rankings with grades, lines between them.
    browser.find_element(By.CSS_SELECTOR, "#chart rect.bar[data-topic='T.1']").click()
    heading = browser.find_element(By.ID, "topic-heading")
    assert "T.1" in heading.text and heading.find_elements(By.CSS_SELECTOR, ".katex")
    assert browser.find_elements(By.CSS_SELECTOR, "#query .katex-display")
    left, right = _ranking(browser, "left"), _ranking(browser, "right")
    assert left == [(d, _grade("T.1", d)) for d in RUNS["a"]["T.1"][: SETTINGS.top_k]]
    assert right == [(d, _grade("T.1", d)) for d in RUNS["b"]["T.1"][: SETTINGS.top_k]]
    both = {d for d, _ in left} & {d for d, _ in right}
    links = browser.find_elements(By.CSS_SELECTOR, "svg.gutter path.link")
    assert {link.get_attribute("data-doc") for link in links} == both
    ghost = browser.find_element(By.CSS_SELECTOR, ".ranking.left li[data-doc='ghost']")
    assert "not in the corpus" in ghost.text

    # A document's text: math rendered; injected markup shown as text, never run.
    scripts = len(browser.find_elements(By.TAG_NAME, "script"))
    for doc in ("d1", "d3", "d4"):
        item = browser.find_element(By.CSS_SELECTOR, f".rankings li[data-doc='{doc}']")
        item.find_element(By.TAG_NAME, "summary").click()
    d1 = browser.find_element(By.CSS_SELECTOR, ".rankings li[data-doc='d1'] .text")
    assert d1.find_elements(By.CSS_SELECTOR, ".katex")
    d3 = browser.find_element(By.CSS_SELECTOR, ".rankings li[data-doc='d3'] .text")
    assert "<script>window.__injected = 1;</script>" in d3.text
    assert not d3.find_elements(By.CSS_SELECTOR, "script, img")
    assert browser.execute_script("return window.__injected === undefined")
    assert len(browser.find_elements(By.TAG_NAME, "script")) == scripts
    error = browser.find_element(By.CSS_SELECTOR, ".rankings li[data-doc='d4'] .tex-error")
    assert error.text == MALFORMED and "not rendered" in error.get_attribute("title")

    # The address keeps the view; a link opens it again. Keys move between topics.
    state = browser.execute_script("return location.hash")
    assert "topic=T.1" in state and "system=A" in state and "measure=nDCG" in state
    ActionChains(browser).send_keys(Keys.ARROW_RIGHT).perform()
    following = shared[min(shared.index("T.1") + 1, len(shared) - 1)]
    assert following in browser.find_element(By.ID, "topic-heading").text
    _open(browser, pages["katex"], "#system=B&baseline=A&measure=" + quote("P'@10") + "&topic=T.4")
    assert browser.find_element(By.ID, "system").get_attribute("value") == "1"
    assert "T.4" in browser.find_element(By.ID, "topic-heading").text
    assert browser.find_element(By.ID, "measure").find_element(
        By.CSS_SELECTOR, "option:checked").text == "P'@10"  # fmt: skip
    # B's list is on the left now, A's on the right; T.3 in B's list: no ranking.
    assert _ranking(browser, "left") == [(d, _grade("T.4", d)) for d in RUNS["b"]["T.4"]]
    browser.find_element(By.CSS_SELECTOR, "#missing a[data-topic='T.3']").click()
    assert "ranks no document" in browser.find_element(By.CSS_SELECTOR, ".ranking.left").text
    # Nothing was fetched from a network.
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(entry => entry.name)"
    )
    assert [url for url in resources if not url.startswith(("data:", "file:", "blob:"))] == []


def test_without_a_renderer_the_page_shows_tex_and_says_so(pages, browser):
    from selenium.webdriver.common.by import By

    _open(browser, pages["plain"], "#topic=T.1")
    notice = browser.find_element(By.ID, "renderer-notice").text
    assert "shown as TeX source" in notice and "libjs-katex" in notice
    query = browser.find_element(By.ID, "query")
    assert "$$\\int_0^1 x^2\\,dx$$" in query.text
    assert query.find_elements(By.CSS_SELECTOR, ".tex-source")
    assert not browser.find_elements(By.CSS_SELECTOR, ".katex")
    assert browser.find_elements(By.CSS_SELECTOR, "#chart rect.bar")


# --- hybrid-ir explore on the toy collection -----------------------------------------------------


@pytest.fixture
def toy_files(tmp_path) -> dict[str, str]:
    """The toy collection (tests/toy_workflow.py) as canonical files, and two runs: the other
    system's and one that ranks the relevant document first."""
    corpus, topics = tmp_path / "corpus.jsonl", tmp_path / "topics.jsonl"
    _write_jsonl(corpus, {doc: (title, text) for doc, title, text in DOCS})
    _write_jsonl(topics, {topic: ("", text) for topic, text in QUERIES})
    qrels = tmp_path / "test.qrels"
    qrels.write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in QRELS))
    other = tmp_path / "other.tsv"
    other.write_bytes(OTHER_RUN)
    best = tmp_path / "best.trec"
    _write_run(best, {"q1": ["d1", "d3"], "q2": ["d2"]}, "best")
    return {"corpus": str(corpus), "topics": str(topics), "qrels": str(qrels),
            "other": str(other), "best": str(best), "dir": str(tmp_path)}  # fmt: skip


def test_hybrid_ir_explore_on_the_toy_collection(toy_files, capsys):
    page = Path(toy_files["dir"]) / "page.html"
    argv = ["explore", "--qrels", toy_files["qrels"], "--topics", toy_files["topics"],
            "--corpus", toy_files["corpus"], toy_files["best"], toy_files["other"],
            "--top-k", "2", "-o", str(page)]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"{page}: ") and out.rstrip().endswith("bytes, 2 runs")
    assert "measures: beir" in err
    text = page.read_text(encoding="utf-8")
    data = json.loads(re.search(r'id="explorer-data">(.*?)</script>', text, re.S).group(1))
    assert [s["label"] for s in data["systems"]] == ["best", "other"]
    assert data["defaults"] == {"system": 0, "baseline": 1}
    assert [m["key"] for m in data["measures"]] == ["nDCG@10", "R@100", "R@1000"]
    assert data["scores"]["nDCG@10"]["0"] == {"q1": 1.0, "q2": 1.0}
    assert data["spaces"][0]["ranks"]["q1"]["docs"] == ["d1", "d3"]
    assert data["spaces"][0]["topics"]["q1"][2] == "why do zebra have stripes"
    assert main(argv) == 0 and page.read_text(encoding="utf-8") == text  # the same bytes


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda argv: argv[:-3] + ["-o", argv[-1]], "explore needs two runs or more"),
        (lambda argv: argv + ["--top-k", "0"], "--top-k must be at least 1, got 0"),
    ],
)
def test_hybrid_ir_explore_refuses_in_one_line(toy_files, capsys, change, problem):
    page = str(Path(toy_files["dir"]) / "page.html")
    argv = ["explore", "--qrels", toy_files["qrels"], "--topics", toy_files["topics"],
            "--corpus", toy_files["corpus"], toy_files["best"], toy_files["other"],
            "-o", page]  # fmt: skip
    argv = change(argv)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("hybrid-ir error: ") and problem in err and err.count("\n") == 1
    assert not Path(page).exists()
