"""Figures: both files written, PNG of the expected size, SVG searchable and reproducible."""

from __future__ import annotations

import copy
import logging
import math
from pathlib import Path

import matplotlib.colors
import matplotlib.image
import pytest
import yaml

from hybrid_ir.config.validation import validate_config
from hybrid_ir.data.runs import read_run
from hybrid_ir.errors import ConfigError, InputFormatError
from hybrid_ir.reports.figures.data import (
    fused_rank_rows,
    head_to_head,
    label_panels,
    metric_at_k,
    read_topic_labels,
    sweep_runs,
)
from hybrid_ir.reports.figures.draw import (
    draw,
    head_to_head_figure,
    label_bar_figure,
    metric_vs_parameter,
    metric_vs_parameter_figure,
    pr_curves,
    pr_curves_figure,
    rank_scatter_figure,
    recall_at_k_curve,
    recall_at_k_figure,
    sweep_styles,
    table_figure,
    table_figure_of,
)
from hybrid_ir.reports.figures.loss import loss_curves, loss_figure
from hybrid_ir.reports.figures.style import DPI, FIGSIZE, PALETTE, series_style

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
    from hybrid_ir.evaluation.measures import evaluate

    scores = {
        label: evaluate(LABEL_QRELS, run, ["RR"]).per_query["RR"]
        for label, run in LABEL_RUNS.items()
    }
    with caplog.at_level(logging.INFO, logger="hybrid_ir.reports.figures.data"):
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
    for label in (
        "Proof (n=2)",
        "Medium (n=1)",
        "DPR",
        "A0",
        "RR by topic label",
        "category",
        "mean RR",
    ):
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


# head_to_head (paper 001 Fig. 2) ---------------------------------------------------------------
#
# RR per topic (relevance >= 1), read off the runs below; MD does not answer A.5, which RR
# (averaged over every qrels topic) scores 0; A.6 has no label row.
#
#          A.1  A.2  A.3  A.4  A.5  A.6      dependency
#   PSU    1    1/2  1/3  1/2  1    1   A.1  Text        A.5 Text
#   MD     1/2  1    1/3  1    0    1   A.2  Formula     A.3 Formula (tie)   A.4 Both

H2H_QRELS = {"A.1": {"d1": 2}, "A.2": {"d2": 2}, "A.3": {"d3": 1}, "A.4": {"d4": 3},
             "A.5": {"d5": 2}, "A.6": {"d6": 1}}  # fmt: skip
H2H_RUNS = {
    "PSU": {
        "A.1": {"d1": 2.0},
        "A.2": {"x": 2.0, "d2": 1.0},
        "A.3": {"x": 3.0, "y": 2.0, "d3": 1.0},
        "A.4": {"x": 2.0, "d4": 1.0},
        "A.5": {"d5": 1.0},
        "A.6": {"d6": 1.0},
    },
    "MD": {
        "A.1": {"x": 2.0, "d1": 1.0},
        "A.2": {"d2": 1.0},
        "A.3": {"x": 3.0, "y": 2.0, "d3": 1.0},
        "A.4": {"d4": 1.0},
        "A.6": {"d6": 1.0},
    },
}
H2H_LABELS = "topic_id\tset\tdependency\nA.1\ts1\tText\nA.2\ts1\tFormula\nA.3\ts1\tFormula\n" \
    "A.4\ts1\tBoth\nA.5\ts1\tText\n"  # fmt: skip
H2H_SPEC = {
    "kind": "head_to_head",
    "title": "PSU against MD",
    "topics": "s1",
    "metric": "RR",
    "labels": ["dependency"],
    "label_order": {"dependency": ["Text", "Formula", "Both"]},
}


