"""Figures: both files written, PNG of the expected size, SVG searchable and reproducible."""

from __future__ import annotations

import matplotlib.image
import pytest

from hybrid_ir.figures import DPI, FIGSIZE, metric_vs_parameter, pr_curves, recall_at_k_curve

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
