"""Paper 000's Table 2 built by the workflow from an NTCIR-12 Wiki-Formula fixture in the official
formats (topics XML, aggregated qrels, the corpus archive of XHTML articles), with
configs/ntcir12.yaml's entries: the concrete topics searched, the wildcard topic not."""

from __future__ import annotations

import csv
import json

import ir_measures
import pytest
import yaml
from test_collections_ntcir import article_xhtml, math_element, tar_bytes
from test_workflow import REPO, snakemake, write_manifest

MATH = "http://www.w3.org/1998/Math/MathML"
QUERIES = {
    "NTCIR12-MathWiki-1": "x^{2}+y^{2}=z^{2}",
    "NTCIR12-MathWiki-2": "\\int_{a}^{b}f(x)dx",
    "NTCIR12-MathWiki-3": "\\frac{n!}{k!(n-k)!}",
    "NTCIR12-MathWiki-4": "e^{i\\pi}+1=0",
    "NTCIR12-MathWiki-21": "\\qvar{*1*}^{2}",  # a wildcard topic: not searched
}
FORMULAS = [
    ("Pythagorean_theorem:0", "a^{2}+b^{2}=c^{2}"),
    ("Pythagorean_theorem:3", "c=\\sqrt{a^{2}+b^{2}}"),
    ("Integral:1", "\\int_{0}^{1}g(t)dt"),
    ("Integral:7", "\\int f"),
    ("Binomial_coefficient:197", "\\frac{m!}{j!(m-j)!}"),
    ("Binomial_coefficient:4", "\\binom{n}{k}"),
    ("Euler's_identity:0", "e^{i\\pi}=-1"),
    ("Euler's_identity:2", "e^{ix}=\\cos x+i\\sin x"),
]
JUDGMENTS = [
    ("NTCIR12-MathWiki-1", "Pythagorean_theorem:0", 4),
    ("NTCIR12-MathWiki-1", "Pythagorean_theorem:3", 1),
    ("NTCIR12-MathWiki-1", "Integral:7", 0),
    ("NTCIR12-MathWiki-2", "Integral:1", 3),
    ("NTCIR12-MathWiki-2", "Integral:7", 2),
    ("NTCIR12-MathWiki-2", "Binomial_coefficient:4", 0),
    ("NTCIR12-MathWiki-3", "Binomial_coefficient:197", 4),
    ("NTCIR12-MathWiki-3", "Binomial_coefficient:4", 3),
    ("NTCIR12-MathWiki-3", "Euler's_identity:2", 0),
    ("NTCIR12-MathWiki-4", "Euler's_identity:0", 4),
    ("NTCIR12-MathWiki-4", "Euler's_identity:2", 1),
    ("NTCIR12-MathWiki-4", "Pythagorean_theorem:0", 0),
    ("NTCIR12-MathWiki-21", "Pythagorean_theorem:0", 4),
]


def topics_xml() -> bytes:
    topics = "".join(
        f'<topic><num>{number}</num><query><formula id="f.0"><math><semantics>'
        f"{'<qvar>*1*</qvar>' if 'qvar' in tex else '<mi>x</mi>'}"
        f'<annotation encoding="application/x-tex">{tex}</annotation></semantics></math>'
        "</formula></query></topic>"
        for number, tex in QUERIES.items()
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><topics xmlns="{MATH}">{topics}</topics>'.encode()
    )


def corpus() -> bytes:
    """The corpus archive: each article's formulas at their positions, the positions between
    them taken by formulas without TeX (counted, not documents)."""
    positions: dict[str, dict[int, str]] = {}
    for formula_id, tex in FORMULAS:
        article, _, position = formula_id.rpartition(":")
        positions.setdefault(article, {})[int(position)] = tex.replace("&", "&amp;")
    articles = {
        f"wpmath0000001/Articles/{article}.html": article_xhtml(
            article,
            [
                math_element(f"{article}:{n}", by_position.get(n))
                for n in range(max(by_position) + 1)
            ],
        )
        for article, by_position in positions.items()
    }
    return tar_bytes({"MathTagArticles/wpmath0000001.tar.bz2": tar_bytes(articles)})