def test_head_to_head_counts_means_and_tsv(tmp_path, caplog):
    path = tmp_path / "labels.tsv"
    path.write_text(H2H_LABELS, encoding="utf-8")
    labels = read_topic_labels(path, "s1")
    with caplog.at_level(logging.INFO, logger="hybrid_ir.reports.figures.data"):
        png, svg, tsv = draw(
            "head_to_head", H2H_SPEC, H2H_RUNS, H2H_QRELS, None, tmp_path / "fig2", labels
        )
    assert "1 topics have no label row and are left out: A.6" in caplog.text
    assert tsv.read_text(encoding="utf-8").splitlines() == [
        "dependency\ttopics\tPSU higher\tMD higher\tties\tPSU mean RR\tMD mean RR",
        "Text\t2\t2\t0\t0\t1.0000\t0.2500",
        "Formula\t2\t0\t1\t1\t0.4167\t0.6667",  # (1/2 + 1/3) / 2, (1 + 1/3) / 2
        "Both\t1\t0\t1\t0\t0.5000\t1.0000",
    ]
    assert matplotlib.image.imread(png).shape[:2] == (FIGSIZE[1] * DPI, 2 * FIGSIZE[0] * DPI)
    text = svg.read_text(encoding="utf-8")
    for label in ("PSU", "MD", "tie", "Formula (n=2)", "(b) mean RR over the topics"):
        assert f">{label}</text>" in text
    first = png.read_bytes(), svg.read_bytes(), tsv.read_bytes()
    draw("head_to_head", H2H_SPEC, H2H_RUNS, H2H_QRELS, None, tmp_path / "fig2", labels)
    assert (png.read_bytes(), svg.read_bytes(), tsv.read_bytes()) == first


def test_head_to_head_compares_topics_both_runs_score(caplog):
    scores = {"a": {"A.1": 1.0, "A.2": 0.5}, "b": {"A.1": 0.5, "A.3": 1.0}}
    labels = {topic: {"dependency": "Text"} for topic in ("A.1", "A.2", "A.3")}
    with caplog.at_level(logging.INFO, logger="hybrid_ir.reports.figures.data"):
        (row,) = head_to_head(scores, labels, "dependency")
    assert (row.value, row.topics, row.higher, row.ties, row.means) == (
        "Text",
        1,
        (1, 0),
        0,
        (1.0, 0.5),
    )
    assert "1 topics scored by a only are left out: A.2" in caplog.text
    assert "1 topics scored by b only are left out: A.3" in caplog.text


def test_head_to_head_needs_two_runs():
    scores = {"a": {"A.1": 1.0}, "b": {"A.1": 0.5}, "c": {"A.1": 0.0}}
    with pytest.raises(ConfigError, match="exactly 2 runs, got 3"):
        head_to_head(scores, {"A.1": {"dependency": "Text"}}, "dependency")
    with pytest.raises(ConfigError, match="no 'category' column"):
        head_to_head({"a": {"A.1": 1.0}, "b": {"A.1": 0.5}}, {"A.1": {"x": "y"}}, "category")


# ndcg_at_k and curves per swept value (paper 003 Figs. 2 and 4) --------------------------------
#
# Topic 1 judges a (2) and b (1); VSR ranks a, x, b: NDCG@1 = 1, NDCG@2 = 2 / (2 + 1/log2 3),
# NDCG@3 = (2 + 1/2) / (2 + 1/log2 3). Dense ranks b, a.

CF_QRELS = {"1": {"a": 2, "b": 1}}
CF_RUNS = {"VSR": {"1": {"a": 0.9, "x": 0.5, "b": 0.4}}, "Dense": {"1": {"b": 0.8, "a": 0.6}}}
IDCG = 2 + 1 / math.log2(3)
SWEEP = {"method": "score_hybrid", "parameter": "lam", "values": [0.0, 0.5, 1.0], "params": {}}


def test_ndcg_at_k_values_in_its_tsv(tmp_path):
    spec = {"kind": "ndcg_at_k", "title": "NDCG@k", "max_k": 3}
    png, svg, tsv = draw("ndcg_at_k", spec, CF_RUNS, CF_QRELS, None, tmp_path / "ndcg")
    _check_png(png)
    lines = [line.split("\t") for line in tsv.read_text(encoding="utf-8").splitlines()]
    assert lines[0] == ["k", "VSR", "Dense"]
    dense = [1 / 2, (1 + 2 / math.log2(3)) / IDCG, (1 + 2 / math.log2(3)) / IDCG]
    vsr = [1.0, 2 / IDCG, 2.5 / IDCG]
    for k, row in enumerate(lines[1:], 1):
        assert row[0] == str(k)
        assert [float(v) for v in row[1:]] == pytest.approx([vsr[k - 1], dense[k - 1]], abs=5e-5)
    assert metric_at_k(CF_QRELS, CF_RUNS["VSR"], "nDCG", 3) == pytest.approx(
        dict(enumerate(vsr, 1))
    )
    text = svg.read_text(encoding="utf-8")
    for label in ("NDCG@k", "k (documents retrieved)", "VSR", "Dense"):
        assert f">{label}</text>" in text


