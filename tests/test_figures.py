"""Figures: both files written, PNG of the expected size, SVG searchable and reproducible."""

from __future__ import annotations

import copy
import logging
from pathlib import Path

import matplotlib.image
import pytest
import yaml

from hybrid_ir.config import validate_config
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.figures import (
    DPI,
    FIGSIZE,
    draw,
    fused_rank_rows,
    label_bar_figure,
    label_panels,
    metric_vs_parameter,
    pr_curves,
    read_topic_labels,
    recall_at_k_curve,
)
from hybrid_ir.runs import read_run

REPO = Path(__file__).resolve().parents[1]

CURVES = {
    "VSR": [0.85, 0.70, 0.55, 0.45, 0.38, 0.30, 0.23, 0.17, 0.12, 0.08, 0.05],
    "SPECTER2": [0.88, 0.73, 0.56, 0.45, 0.37, 0.30, 0.23, 0.17, 0.12, 0.08, 0.05],
    "Hybrid": [0.90, 0.78, 0.62, 0.50, 0.42, 0.34, 0.27, 0.20, 0.14, 0.10, 0.06],
}


def _check_png(path):
    pixels = matplotlib.image.imread(path)
    assert pixels.shape[:2] == (FIGSIZE[1] * DPI, FIGSIZE[0] * DPI)


def test_pr_curves_writes_png_and_reproducible_svg(tmp_path):
    png, svg = pr_curves(CURVES, tmp_path / "fig2_pr", "Cystic Fibrosis")
    assert (png.name, svg.name) == ("fig2_pr.png", "fig2_pr.svg")
    _check_png(png)
    text = svg.read_text(encoding="utf-8")
    for label in ("Recall", "Interpolated precision", "Cystic Fibrosis", *CURVES):
        assert f">{label}</text>" in text
    first_svg, first_png = svg.read_bytes(), png.read_bytes()
    pr_curves(CURVES, tmp_path / "fig2_pr", "Cystic Fibrosis")
    assert svg.read_bytes() == first_svg and png.read_bytes() == first_png
    assert sorted(path.name for path in tmp_path.iterdir()) == ["fig2_pr.png", "fig2_pr.svg"]


def test_pr_curves_needs_eleven_points(tmp_path):
    with pytest.raises(ValueError, match="11"):
        pr_curves({"VSR": [1.0, 0.5]}, tmp_path / "pr", "x")
    assert not list(tmp_path.iterdir())


def test_metric_vs_parameter_marks_best_and_references(tmp_path):
    lambdas = [i / 10 for i in range(11)]
    ndcg = [0.45, 0.46, 0.47, 0.48, 0.49, 0.50, 0.505, 0.51, 0.5151, 0.50, 0.48]
    png, svg = metric_vs_parameter(
        lambdas,
        {"Hybrid": ndcg},
        tmp_path / "lambda",
        "λ (dense weight)",
        "NDCG@10",
        "λ ablation",
        references={"VSR": 0.45, "Dense": 0.48},
    )
    _check_png(png)
    text = svg.read_text(encoding="utf-8")
    for label in ("λ (dense weight)", "NDCG@10", "Hybrid", "VSR", "Dense", "0.5151"):
        assert f">{label}</text>" in text
    _, plain = metric_vs_parameter(
        lambdas, {"Hybrid": ndcg}, tmp_path / "plain", "λ", "NDCG@10", "t", mark_best=False
    )
    assert ">0.5151</text>" not in plain.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="2 values for 11"):
        metric_vs_parameter(lambdas, {"Hybrid": [0.1, 0.2]}, tmp_path / "bad", "λ", "y", "t")


def test_recall_at_k_curve(tmp_path):
    curves = {"BM25": {100: 0.8, 1: 0.3, 10: 0.6}, "TF-IDF": {1: 0.2, 10: 0.5, 100: 0.75}}
    png, svg = recall_at_k_curve(curves, tmp_path / "recall", "Recall@k, EN dev", log_x=True)
    _check_png(png)
    text = svg.read_text(encoding="utf-8")
    for label in ("k (documents retrieved)", "Recall@k", "BM25", "TF-IDF", "Recall@k, EN dev"):
        assert f">{label}</text>" in text