@pytest.fixture(scope="module")
def table2(tmp_path_factory):
    root = tmp_path_factory.mktemp("ntcir12")
    files = {
        "ntcir/topics.xml": topics_xml(),
        "ntcir/qrels-test.dat": "".join(f"{t} xxx {d} {r}\n" for t, d, r in JUDGMENTS).encode(),
        "ntcir/corpus.tar.bz2": corpus(),
    }
    for name, content in files.items():
        (root / "mirror" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "mirror" / name).write_bytes(content)
    write_manifest(root / "manifest.tsv", files)
    overlay = yaml.safe_load((REPO / "configs" / "ntcir12.yaml").read_text(encoding="utf-8"))
    overlay["collections"]["ntcir12"] |= {
        "reader": "ntcir12_wiki_formula",
        "sources": {
            "topics": "ntcir/topics.xml",
            "qrels_test": "ntcir/qrels-test.dat",
            "articles": "ntcir/corpus.tar.bz2",
        },
        "topics": ["all", "test", "concrete"],
        "qrels": ["all", "test", "concrete"],
    }
    for entry in overlay["crossval"].values():
        entry["folds"] = 2
    table = overlay["tables"]["paper000-table2"]
    table["published_from"] = str(REPO / table["published_from"])
    config = overlay | {
        "mirror": str(root / "mirror"),
        "manifest": str(root / "manifest.tsv"),
        "run_depth": 10,
        "bm25": {"k1": 0.9, "b": 0.4, "experiments": {}},
        "expected": [],
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True))
    done = snakemake(root)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root


def test_table2_has_the_paper_layout_and_our_scores(table2):
    with open(table2 / "results/tables/paper000-table2.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    labels = list(dict.fromkeys(row["run"] for row in rows))
    assert labels[:5] == [
        "(1) MCAT (2016)",
        "(2) Tangent-S (2017)",
        "(3) Tangent-CFT (2019)",
        "(4) GNN (2021)",
        "(5) MathBERT (2021)",
    ]
    assert {row["marker"] for row in rows if row["run"] in labels[:5]} == {"published-only"}
    labels = labels[5:]
    assert labels == [
        "Approach0 (pya0 engine, this workflow)",
        "Dense (MiniLM)",
        "Approach0 + dense, rerank",
        "Approach0 + dense, fusion",
    ]
    assert {row["column"] for row in rows} == {"Part. BPref", "Full BPref"}
    published = {(row["run"], row["column"]): row["published"] for row in rows}
    assert published[(labels[0], "Part. BPref")] == "0.54"
    assert published[(labels[-1], "Full BPref")] == "0.7"
    # Approach0's Part. BPref is what ir_measures computes from the run file and the qrels.
    qrels = list(
        ir_measures.read_trec_qrels(
            str(table2 / "results/collections/ntcir12/qrels/concrete.qrels")
        )
    )
    run = list(
        ir_measures.read_trec_run(str(table2 / "results/runs/ntcir12/concrete/approach0-pya0.trec"))
    )
    assert {judgment.query_id for judgment in qrels} == set(list(QUERIES)[:4])
    expected = ir_measures.calc_aggregate([ir_measures.Bpref(rel=1)], qrels, run)
    value = next(
        float(r["value"]) for r in rows if r["run"] == labels[0] and r["column"] == "Part. BPref"
    )
    assert value == pytest.approx(expected[ir_measures.Bpref(rel=1)], abs=1e-9)


def test_structure_search_ranks_the_same_structure_first(table2):
    run = (table2 / "results/runs/ntcir12/concrete/approach0-pya0.trec").read_text().splitlines()
    first = {}
    for line in run:
        topic, _, doc, rank, *_ = line.split()
        if rank == "1":
            first[topic] = doc
    assert set(first) == set(list(QUERIES)[:4])  # the wildcard topic is not searched
    assert first["NTCIR12-MathWiki-1"] == "Pythagorean_theorem:0"
    assert first["NTCIR12-MathWiki-3"] == "Binomial_coefficient:197"
    queries = [
        json.loads(line)
        for line in (table2 / "results/runs/ntcir12/concrete/approach0-pya0.queries.jsonl").open()
    ]
    assert [q["keywords"] for q in queries][0] == [
        {"type": "tex", "str": "x^{2}+y^{2}=z^{2}", "boost": 1.0}
    ]
    stats = json.loads((table2 / "results/indexes/ntcir12/approach0-pya0.stats.json").read_text())
    assert stats["documents"] == len(FORMULAS) and stats["formulas"] == len(FORMULAS)