def test_sweep_runs_fuse_each_value_and_are_drawn(tmp_path):
    inputs = [CF_RUNS["Dense"], CF_RUNS["VSR"]]
    swept = sweep_runs(SWEEP, inputs, [0.5, 1.0], "lambda = {value}")
    assert list(swept) == ["lambda = 0.5", "lambda = 1.0"]
    assert swept["lambda = 0.5"]["1"] == pytest.approx({"a": 0.75, "b": 0.6, "x": 0.25})
    assert list(swept["lambda = 1.0"]["1"])[:2] == ["b", "a"]
    with pytest.raises(ConfigError, match=r"sweep values \[0.3\] are not among"):
        sweep_runs(SWEEP, inputs, [0.3], "{parameter} = {value}")
    spec = {"kind": "ndcg_at_k", "title": "per lambda", "max_k": 2, "sweep": "s",
            "sweep_label": "{parameter} = {value}"}  # fmt: skip
    _, svg, tsv = draw("ndcg_at_k", spec, {}, CF_QRELS, None, tmp_path / "l", sweep=(SWEEP, inputs))
    assert tsv.read_text(encoding="utf-8").splitlines()[:2] == [
        "k\tlam = 0.0\tlam = 0.5\tlam = 1.0",
        "1\t1.0000\t1.0000\t0.5000",
    ]
    pr_spec = {**spec, "kind": "pr_curves"}
    _, pr_svg = draw("pr_curves", pr_spec, CF_RUNS, CF_QRELS, None, tmp_path / "pr",
                     sweep=(SWEEP, inputs))  # fmt: skip
    text = pr_svg.read_text(encoding="utf-8")
    for label in ("VSR", "Dense", "lam = 0.0", "lam = 0.5", "lam = 1.0"):
        assert f">{label}</text>" in text
    styles = sweep_styles(["lam = 0.0", "lam = 0.5", "lam = 1.0"])
    assert len({style["color"] for style in styles.values()}) == 3
    with pytest.raises(ConfigError, match="needs the sweep and its input runs"):
        draw("pr_curves", pr_spec, CF_RUNS, CF_QRELS, None, tmp_path / "none")


# collection_stats (paper 004 Fig. 3) -----------------------------------------------------------

STATS_CORPUS = [
    {"id": "d1", "title": "Two words", "text": "one two three"},
    {"id": "d2", "title": "", "text": "four words in here"},
    {"id": "d3", "title": "Title only", "text": " "},
]
STATS_TOPICS = [
    {"id": "q1", "title": "", "text": "what is it"},
    {"id": "q2", "title": "", "text": "why"},
    {"id": "q3", "title": "", "text": "not judged at all"},
]
STATS_QRELS = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d3 0\nq2 0 d2 2\n"


def _stats_files(tmp_path):
    from hybrid_ir.data.formats import write_records

    write_records(tmp_path / "corpus.jsonl", STATS_CORPUS)
    write_records(tmp_path / "topics.jsonl", STATS_TOPICS)
    (tmp_path / "test.qrels").write_text(STATS_QRELS, encoding="utf-8")
    return tmp_path / "corpus.jsonl", tmp_path / "topics.jsonl", tmp_path / "test.qrels"