# by_label (paper 000 Fig. 2) -------------------------------------------------------------------
#
# RR (relevance >= 1) per topic, read off the runs below:
#
#          A.1  A.2  A.3  A.4  A.5        category     dependency  difficulty
#   DPR    1    1/2  1/3  0    1     A.1  Proof        Text        Low
#   A0     1/2  1    1    1/4  0     A.2  Proof        Formula     High
#                                    A.3  Calculation  Formula     Low
#                                    A.4  Concept      Both        Medium
#
# A.5 has a label row of set s2 only, so it is unlabelled for set s1 and left out; A.9 is
# labelled but not judged, so it counts nowhere.

LABEL_QRELS = {
    "A.1": {"d1": 3, "d2": 0},
    "A.2": {"d3": 2},
    "A.3": {"d4": 1},
    "A.4": {"d5": 3},
    "A.5": {"d6": 2},
}
LABEL_RUNS = {
    "DPR": {
        "A.1": {"d1": 3.0, "d2": 2.0},
        "A.2": {"x": 2.0, "d3": 1.0},
        "A.3": {"x": 3.0, "y": 2.0, "d4": 1.0},
        "A.4": {"x": 1.0},
        "A.5": {"d6": 1.0},
    },
    "A0": {
        "A.1": {"x": 2.0, "d1": 1.0},
        "A.2": {"d3": 1.0},
        "A.3": {"d4": 1.0},
        "A.4": {"x": 4.0, "y": 3.0, "z": 2.0, "d5": 1.0},
    },
}
LABEL_TABLE = """\
topic_id\tset\tcategory\tdifficulty\tdependency
A.1\ts1\tProof\tLow\tText
A.2\ts1\tProof\tHigh\tFormula
A.3\ts1\tCalculation\tLow\tFormula
A.4\ts1\tConcept\tMedium\tBoth
A.9\ts1\tConcept\tLow\tText
A.5\ts2\tProof\tLow\tText
"""
# label column -> (value, topic count, DPR mean, A0 mean) in drawing order
LABEL_MEANS = {
    "category": [
        ("Calculation", 1, 1 / 3, 1.0),
        ("Concept", 1, 0.0, 1 / 4),
        ("Proof", 2, (1 + 1 / 2) / 2, (1 / 2 + 1) / 2),
    ],
    "dependency": [
        ("Both", 1, 0.0, 1 / 4),
        ("Formula", 2, (1 / 2 + 1 / 3) / 2, 1.0),
        ("Text", 1, 1.0, 1 / 2),
    ],
    "difficulty": [  # label_order puts Low, Medium, High first
        ("Low", 2, (1 + 1 / 3) / 2, (1 / 2 + 1) / 2),
        ("Medium", 1, 0.0, 1 / 4),
        ("High", 1, 1 / 2, 1.0),
    ],
}
BY_LABEL_SPEC = {
    "kind": "by_label",
    "title": "RR by topic label",
    "topics": "s1",
    "metric": "RR",
    "label_table": "topic_labels",
    "labels": ["category", "dependency", "difficulty"],
    "label_order": {"difficulty": ["Low", "Medium", "High"]},
}


@pytest.fixture
def topic_labels(tmp_path):
    path = tmp_path / "topic_labels.tsv"
    path.write_text(LABEL_TABLE, encoding="utf-8")
    return read_topic_labels(path, "s1")