def test_collection_stats_numbers_table_and_figure(tmp_path):
    from hybrid_ir.data.collection_stats import (
        HEADER,
        collection_stats_of_files,
        table_rows,
        write_stats_markdown,
        write_stats_tsv,
    )
    from hybrid_ir.data.qrels import read_qrels

    corpus, topics, qrels = _stats_files(tmp_path)
    stats = collection_stats_of_files(
        "Toy", corpus, topics, read_qrels(qrels), ["title", "text"], ["title", "text"]
    )
    assert (stats.queries, stats.documents) == (2, 3)
    assert stats.relevant_per_query == 1.5  # q1: d1, d2; q2: d2
    assert stats.query_words == 2.0  # (3 + 1) / 2, q3 is not judged
    assert stats.document_words == pytest.approx((5 + 4 + 2) / 3)
    assert stats.sections_per_document == pytest.approx((2 + 1 + 1) / 3)
    strict = collection_stats_of_files(
        "Toy", corpus, topics, read_qrels(qrels), ["text"], ["text"], min_relevance=2
    )
    assert (strict.relevant_per_query, strict.sections_per_document) == (1.0, 2 / 3)
    assert table_rows([stats]) == [["Toy", "2", "3", "1.50", "2.00", "3.67", "title, text", "1.33"]]
    tsv = write_stats_tsv([stats, strict], tmp_path / "s.tsv").read_text(encoding="utf-8")
    assert tsv.splitlines()[1] == "Toy\t2\t3\t1.5000\t2.0000\t3.6667\ttitle,text\t1.3333"
    markdown = write_stats_markdown([stats], tmp_path / "s.md", "Stats", ["a note"])
    assert markdown.read_text(encoding="utf-8").splitlines() == [
        "# Stats", "", "| " + " | ".join(HEADER) + " |", "|---" * len(HEADER) + "|",
        "| Toy | 2 | 3 | 1.50 | 2.00 | 3.67 | title, text | 1.33 |", "", "- a note",
    ]  # fmt: skip
    png, svg = table_figure(HEADER, table_rows([stats]), tmp_path / "fig3", "Stats")
    text = svg.read_text(encoding="utf-8")
    for cell in ("#Documents", "Avg. D/Q", "Toy", "3.67", "Stats"):
        assert f">{cell}</text>" in text
    first = png.read_bytes(), svg.read_bytes()
    table_figure(HEADER, table_rows([stats]), tmp_path / "fig3", "Stats")
    assert (png.read_bytes(), svg.read_bytes()) == first


def test_collection_stats_bad_input(tmp_path):
    from hybrid_ir.data.collection_stats import collection_stats_of_files
    from hybrid_ir.data.qrels import read_qrels

    corpus, topics, qrels = _stats_files(tmp_path)
    with pytest.raises(
        InputFormatError, match=r"corpus.jsonl: document 'd1' has no text field 'abstract'"
    ):
        collection_stats_of_files("Toy", corpus, topics, read_qrels(qrels), ["abstract"], ["text"])
    with pytest.raises(ConfigError, match="Toy: the qrels judge none of the topics of"):
        collection_stats_of_files("Toy", corpus, topics, {"zz": {"d1": 1}}, ["text"], ["text"])


def test_new_figure_kinds_config_defaults_and_errors():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    schema = REPO / "workflow" / "schemas" / "config.schema.yaml"
    validate_config(copy.deepcopy(config), schema)  # the default configuration's figures
    config["figures"] = {
        "h2h": {"kind": "head_to_head", "collection": "arqmath", "topics": "arqmath1",
                "metric": "nDCG'", "label_table": "topic_labels", "labels": ["dependency"],
                "runs": {"PSU": "psu-bm25-tf-tfbert", "MD": "mathdowsers"}},
        "ndcg": {"kind": "ndcg_at_k", "collection": "cf", "topics": "all", "qrels": "graded",
                 "runs": {"VSR": "vsr"}},
        "pr": {"kind": "pr_curves", "collection": "cf", "topics": "all", "qrels": "graded",
               "sweep": "cf-hybrid-lambda"},
        "stats": {"kind": "collection_stats", "title": "t",
                  "datasets": {"SciFact": {"collection": "scifact", "topics": "test"}}},
    }  # fmt: skip
    valid = copy.deepcopy(config)
    validate_config(valid, schema)
    figures = valid["figures"]
    assert figures["h2h"]["label_order"] == {} and figures["ndcg"]["max_k"] == 10
    assert "sweep_label" not in figures["ndcg"]
    assert figures["pr"]["sweep_label"] == "{parameter} = {value}"
    stats = figures["stats"]
    assert stats["notes"] == [] and "collection" not in stats
    assert stats["datasets"]["SciFact"] == {
        "collection": "scifact", "topics": "test", "qrels": "test", "sections": ["title", "text"],
        "query_fields": ["title", "text"], "min_relevance": 1,
    }  # fmt: skip
    for key, change, message in [
        ("h2h", {"runs": {"PSU": "psu-bm25"}}, "figures.h2h.runs: .* should be non-empty|"
         "figures.h2h.runs: .*does not have enough properties"),
        ("h2h", {"labels": ["dependency", "category"]}, "figures.h2h.labels"),
        ("stats", {"datasets": {"N": {"collection": "ntcir12", "topics": "all"}}},
         "figures.stats.datasets.N: collection 'ntcir12' has no corpus"),
        ("stats", {"datasets": {"S": {"collection": "scifact", "topics": "dev"}}},
         "figures.stats.datasets.S.topics: 'dev' is not one of"),
        ("pr", {"collection": "scifact", "topics": "test", "qrels": "test"},
         "figures.pr.sweep: sweep 'cf-hybrid-lambda' is on cf/all, the figure on scifact/test"),
    ]:  # fmt: skip
        bad = copy.deepcopy(config)
        bad["figures"][key].update(change)
        with pytest.raises(ConfigError, match=message):
            validate_config(bad, schema)


# What a reader sees: measure names on the axes, the configured labels in the legend, one y
# scale for panels of one measure, colours from the colour-blind-safe palette -------------------


def _hex(color):
    return matplotlib.colors.to_hex(color, keep_alpha=False).upper()


def _legend_texts(legend):
    return [text.get_text() for text in legend.get_texts()]


def _run_line_colors(axes):
    """The colours of the plotted series (not the grid or the rings marking a best point)."""
    return {_hex(line.get_color()) for line in axes.get_lines() if line.get_label()[:1] != "_"}


def test_series_styles_stay_distinct_past_the_palette():
    styles = [series_style(index) for index in range(2 * len(PALETTE) + 1)]
    keys = {(style["color"], style["marker"], style["linestyle"]) for style in styles}
    assert len(keys) == len(styles)
    assert {style["color"] for style in styles} == set(PALETTE)
    assert styles[0]["linestyle"] == "-" and styles[len(PALETTE)]["linestyle"] == "--"
    assert styles[len(PALETTE)]["color"] == styles[0]["color"]


def test_curve_figures_label_axes_legend_and_palette():
    figures = {
        "pr": pr_curves_figure(CURVES, "CF"),
        "recall": recall_at_k_figure(
            {"BM25": {k: k / 100 for k in range(1, 101)}, "TF-IDF": {1: 0.2, 100: 0.7}}, "R"
        ),
        "ndcg": recall_at_k_figure({"VSR": {1: 0.4, 2: 0.45}}, "N", measure="NDCG"),
        "sweep": metric_vs_parameter_figure(
            [0.0, 0.5, 1.0], {"Hybrid": [0.4, 0.55, 0.48]}, "λ (weight of the dense run)",
            "NDCG@10", "t", references={"VSR": 0.42, "Dense": 0.48},
        ),
    }  # fmt: skip
    expected = {
        "pr": ("Recall", "Interpolated precision", list(CURVES)),
        "recall": ("k (documents retrieved)", "Recall@k", ["BM25", "TF-IDF"]),
        "ndcg": ("k (documents retrieved)", "NDCG@k", ["VSR"]),
        "sweep": ("λ (weight of the dense run)", "NDCG@10", ["Hybrid", "VSR", "Dense"]),
    }
    for name, figure in figures.items():
        (axes,) = figure.axes
        xlabel, ylabel, legend = expected[name]
        assert (axes.get_xlabel(), axes.get_ylabel()) == (xlabel, ylabel), name
        assert _legend_texts(axes.get_legend()) == legend, name
        assert _run_line_colors(axes) <= set(PALETTE), name
        assert len(_run_line_colors(axes)) == len(legend), name  # one colour per series
    # every curve of a 0-1 measure on the 0-1 scale, so figures of one measure compare
    assert figures["pr"].axes[0].get_ylim() == figures["ndcg"].axes[0].get_ylim()
    assert figures["recall"].axes[0].get_ylim() == (-0.02, 1.02)