def test_read_topic_labels_keeps_the_rows_of_the_set(topic_labels, tmp_path):
    assert sorted(topic_labels) == ["A.1", "A.2", "A.3", "A.4", "A.9"]
    assert topic_labels["A.3"] == {
        "category": "Calculation",
        "difficulty": "Low",
        "dependency": "Formula",
    }
    twice = tmp_path / "twice.tsv"
    twice.write_text("topic_id\tcategory\nA.1\tProof\nA.1\tConcept\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match="'A.1' is labelled twice"):
        read_topic_labels(twice, "s1")  # no set column: every row is read


def test_by_label_means_panels_and_shared_scale(topic_labels, caplog):
    from hybrid_ir.evaluate import evaluate

    scores = {
        label: evaluate(LABEL_QRELS, run, ["RR"]).per_query["RR"]
        for label, run in LABEL_RUNS.items()
    }
    with caplog.at_level(logging.INFO, logger="hybrid_ir.figures"):
        panels = label_panels(
            scores, topic_labels, BY_LABEL_SPEC["labels"], LABEL_QRELS, BY_LABEL_SPEC["label_order"]
        )
    assert "1 of 5 topics have no label row and are left out: A.5" in caplog.text
    figure = label_bar_figure(panels, "RR", "t")
    grid = figure.axes
    assert len(grid) == len(panels) == 3
    for axes, panel in zip(grid, panels, strict=True):
        expected = LABEL_MEANS[panel.column]
        assert axes.get_title() == panel.column
        assert [tick.get_text() for tick in axes.get_xticklabels()] == [
            f"{value} (n={count})" for value, count, _, _ in expected
        ]
        assert len(axes.containers) == 2  # one group of bars per run
        for run, bars in zip(("DPR", "A0"), axes.containers, strict=True):
            means = [dpr if run == "DPR" else a0 for _, _, dpr, a0 in expected]
            assert [bar.get_height() for bar in bars] == pytest.approx(means)
    assert len({axes.get_ylim() for axes in grid}) == 1
    assert all(grid[0].get_shared_y_axes().joined(grid[0], axes) for axes in grid[1:])


def test_by_label_draws_reproducibly(topic_labels, tmp_path):
    paths = draw(
        "by_label", BY_LABEL_SPEC, LABEL_RUNS, LABEL_QRELS, None, tmp_path / "f", topic_labels
    )
    png, svg = paths
    assert matplotlib.image.imread(png).shape[:2] == (480, 960)  # 3 panels of 3.2 inches
    text = svg.read_text(encoding="utf-8")
    for label in ("Proof (n=2)", "Medium (n=1)", "DPR", "A0", "RR by topic label", "category"):
        assert f">{label}</text>" in text
    first = svg.read_bytes(), png.read_bytes()
    draw("by_label", BY_LABEL_SPEC, LABEL_RUNS, LABEL_QRELS, None, tmp_path / "f", topic_labels)
    assert (svg.read_bytes(), png.read_bytes()) == first
    with pytest.raises(ConfigError, match="no 'topic' column"):
        spec = {**BY_LABEL_SPEC, "labels": ["topic"]}
        draw("by_label", spec, LABEL_RUNS, LABEL_QRELS, None, tmp_path / "g", topic_labels)


# rank_scatter (paper 000 Fig. 3) ---------------------------------------------------------------

FUSED = """\
A.219 Q0 d1 1 5.0 fused
A.219 Q0 d2 2 4.0 fused
A.219 Q0 d3 3 3.0 fused
A.219 Q0 d4 4 2.0 fused
A.219 Q0 d5 5 1.0 fused
A.1 Q0 d9 1 1.0 fused
"""
# ColBERT lacks d3; Approach0 lacks d1 and ranks d2 4th, below max_rank 3 (drawn as not
# retrieved, its rank kept in the TSV).
SCATTER_RUNS = {
    "ColBERT": {"A.219": {"d2": 10.0, "d1": 9.0, "d4": 8.0, "z": 7.0}},
    "Approach0": {"A.219": {"d3": 4.0, "q1": 3.0, "d4": 2.0, "d2": 1.0}},
}
SCATTER_QRELS = {"A.219": {"d1": 3, "d2": 1, "d4": 0}, "A.1": {"d9": 2}}
SCATTER_SPEC = {
    "kind": "rank_scatter",
    "title": "A.219",
    "topic": "A.219",
    "cutoff": 4,
    "max_rank": 3,
    "min_relevance": 2,
}


@pytest.fixture
def fused_run(tmp_path):
    path = tmp_path / "fused.trec"
    path.write_text(FUSED, encoding="utf-8")
    return path


def test_rank_scatter_writes_its_ranks_beside_the_figure(fused_run, tmp_path):
    fused = read_run(fused_run)
    png, svg, tsv = draw(
        "rank_scatter", SCATTER_SPEC, SCATTER_RUNS, SCATTER_QRELS, None, tmp_path / "fig3",
        fused=fused, fused_name=str(fused_run),
    )  # fmt: skip
    assert (png.name, svg.name, tsv.name) == ("fig3.png", "fig3.svg", "fig3.tsv")
    _check_png(png)
    assert tsv.read_text(encoding="utf-8").splitlines() == [
        "fused_rank\tdoc_id\tColBERT_rank\tApproach0_rank\trelevance",
        "1\td1\t2\t-\t3",
        "2\td2\t1\t4\t1",
        "3\td3\t-\t1\t-",
        "4\td4\t3\t3\t0",
    ]
    text = svg.read_text(encoding="utf-8")
    for label in ("not retrieved", "ColBERT", "Approach0", "rank in the fused run"):
        assert f">{label}</text>" in text
    rows = fused_rank_rows(fused, SCATTER_RUNS, SCATTER_QRELS, "A.219", 2)
    assert [(row.doc_id, row.ranks, row.relevance) for row in rows] == [
        ("d1", {"ColBERT": 2, "Approach0": None}, 3),
        ("d2", {"ColBERT": 1, "Approach0": 4}, 1),
    ]


def test_rank_scatter_of_a_topic_the_fused_run_lacks(fused_run, tmp_path):
    spec = {**SCATTER_SPEC, "topic": "A.999"}
    with pytest.raises(ConfigError, match=f"'A.999' is not in the fused run {fused_run}"):
        draw(
            "rank_scatter", spec, SCATTER_RUNS, SCATTER_QRELS, None, tmp_path / "out" / "fig3",
            fused=read_run(fused_run), fused_name=str(fused_run),
        )  # fmt: skip
    assert not (tmp_path / "out").exists()


# configuration of the two kinds ----------------------------------------------------------------


def test_figure_kinds_config_defaults_and_required_keys():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["figures"] = {
        "fig2-{topics}": {
            "kind": "by_label",
            "collection": "arqmath",
            "topics": ["arqmath1", "arqmath2"],
            "metric": "MAP'",
            "label_table": "topic_labels",
            "runs": {"BM25": "bm25-flat", "TF-IDF": "tfidf-qa"},
        },
        "fig3": {
            "kind": "rank_scatter",
            "collection": "arqmath",
            "topics": "arqmath2",
            "fused": "rrf-bm25-tfidf-qa",
            "topic": "A.219",
            "runs": {"BM25": "bm25-flat", "TF-IDF": "tfidf-qa"},
        },
    }
    schema = REPO / "workflow" / "schemas" / "config.schema.yaml"
    without_topic = copy.deepcopy(config)
    del without_topic["figures"]["fig3"]["topic"]
    validate_config(config, schema)
    fig2, fig3 = config["figures"]["fig2-arqmath2"], config["figures"]["fig3"]
    assert fig2["labels"] == ["category", "dependency", "difficulty"]
    assert (fig2["topics"], fig2["qrels"], fig2["label_order"]) == ("arqmath2", "arqmath2", {})
    assert (fig3["cutoff"], fig3["max_rank"], fig3["min_relevance"]) == (10, 1000, 2)
    assert "cutoff" not in fig2 and "labels" not in fig3
    with pytest.raises(ConfigError, match="figures.fig3: 'topic' is a required property"):
        validate_config(without_topic, schema)