def test_sweep_curves_keep_the_palette_for_the_runs():
    labels = [f"λ = {value}" for value in (0.0, 0.5, 1.0)]
    curves = {"VSR": CURVES["VSR"], **{label: CURVES["Hybrid"] for label in labels}}
    figure = pr_curves_figure(curves, "t", sweep_styles(labels))
    (axes,) = figure.axes
    assert _legend_texts(axes.get_legend()) == ["VSR", *labels]
    run, *swept = axes.get_lines()
    assert _hex(run.get_color()) == PALETTE[0]
    assert all(_hex(line.get_color()) not in PALETTE for line in swept)
    assert {line.get_linestyle() for line in swept} == {"--"}
    assert len({_hex(line.get_color()) for line in swept}) == len(labels)


def test_loss_figure_one_panel_per_loss_with_units(tmp_path):
    history = [
        {"split": split, "step": step, "mlm": 10.0 - step, "nsp": 0.69}
        for split, steps in (("train", range(4)), ("heldout", (0, 3)))
        for step in steps
    ]
    figure = loss_figure(history, "MLM further pretraining: toy")
    mlm, nsp = figure.axes
    assert (mlm.get_xlabel(), nsp.get_xlabel()) == ("training step", "training step")
    assert mlm.get_ylabel() == "MLM loss (cross-entropy, nats)"
    assert nsp.get_ylabel() == "NSP loss (cross-entropy, nats)"
    for axes in (mlm, nsp):
        assert _legend_texts(axes.get_legend()) == ["training (each step)", "held-out"]
        assert _run_line_colors(axes) == set(PALETTE[:2])
    train, heldout = mlm.get_lines()
    assert list(heldout.get_ydata()) == [10.0, 7.0]
    assert (train.get_marker(), heldout.get_marker()) == ("none", "o")
    no_nsp = [{**row, "nsp": 0.0} for row in history]
    (only,) = loss_figure(no_nsp).axes
    assert only.get_ylabel().startswith("MLM loss")
    png, svg = loss_curves(history, tmp_path / "loss")
    assert matplotlib.image.imread(png).shape[:2] == (FIGSIZE[1] * DPI, 2 * FIGSIZE[0] * DPI)
    assert ">MLM loss (cross-entropy, nats)</text>" in svg.read_text(encoding="utf-8")


def test_bar_figures_label_axes_legend_palette_and_shared_scale(topic_labels):
    from hybrid_ir.evaluation.measures import evaluate

    scores = {
        label: evaluate(LABEL_QRELS, run, ["RR"]).per_query["RR"]
        for label, run in LABEL_RUNS.items()
    }
    panels = label_panels(scores, topic_labels, BY_LABEL_SPEC["labels"], LABEL_QRELS)
    figure = label_bar_figure(panels, "mean RR", "t")
    assert figure.axes[0].get_ylabel() == "mean RR"
    (legend,) = figure.legends
    assert _legend_texts(legend) == list(LABEL_RUNS)
    assert len({axes.get_ylim() for axes in figure.axes}) == 1
    for axes in figure.axes:
        assert [_hex(bars[0].get_facecolor()) for bars in axes.containers] == list(PALETTE[:2])
    rows = head_to_head(scores, topic_labels, "dependency", ["Text", "Formula", "Both"])
    figure = head_to_head_figure(rows, list(LABEL_RUNS), "dependency", "RR", "t")
    wins, means = figure.axes
    assert (wins.get_ylabel(), means.get_ylabel()) == ("topics", "mean RR")
    assert wins.get_xlabel() == means.get_xlabel() == "dependency"
    assert _legend_texts(wins.get_legend()) == [*LABEL_RUNS, "tie"]
    colors = [_hex(bars[0].get_facecolor()) for bars in wins.containers]
    assert colors[:2] == list(PALETTE[:2])


def test_rank_scatter_and_table_figures(fused_run):
    rows = fused_rank_rows(read_run(fused_run), SCATTER_RUNS, SCATTER_QRELS, "A.219", 4)
    figure = rank_scatter_figure(rows, list(SCATTER_RUNS), "A.219", max_rank=3)
    (axes,) = figure.axes
    assert (axes.get_xlabel(), axes.get_ylabel()) == (
        "rank in the fused run",
        "rank in the input run",
    )
    (legend,) = figure.legends
    assert _legend_texts(legend)[:2] == list(SCATTER_RUNS)
    assert _run_line_colors(axes) - {"#7F7F7F"} <= set(PALETTE)  # grey: the max_rank line
    table = table_figure_of(["Collection", "#Documents"], [["Toy", "3"]], "Stats")
    (axes,) = table.axes
    assert axes.get_title() == "Stats"
    cells = {cell.get_text().get_text() for cell in axes.tables[0].get_celld().values()}
    assert cells == {"Collection", "#Documents", "Toy", "3"}


# the registry of figure kinds -----------------------------------------------------------------


def test_the_schema_lists_exactly_the_registered_kinds():
    from hybrid_ir.reports.figures.kinds import FIGURE_KINDS

    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text())
    figure = schema["properties"]["figures"]["additionalProperties"]["properties"]
    assert figure["kind"]["enum"] == list(FIGURE_KINDS)
    from hybrid_ir.reports.figures import draw as figures

    for kind in FIGURE_KINDS.values():
        assert callable(getattr(figures, kind.draw)), kind.draw


def test_a_new_kind_is_one_registry_entry_and_its_drawing_function(monkeypatch, tmp_path):
    from hybrid_ir.reports.figures import draw as figures
    from hybrid_ir.reports.figures.kinds import (
        FIGURE_KINDS,
        FigureKind,
        figure_inputs,
        figure_outputs,
        output_keys,
    )

    drawn = []

    def draw_topic_counts(data):
        drawn.append((sorted(data.runs), data.title))
        data.tsv.write_text("topics\n", encoding="utf-8")
        return (data.tsv,)

    monkeypatch.setitem(
        FIGURE_KINDS, "topic_counts", FigureKind("draw_topic_counts", writes=("tsv",))
    )
    monkeypatch.setattr(figures, "draw_topic_counts", draw_topic_counts, raising=False)
    spec = {"kind": "topic_counts", "collection": "cf", "topics": "all", "qrels": "graded",
            "runs": {"VSR": "vsr"}, "title": "Counts"}  # fmt: skip
    config = {"figures": {"counts": spec}, "sweeps": {}, "collections": {}}
    assert output_keys("topic_counts") == ("png", "svg", "tsv")
    assert list(figure_outputs("counts", spec).values()) == [
        "results/figures/counts.png", "results/figures/counts.svg", "results/figures/counts.tsv",
    ]  # fmt: skip
    assert figure_inputs("counts", config, lambda c, t, r: f"{c}/{t}/{r}.trec") == {
        "VSR": "cf/all/vsr.trec",
        "qrels": "results/collections/cf/qrels/graded.qrels",
    }
    assert draw("topic_counts", spec, CF_RUNS, CF_QRELS, None, tmp_path / "counts")
    assert drawn == [(sorted(CF_RUNS), "Counts")]


def test_collection_stats_is_drawn_from_its_datasets(tmp_path):
    from hybrid_ir.reports.figures.draw import Dataset

    corpus, topics, qrels = _stats_files(tmp_path)
    settings = {
        "sections": ["title", "text"],
        "query_fields": ["title", "text"],
        "min_relevance": 1,
    }
    spec = {"kind": "collection_stats", "title": "Stats", "notes": ["a note"]}
    written = draw(
        "collection_stats", spec, {}, None, None, tmp_path / "fig3",
        datasets=[Dataset("Toy", settings, str(corpus), str(topics), str(qrels))],
    )  # fmt: skip
    assert [path.name for path in written] == ["fig3.png", "fig3.svg", "fig3.tsv", "fig3.md"]
    assert "| Toy | 2 | 3 | 1.50 |" in (tmp_path / "fig3.md").read_text(encoding="utf-8")
