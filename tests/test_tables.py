"""Paper-style tables: a hand-made 5-topic case scored end to end, every cell checked by hand.

Qrels (relevance 0-3; RR and P@1 count relevance >= 1, Rel_Ret counts relevance >= 2):

    topic 1: d11 2, d12 1, d13 0      topic 4: d41 2, d42 0
    topic 2: d21 3, d22 0             topic 5: d51 1, d52 2
    topic 3: d31 2, d32 1

Per-topic scores of the three runs (topics 1..5), read off the run files below:

    ref (reference)  RR 1/2 1/2 1/3 1/4 1/2   P@1 0 0 0 0 0   Rel_Ret 1 1 1 1 0
    better           RR 1   1   1   1/2 1     P@1 1 1 1 0 1   Rel_Ret 1 1 1 1 1
    other            RR 1   1/2 1   1/2 1     P@1 1 0 1 0 1   Rel_Ret 1 1 0 1 0

The cross-validated row comes from a hand-written report whose P@1 lacks topic 5, so its test
against the reference runs on the 4 shared topics.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from pathlib import Path

import pytest
import yaml
from scipy.stats import ttest_rel

from hybrid_ir.errors import ConfigError
from hybrid_ir.reports.tables.notes import largest_gain_notes, overlap_notes, verdict_notes
from hybrid_ir.reports.tables.results import (
    Cell,
    fill_note,
    render_latex,
    render_markdown,
    score_rows,
    table_cells,
    table_spec,
    write_per_query,
    write_table_csv,
)

TOPICS = ["1", "2", "3", "4", "5"]
MEASURES = ["P@1", "RR", "Rel_Ret"]

QRELS = """\
1 0 d11 2
1 0 d12 1
1 0 d13 0
2 0 d21 3
2 0 d22 0
3 0 d31 2
3 0 d32 1
4 0 d41 2
4 0 d42 0
5 0 d51 1
5 0 d52 2
"""

# (topic, doc, score) in any order: the reader ranks by score.
RUNS = {
    "ref": [
        ("1", "x1", 4), ("1", "d11", 3), ("1", "d12", 2),
        ("2", "d22", 4), ("2", "d21", 3),
        ("3", "x1", 4), ("3", "x2", 3), ("3", "d31", 2),
        ("4", "x1", 4), ("4", "x2", 3), ("4", "d42", 2), ("4", "d41", 1),
        ("5", "x1", 4), ("5", "d51", 3),
    ],
    "better": [
        ("1", "d11", 5), ("1", "d12", 4),
        ("2", "d21", 5),
        ("3", "d31", 5), ("3", "d32", 4),
        ("4", "d42", 5), ("4", "d41", 4),
        ("5", "d52", 5), ("5", "d51", 4),
    ],
    "other": [
        ("1", "d11", 3), ("1", "x1", 2),
        ("2", "d22", 3), ("2", "d21", 2),
        ("3", "d32", 3),
        ("4", "d42", 3), ("4", "d41", 2),
        ("5", "d51", 3),
    ],
}  # fmt: skip

PER_TOPIC = {
    "ref": {
        "RR": [1 / 2, 1 / 2, 1 / 3, 1 / 4, 1 / 2],
        "P@1": [0, 0, 0, 0, 0],
        "Rel_Ret": [1, 1, 1, 1, 0],
    },
    "better": {"RR": [1, 1, 1, 1 / 2, 1], "P@1": [1, 1, 1, 0, 1], "Rel_Ret": [1, 1, 1, 1, 1]},
    "other": {"RR": [1, 1 / 2, 1, 1 / 2, 1], "P@1": [1, 0, 1, 0, 1], "Rel_Ret": [1, 1, 0, 1, 0]},
}

# The cross-validated system: 2 folds, RR on all 5 topics, P@1 on topics 1-4 only.
CV_FOLDS = [["1", "3", "5"], ["2", "4"]]
CV_RR = {"1": 0.5, "2": 1.0, "3": 1 / 3, "4": 0.5, "5": 0.5}
CV_P1 = {"1": 1.0, "2": 0.0, "3": 1.0, "4": 1.0}
CV_RR_MEAN = ((0.5 + 1 / 3 + 0.5) / 3 + (1.0 + 0.5) / 2) / 2  # mean of the fold means
CV_P1_MEAN = ((1.0 + 1.0) / 2 + (0.0 + 1.0) / 2) / 2

LABELS = {
    "ref": "Ref_BM25",
    "better": "Better 50% & more",
    "other": "Other_run",
    "cv": "Fused (CV alpha)",
}

CONFIG_YAML = """\
title: "Toy table: 5_topics, 100% & co"
measures: [P@1, RR, Rel_Ret]
columns: [P@1, RR, Rel_Ret]
reference: Ref_BM25
digits: 3
blocks:
  - name: Base_lines
    rows:
      - {label: Ref_BM25, run: ref}
      - {label: "Better 50% & more", run: better, published: {P@1: 0.8002, RR: 0.95, Rel_Ret: 6}}
  - name: Other systems
    rows:
      - {label: Other_run, run: other, unavailable: [Rel_Ret]}
      - {label: Fused (CV alpha), crossval: toy-cv, unavailable: [Rel_Ret]}
notes:
  - "A toy note."
"""


def _mean(values) -> float:
    return sum(values) / len(values)


def _crossval_report() -> dict:
    def column(per_topic: dict[str, float], mean: float, params: list[float]) -> dict:
        folds = []
        for index, (fold, param) in enumerate(zip(CV_FOLDS, params, strict=True)):
            tested = [per_topic[topic] for topic in fold if topic in per_topic]
            folds.append(
                {"fold": index, "param": param, "train_score": 0.5, "test_score": _mean(tested)}
            )
        frequencies: dict[float, int] = {}
        for param in params:
            frequencies[param] = frequencies.get(param, 0) + 1
        return {
            "mean_test_score": mean,
            "frequencies": [[param, count] for param, count in frequencies.items()],
            "folds": folds,
            "per_topic": per_topic,
        }

    return {
        "folds": CV_FOLDS,
        "columns": {
            "P@1": column(CV_P1, CV_P1_MEAN, [0.3, 0.3]),
            "RR": column(CV_RR, CV_RR_MEAN, [0.2, 0.7]),
        },
    }


@pytest.fixture
def table(tmp_path: Path):
    """The spec, per-topic scores, aggregates and cells of the toy table."""
    qrels = tmp_path / "toy.qrels"
    qrels.write_text(QRELS, encoding="utf-8")
    sources = {}
    for name, lines in RUNS.items():
        path = tmp_path / f"{name}.trec"
        path.write_text(
            "".join(f"{t} Q0 {d} 0 {s} {name}\n" for t, d, s in lines), encoding="utf-8"
        )
        sources[LABELS[name]] = str(path)
    report = tmp_path / "toy-cv.json"
    report.write_text(json.dumps(_crossval_report()), encoding="utf-8")
    sources[LABELS["cv"]] = str(report)
    config = yaml.safe_load(CONFIG_YAML)
    spec = table_spec("toy_table", config, sources)
    per_query, aggregate = score_rows(spec, {"qrels": str(qrels)})
    cells = table_cells(spec, per_query, aggregate)
    return spec, per_query, aggregate, cells


def _expected_p(run: str, column: str) -> float:
    return float(ttest_rel(PER_TOPIC[run][column], PER_TOPIC["ref"][column]).pvalue)


def _marker(p_value: float) -> str:
    return "**" if p_value < 0.01 else "*" if p_value < 0.05 else ""


# table_spec ------------------------------------------------------------------------------------


def test_spec_from_config(table):
    spec = table[0]
    assert spec.name == "toy_table"
    assert spec.title == "Toy table: 5_topics, 100% & co"
    assert spec.columns == ("P@1", "RR", "Rel_Ret")
    assert spec.reference == "Ref_BM25"
    assert spec.digits == 3
    assert spec.notes == ("A toy note.",)
    assert [name for name, _ in spec.blocks] == ["Base_lines", "Other systems"]
    assert [row.label for row in spec.rows] == list(LABELS.values())
    assert [row.sources[""][0] for row in spec.rows] == ["run", "run", "run", "crossval"]
    assert spec.rows[1].published == {"P@1": 0.8002, "RR": 0.95, "Rel_Ret": 6.0}
    assert all(isinstance(value, float) for value in spec.rows[1].published.values())
    assert spec.rows[2].unavailable == ("Rel_Ret",)
    assert spec.rows[0].published == {} and spec.rows[0].unavailable == ()
    assert spec.has_published


def test_spec_defaults():
    config = {"columns": ["RR"], "blocks": [{"rows": [{"label": "a", "run": "a"}]}]}
    spec = table_spec("bare", config, {"a": "a.trec"})
    assert spec.title == "bare"
    assert spec.digits == 3
    assert spec.reference is None
    assert spec.notes == ()
    assert spec.blocks[0][0] == ""
    assert not spec.has_published


# score_rows and table_cells --------------------------------------------------------------------


def test_per_topic_scores_equal_the_hand_computed_ones(table):
    _, per_query, aggregate, _ = table
    for name in ("ref", "better", "other"):
        label = LABELS[name]
        for column, values in PER_TOPIC[name].items():
            assert per_query[label][column] == pytest.approx(
                dict(zip(TOPICS, values, strict=True))
            ), label
    assert per_query[LABELS["cv"]] == {"P@1": CV_P1, "RR": CV_RR}


def test_aggregates_equal_the_hand_computed_ones(table):
    aggregate = table[2]
    assert aggregate["Ref_BM25"] == pytest.approx({"P@1": 0.0, "RR": 25 / 60, "Rel_Ret": 4.0})
    assert aggregate["Better 50% & more"] == pytest.approx({"P@1": 0.8, "RR": 0.9, "Rel_Ret": 5})
    assert aggregate["Other_run"] == pytest.approx({"P@1": 0.6, "RR": 0.8, "Rel_Ret": 3.0})
    # A cross-validated row prints the report's mean test score (a mean of fold means).
    assert aggregate["Fused (CV alpha)"] == {"P@1": CV_P1_MEAN, "RR": CV_RR_MEAN}
    assert CV_RR_MEAN != pytest.approx(_mean(list(CV_RR.values())))


def test_reference_row_has_no_test(table):
    cells = table[3]["Ref_BM25"]
    assert cells["RR"] == Cell(pytest.approx(25 / 60), "", None, None)
    assert all(cell.marker == "" and cell.p_value is None for cell in cells.values())


@pytest.mark.parametrize("run", ["better", "other"])
@pytest.mark.parametrize("column", ["P@1", "RR"])
def test_p_values_equal_scipy_and_markers_follow_them(table, run, column):
    cell = table[3][LABELS[run]][column]
    assert cell.p_value == pytest.approx(_expected_p(run, column), rel=1e-12)
    assert cell.marker == _marker(cell.p_value)


def test_markers_by_hand(table):
    cells = table[3]
    # better vs ref on RR: differences 1/2 1/2 2/3 1/4 1/2, t = 7.25 (df 4), p ~ 0.002.
    assert cells["Better 50% & more"]["RR"].p_value < 0.01
    assert cells["Better 50% & more"]["RR"].marker == "**"
    # P@1: differences 1 1 1 0 1, t = 4, p ~ 0.016.
    assert 0.01 < cells["Better 50% & more"]["P@1"].p_value < 0.05
    assert cells["Better 50% & more"]["P@1"].marker == "*"
    # Rel_Ret: differences 0 0 0 0 1, t = 1, p ~ 0.37.
    assert cells["Better 50% & more"]["Rel_Ret"].p_value == pytest.approx(
        _expected_p("better", "Rel_Ret")
    )
    assert cells["Better 50% & more"]["Rel_Ret"].marker == ""
    # other vs ref on RR: differences 1/2 0 2/3 1/4 1/2, p ~ 0.03; P@1: 1 0 1 0 1, p ~ 0.07.
    assert cells["Other_run"]["RR"].marker == "*"
    assert cells["Other_run"]["P@1"].marker == ""


def test_crossval_row_is_tested_on_the_shared_topics(table):
    cells = table[3]["Fused (CV alpha)"]
    shared = ["1", "2", "3", "4"]
    expected = ttest_rel([CV_P1[t] for t in shared], [PER_TOPIC["ref"]["P@1"][0]] * 4).pvalue
    assert cells["P@1"].p_value == pytest.approx(float(expected), rel=1e-12)
    assert cells["P@1"].value == CV_P1_MEAN
    expected_rr = ttest_rel([CV_RR[t] for t in TOPICS], PER_TOPIC["ref"]["RR"]).pvalue
    assert cells["RR"].p_value == pytest.approx(float(expected_rr), rel=1e-12)
    assert cells["P@1"].marker == cells["RR"].marker == ""


def test_published_values_and_differences(table):
    cells = table[3]["Better 50% & more"]
    assert cells["P@1"].published == 0.8002
    assert cells["P@1"].difference == pytest.approx(0.8 - 0.8002)
    assert cells["RR"].difference == pytest.approx(0.9 - 0.95)
    assert cells["Rel_Ret"].published == 6.0
    assert cells["Rel_Ret"].difference == pytest.approx(-1.0)
    assert table[3]["Other_run"]["RR"].published is None
    assert table[3]["Other_run"]["RR"].difference is None


def test_unavailable_cells_are_empty(table):
    cells = table[3]
    # "other" was evaluated on Rel_Ret, but the row marks it unavailable.
    assert table[2]["Other_run"]["Rel_Ret"] == 3.0
    assert cells["Other_run"]["Rel_Ret"] == Cell(None)
    # The report has no Rel_Ret at all.
    assert cells["Fused (CV alpha)"]["Rel_Ret"] == Cell(None)
    assert Cell(None, published=1.0).difference is None


# render_markdown -------------------------------------------------------------------------------


def test_markdown_table(table):
    spec, _, _, cells = table
    text = render_markdown(spec, cells)
    lines = text.splitlines()
    assert lines[0] == "# Toy table: 5_topics, 100% & co"
    assert lines[2] == "|  | run | P@1 | paper | Δ | RR | paper | Δ | Rel_Ret | paper | Δ |"
    assert lines[3] == "|" + "---|" * 11
    # The reference row is marked "(ref.)", never with the `*` of a significant difference.
    assert lines[4] == (
        "| Base_lines | Ref_BM25 (ref.) | 0.000 | – | – | 0.417 | – | – | 4 | – | – |"
    )
    assert lines[5] == (
        "|  | Better 50% & more | 0.800* | 0.800 | +0.000 | 0.900** | 0.950 | -0.050 | 5 | 6 | -1 |"
    )
    assert lines[6] == "| Other systems | Other_run | 0.600 | – | – | 0.800* | – | – | – | – | – |"
    assert lines[7] == (
        f"|  | Fused (CV alpha) | {CV_P1_MEAN:.3f} | – | – | {CV_RR_MEAN:.3f} | – | – | – | – | – |"
    )
    assert lines[8] == ""
    assert "reference row (Ref_BM25)" in lines[9]
    assert lines[10] == "- (ref.): a reference row, the one the others are tested against."
    assert sum("(ref.)" in line for line in lines[4:8]) == 1
    assert lines[-1] == "- A toy note."
    assert text.endswith("\n")


def test_no_negative_zero(table):
    spec, _, _, cells = table
    # 0.8 - 0.8002 = -0.0002 rounds to zero and must print as +0.000, never -0.000.
    assert cells["Better 50% & more"]["P@1"].difference < 0
    assert "-0.000" not in render_markdown(spec, cells)
    assert "-0.000" not in render_latex(spec, cells)


def test_count_column_is_formatted_as_integers(table):
    spec, _, _, cells = table
    text = render_markdown(spec, cells)
    assert "| 4 |" in text and "| 5 | 6 | -1 |" in text
    assert "4.000" not in text and "5.000" not in text and "6.000" not in text


def test_only_count_columns_print_as_integers(table):
    spec, _, _, cells = table
    cells = {label: dict(row) for label, row in cells.items()}
    # A score column whose values all happen to be whole keeps its digits.
    for label in cells:
        cells[label]["P@1"] = Cell(1.0)
    text = render_markdown(spec, cells)
    assert "| 1.000 |" in text and "| 5 | 6 | -1 |" in text


def test_markdown_without_published_values(tmp_path: Path):
    config = {
        "columns": ["RR"],
        "reference": "a",
        "blocks": [{"name": "B", "rows": [{"label": "a", "run": "a"}, {"label": "b", "run": "b"}]}],
    }
    spec = table_spec("plain", config, {"a": "a.trec", "b": "b.trec"})
    cells = {"a": {"RR": Cell(0.25)}, "b": {"RR": Cell(0.5, "*", 0.03)}}
    lines = render_markdown(spec, cells).splitlines()
    assert lines[2] == "|  | run | RR |"
    assert lines[4:6] == ["| B | a (ref.) | 0.250 |", "|  | b | 0.500* |"]
    assert not any("paper" in line for line in lines)


# render_latex ----------------------------------------------------------------------------------


def test_latex_booktabs_and_escaping(table):
    spec, _, _, cells = table
    text = render_latex(spec, cells)
    lines = text.splitlines()
    assert lines[:4] == [
        r"\begin{table}[t]",
        r"\centering",
        r"\begin{tabular}{ll" + "r" * 9 + "}",
        r"\toprule",
    ]
    assert lines[4] == (
        r" & run & \multicolumn{3}{c}{P@1} & \multicolumn{3}{c}{RR} & "
        r"\multicolumn{3}{c}{Rel\_Ret} \\"
    )
    assert lines[5] == r" & & " + " & ".join([r"ours & paper & $\Delta$"] * 3) + r" \\"
    assert text.count(r"\toprule") == 1
    assert text.count(r"\midrule") == 2  # below the header and between the two blocks
    assert text.count(r"\bottomrule") == 1
    assert lines.index(r"\bottomrule") > lines.index(r"\midrule")
    assert (
        r"Base\_lines & Ref\_BM25 (ref.) & 0.000 & -- & -- & 0.417 & -- & -- & 4 & -- & -- \\"
        in lines
    )
    assert (
        r" & Better 50\% \& more & 0.800$^{*}$ & 0.800 & +0.000 & 0.900$^{**}$ & 0.950 & "
        r"-0.050 & 5 & 6 & -1 \\"
    ) in lines
    assert r"\caption{Toy table: 5\_topics, 100\% \& co}" in lines
    assert r"\label{tab:toy_table}" in lines
    assert lines[-1] == r"\end{table}"
    assert "–" not in text  # the en dash of unavailable cells is written as --
    body = lines[lines.index(r"\midrule") + 1 : lines.index(r"\bottomrule")]
    rows = [line for line in body if line != r"\midrule"]
    assert len(rows) == 4
    for line in rows:
        # every & outside the escapes separates the 2 + 3 * 3 cells of a row
        assert line.replace(r"\&", "").count("&") == 10


def test_latex_without_published_values():
    config = {"columns": ["RR"], "blocks": [{"rows": [{"label": "a_1", "run": "a"}]}]}
    spec = table_spec("plain", config, {"a_1": "a.trec"})
    text = render_latex(spec, {"a_1": {"RR": Cell(0.5)}})
    assert r"\begin{tabular}{llr}" in text
    assert r"$\Delta$" not in text
    assert r" & a\_1 & 0.500 \\" in text.splitlines()


# write_table_csv and write_per_query ----------------------------------------------------------


def test_csv_long_format(table, tmp_path: Path):
    spec, _, _, cells = table
    path = tmp_path / "out" / "table.csv"
    write_table_csv(spec, cells, path)
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == [
        "block", "run", "column", "value", "marker", "p_value", "published", "difference",
        "reference",
    ]  # fmt: skip
    assert len(rows) == 1 + 4 * 3
    assert [(row[1], row[2]) for row in rows[1:]] == [
        (label, column) for label in LABELS.values() for column in ("P@1", "RR", "Rel_Ret")
    ]
    records = {(row[1], row[2]): row for row in rows[1:]}
    better = records["Better 50% & more", "RR"]
    assert better[0] == "Base_lines"  # the block name is on every row of the block
    assert records["Fused (CV alpha)", "RR"][0] == "Other systems"
    assert float(better[3]) == pytest.approx(0.9)
    assert better[4] == "**"
    assert float(better[5]) == pytest.approx(_expected_p("better", "RR"), rel=1e-12)
    assert (better[6], float(better[7])) == ("0.95", pytest.approx(-0.05))
    assert float(records["Ref_BM25", "RR"][3]) == pytest.approx(25 / 60)
    assert records["Ref_BM25", "RR"][4:] == ["", "", "", "", "true"]
    assert records["Other_run", "Rel_Ret"][3:] == ["", "", "", "", "", "false"]
    assert records["Better 50% & more", "Rel_Ret"][6:] == ["6.0", "-1.0", "false"]
    assert {row[1] for row in rows[1:] if row[8] == "true"} == {"Ref_BM25"}
    for row in rows[1:]:
        if row[5]:
            assert row[4] == _marker(float(row[5]))


def test_per_query_tsv(table, tmp_path: Path):
    spec, per_query, _, _ = table
    path = tmp_path / "per_query.tsv"
    write_per_query(spec, per_query, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "run\tcolumn\ttopic\tvalue"
    # 3 run rows x 3 columns x 5 topics, less Other_run's unavailable Rel_Ret; the report
    # has P@1 on 4 topics and RR on 5.
    assert len(lines) == 1 + 3 * 3 * 5 - 5 + 4 + 5
    assert not any(line.startswith("Other_run\tRel_Ret") for line in lines)
    assert "Ref_BM25\tRR\t3\t0.3333333333333333" in lines
    assert "Better 50% & more\tP@1\t4\t0.0" in lines
    cv_lines = [line for line in lines if line.startswith("Fused (CV alpha)\t")]
    assert cv_lines[:4] == [
        "Fused (CV alpha)\tP@1\t1\t1.0",
        "Fused (CV alpha)\tP@1\t2\t0.0",
        "Fused (CV alpha)\tP@1\t3\t1.0",
        "Fused (CV alpha)\tP@1\t4\t1.0",
    ]
    assert cv_lines[4:] == [f"Fused (CV alpha)\tRR\t{t}\t{CV_RR[t]!r}" for t in TOPICS]
    for line in lines[1:]:
        run, column, topic, value = line.split("\t")
        assert value == repr(per_query[run][column][topic])
        assert math.isfinite(float(value))


# verdict_notes ---------------------------------------------------------------------------------


def _verdict_spec(verdicts: list[dict], digits: int = 3):
    config = {
        "columns": ["NDCG@10", "MAP"],
        "digits": digits,
        "blocks": [{"rows": [{"label": label, "run": label} for label in ("H", "V", "D", "T")]}],
        "verdicts": verdicts,
    }
    return table_spec("verdicts", config, {label: f"{label}.trec" for label in "HVDT"})


VERDICT_CELLS = {
    "H": {"NDCG@10": Cell(0.5), "MAP": Cell(0.2)},
    "V": {"NDCG@10": Cell(0.4), "MAP": Cell(0.3)},
    "D": {"NDCG@10": Cell(0.6), "MAP": Cell(0.25)},
    "T": {"NDCG@10": Cell(0.5), "MAP": Cell(0.1)},
}


def test_verdict_beats_all():
    spec = _verdict_spec([{"row": "D", "against": ["V", "H"], "column": "NDCG@10"}])
    assert verdict_notes(spec, VERDICT_CELLS) == [
        "D (NDCG@10 0.600) beats all of the compared rows (V 0.400, H 0.500)."
    ]


def test_verdict_beats_only_some():
    spec = _verdict_spec([{"row": "H", "against": ["V", "D"], "column": "NDCG@10"}])
    assert verdict_notes(spec, VERDICT_CELLS) == [
        "H (NDCG@10 0.500) beats only V among the compared rows (V 0.400, D 0.600)."
    ]
    spec = _verdict_spec([{"row": "D", "against": ["V", "H", "T"], "column": "MAP"}])
    assert verdict_notes(spec, VERDICT_CELLS) == [
        "D (MAP 0.250) beats only H, T among the compared rows (V 0.300, H 0.200, T 0.100)."
    ]


def test_verdict_beats_none():
    spec = _verdict_spec([{"row": "H", "against": ["V", "D"], "column": "MAP"}])
    assert verdict_notes(spec, VERDICT_CELLS) == [
        "H (MAP 0.200) beats none of the compared rows (V 0.300, D 0.250)."
    ]


def test_verdict_tie_is_not_a_win_and_digits_apply():
    verdicts = [
        {"row": "H", "against": ["T"], "column": "NDCG@10"},
        {"row": "H", "against": ["T", "V"], "column": "NDCG@10"},
        {"row": "T", "against": ["H"], "column": "MAP"},
    ]
    assert verdict_notes(_verdict_spec(verdicts, digits=2), VERDICT_CELLS) == [
        "H (NDCG@10 0.50) beats none of the compared rows (T 0.50).",
        "H (NDCG@10 0.50) beats only V among the compared rows (T 0.50, V 0.40).",
        "T (MAP 0.10) beats none of the compared rows (H 0.20).",
    ]
    assert verdict_notes(_verdict_spec([]), VERDICT_CELLS) == []


def test_verdict_notes_of_the_toy_table(table):
    spec, _, _, cells = table
    verdict = {"row": "Other_run", "against": ["Ref_BM25", "Better 50% & more"], "column": "RR"}
    config = {**yaml.safe_load(CONFIG_YAML), "verdicts": [verdict]}
    spec = table_spec("toy_table", config, {row.label: row.sources[""][1] for row in spec.rows})
    assert verdict_notes(spec, cells) == [
        "Other_run (RR 0.800) beats only Ref_BM25 among the compared rows "
        "(Ref_BM25 0.417, Better 50% & more 0.900)."
    ]


# largest_gain_notes ----------------------------------------------------------------------------


def _gains_spec(spec, gains: list[dict]):
    config = {**yaml.safe_load(CONFIG_YAML), "largest_gains": gains}
    return table_spec("toy_table", config, {row.label: row.sources[""][1] for row in spec.rows})


def test_largest_gain_notes_of_the_toy_table(table):
    spec, per_query, aggregate, cells = table
    gains = [
        {"row": "Better 50% & more", "over": ["Ref_BM25", "Other_run"], "measure": "RR"},
        {"row": "Better 50% & more", "over": ["Ref_BM25"], "measure": "P@1"},
        {"row": "Other_run", "over": ["Fused (CV alpha)"], "measure": "P@1"},
        {"row": "Fused (CV alpha)", "over": ["Other_run"], "measure": "P@1"},
        {"row": "Ref_BM25", "over": ["Better 50% & more"], "measure": "P@1"},
    ]
    spec = _gains_spec(spec, gains)
    notes = largest_gain_notes(spec, per_query)
    assert notes == [
        # RR gains over Ref 1/2 1/2 2/3 1/4 1/2: topic 3 (1/3 -> 1).
        'Largest RR gain of "Better 50% & more" over "Ref_BM25": topic 3 (0.333 -> 1.000).',
        # over Other 0 1/2 0 0 0: topic 2.
        'Largest RR gain of "Better 50% & more" over "Other_run": topic 2 (0.500 -> 1.000).',
        # P@1 gains 1 1 1 0 1: a tie among topics 1, 2, 3 and 5 goes to the first, topic 1.
        'Largest P@1 gain of "Better 50% & more" over "Ref_BM25": topic 1 (0.000 -> 1.000).',
        # The cross-validated P@1 lacks topic 5, which counts 0: Other_run's 1 there is a gain
        # of 1 (topics 1-4: 0 0 0 -1).
        'Largest P@1 gain of "Other_run" over "Fused (CV alpha)": topic 5 (0.000 -> 1.000).',
        'Largest P@1 gain of "Fused (CV alpha)" over "Other_run": topic 4 (0.000 -> 1.000).',
        'Largest P@1 gain of "Ref_BM25" over "Better 50% & more": none (no topic of 5 scores '
        "higher).",
    ]
    text = render_markdown(spec, cells, notes)
    assert f"- {notes[0]}" in text.splitlines()


def test_largest_gain_notes_tie_order_is_natural_and_missing_topics_count_zero():
    config = {
        "columns": ["P'@10"],
        "digits": 2,
        "blocks": [{"rows": [{"label": "fusion", "run": "f"}, {"label": "ColBERT", "run": "c"}]}],
        "largest_gains": [{"row": "fusion", "over": ["ColBERT"], "measure": "P'@10"}],
    }
    spec = table_spec("t", config, {"fusion": "f.trec", "ColBERT": "c.trec"})
    # A.10 (0.5 - 0.1) and A.9 (0.6 - 0.2, 0.39999999999999997 in floats) tie at +0.4, and A.9
    # comes first in natural order (not as strings). A.219 is missing from ColBERT's scores (a
    # judged-topics measure leaves it out), so it gains 0.4 too, after A.9.
    per_query = {
        "fusion": {"P'@10": {"A.10": 0.5, "A.219": 0.4, "A.9": 0.6, "A.1": 0.1}},
        "ColBERT": {"P'@10": {"A.10": 0.1, "A.9": 0.2, "A.1": 0.3, "A.3": 0.2}},
    }
    assert largest_gain_notes(spec, per_query) == [
        'Largest P\'@10 gain of "fusion" over "ColBERT": topic A.9 (0.20 -> 0.60).'
    ]
    per_query["fusion"]["P'@10"]["A.219"] = 0.5
    assert largest_gain_notes(spec, per_query) == [
        'Largest P\'@10 gain of "fusion" over "ColBERT": topic A.219 (0.00 -> 0.50).'
    ]
    bad = {**config, "largest_gains": [{"row": "fusion", "over": ["BM25"], "measure": "P'@10"}]}
    with pytest.raises(ConfigError, match="'BM25' is not a row label"):
        largest_gain_notes(table_spec("t", bad, {"fusion": "f", "ColBERT": "c"}), per_query)
    bad = {**config, "largest_gains": [{"row": "fusion", "over": ["ColBERT"], "measure": "MAP'"}]}
    with pytest.raises(ConfigError, match='no per-topic "MAP\'"'):
        largest_gain_notes(table_spec("t", bad, {"fusion": "f", "ColBERT": "c"}), per_query)


# overlap_notes ---------------------------------------------------------------------------------


def _run_file(path: Path, lines: list[tuple[str, str, float]]) -> str:
    path.write_text("".join(f"{t} Q0 {d} 0 {s} x\n" for t, d, s in lines), encoding="utf-8")
    return str(path)


def test_overlap_notes(tmp_path: Path):
    first = _run_file(
        tmp_path / "a.trec",
        [
            ("1", "d1", 3), ("1", "d2", 2), ("1", "d3", 1),
            ("2", "x", 2), ("2", "y", 1), ("2", "z", 0.5),
            ("3", "only", 1),
        ],
    )  # fmt: skip
    second = _run_file(
        tmp_path / "b.trec",
        [
            ("1", "d4", 4), ("1", "d2", 5), ("1", "d1", 1),
            ("2", "y", 2), ("2", "x", 1),
            ("4", "other", 1),
        ],
    )  # fmt: skip
    config = {
        "columns": ["RR"],
        "blocks": [{"rows": [{"label": "A", "run": "a"}, {"label": "B", "run": "b"}]}],
        "overlaps": [{"a": "A", "b": "B", "k": 2}, {"a": "B", "b": "A", "k": 3}],
    }
    spec = table_spec("overlap", config, {"A": first, "B": second})
    # Shared topics 1 and 2. k = 2: topic 1 {d1, d2} & {d2, d4} = 1 of 2, topic 2 {x, y} & {y, x}
    # = 2 of 2, mean 3/4. k = 3: topic 1 {d1, d2, d3} & {d2, d4, d1} = 2 of 3, topic 2
    # {x, y, z} & {y, x} = 2 of 3, mean 2/3.
    assert overlap_notes(spec) == [
        "Top-2 overlap of A and B: 75.0% of the documents on average over 2 topics.",
        "Top-3 overlap of B and A: 66.7% of the documents on average over 2 topics.",
    ]


def test_overlap_notes_without_shared_topics(tmp_path: Path):
    first = _run_file(tmp_path / "a.trec", [("1", "d1", 1)])
    second = _run_file(tmp_path / "b.trec", [("2", "d1", 1)])
    config = {
        "columns": ["RR"],
        "blocks": [{"rows": [{"label": "A", "run": "a"}, {"label": "B", "run": "b"}]}],
        "overlaps": [{"a": "A", "b": "B", "k": 10}],
    }
    spec = table_spec("overlap", config, {"A": first, "B": second})
    assert overlap_notes(spec) == [
        "Top-10 overlap of A and B: 0.0% of the documents on average over 0 topics."
    ]
    assert (
        overlap_notes(table_spec("none", {**config, "overlaps": []}, {"A": first, "B": second}))
        == []
    )


# blocks about one topic ------------------------------------------------------------------------

TOPIC_CONFIG_YAML = """\
title: Sample topics
measures: [P@1, RR, Rel_Ret]
columns: [P@1, RR, Rel_Ret]
blocks:
  - name: "Topic 4"
    topic: "4"
    rows:
      - {label: Ref (4), run: ref, published: {P@1: 0.0, RR: 0.25}}
      - {label: Better (4), run: better}
      - {label: CV (4), crossval: toy-cv}
  - name: "Topic 5"
    topic: "5"
    rows:
      - {label: Ref (5), run: ref}
      - {label: CV (5), crossval: toy-cv}
  - name: All topics
    rows:
      - {label: Ref (all), run: ref}
"""


@pytest.fixture
def topic_table(tmp_path: Path):
    qrels = tmp_path / "toy.qrels"
    qrels.write_text(QRELS, encoding="utf-8")
    files = {name: _run_file(tmp_path / f"{name}.trec", lines) for name, lines in RUNS.items()}
    report = tmp_path / "toy-cv.json"
    report.write_text(json.dumps(_crossval_report()), encoding="utf-8")
    files["cv"] = str(report)
    config = yaml.safe_load(TOPIC_CONFIG_YAML)
    sources = {
        row["label"]: files[row.get("run", "cv")]
        for block in config["blocks"]
        for row in block["rows"]
    }
    spec = table_spec("sample_topics", config, sources)
    per_query, aggregate = score_rows(spec, {"qrels": str(qrels)})
    return spec, per_query, aggregate, table_cells(spec, per_query, aggregate)


def test_block_topic_is_on_its_rows(topic_table):
    spec = topic_table[0]
    assert [row.topic for row in spec.rows] == ["4", "4", "4", "5", "5", None]
    assert [name for name, _ in spec.blocks] == ["Topic 4", "Topic 5", "All topics"]


def test_block_topic_shows_that_topics_values(topic_table):
    _, per_query, aggregate, cells = topic_table
    # Topic 4 is the 4th entry of each per-topic list; topic 5 the 5th.
    for label, name, index, topic in [
        ("Ref (4)", "ref", 3, "4"),
        ("Better (4)", "better", 3, "4"),
        ("Ref (5)", "ref", 4, "5"),
    ]:
        expected = {column: values[index] for column, values in PER_TOPIC[name].items()}
        assert aggregate[label] == pytest.approx(expected), label
        assert per_query[label] == {
            column: {topic: pytest.approx(value)} for column, value in expected.items()
        }
    assert aggregate["Ref (4)"] == pytest.approx({"P@1": 0.0, "RR": 0.25, "Rel_Ret": 1.0})
    assert aggregate["Ref (5)"] == pytest.approx({"P@1": 0.0, "RR": 0.5, "Rel_Ret": 0.0})
    # The same run in a block without a topic still shows its mean over all topics.
    assert aggregate["Ref (all)"] == pytest.approx({"P@1": 0.0, "RR": 25 / 60, "Rel_Ret": 4.0})
    # A cross-validation report gives the topic's cross-validated score; its P@1 lacks topic 5.
    assert aggregate["CV (4)"] == {"P@1": CV_P1["4"], "RR": CV_RR["4"]}
    assert aggregate["CV (5)"] == {"RR": CV_RR["5"]}
    assert cells["CV (5)"]["P@1"] == Cell(None)
    assert cells["Ref (4)"]["RR"] == Cell(pytest.approx(0.25), published=0.25)
    assert cells["Ref (4)"]["RR"].difference == pytest.approx(0.0)


def test_block_topic_in_markdown_and_per_query(topic_table, tmp_path: Path):
    spec, per_query, _, cells = topic_table
    lines = render_markdown(spec, cells).splitlines()
    assert (
        lines[4]
        == "| Topic 4 | Ref (4) | 0.000 | 0.000 | +0.000 | 0.250 | 0.250 | +0.000 | 1 | – | – |"
    )
    assert lines[5] == "|  | Better (4) | 0.000 | – | – | 0.500 | – | – | 1 | – | – |"
    assert lines[6] == "|  | CV (4) | 1.000 | – | – | 0.500 | – | – | – | – | – |"
    assert lines[7] == "| Topic 5 | Ref (5) | 0.000 | – | – | 0.500 | – | – | 0 | – | – |"
    assert lines[8] == "|  | CV (5) | – | – | – | 0.500 | – | – | – | – | – |"
    assert lines[9] == "| All topics | Ref (all) | 0.000 | – | – | 0.417 | – | – | 4 | – | – |"
    path = tmp_path / "per_query.tsv"
    write_per_query(spec, per_query, path)
    rows = [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    topics = {label: {topic for run, _, topic, _ in rows if run == label} for label in per_query}
    assert topics["Ref (4)"] == topics["Better (4)"] == topics["CV (4)"] == {"4"}
    assert topics["Ref (5)"] == topics["CV (5)"] == {"5"}
    assert topics["Ref (all)"] == set(TOPICS)


# column groups, published-only rows, block references, percent / per mille ------------------

# Group B is a second collection: its own qrels and topics, RR and Judged@10 (in percent).
QRELS_B = "b1 0 e1 1\nb1 0 e2 0\nb2 0 e3 1\nb3 0 e4 1\n"
RUNS_B = {
    # RR 1/2 1/2 1, Judged@10 1 1/2 1
    "bref": [("b1", "e2", 3), ("b1", "e1", 2), ("b2", "x", 2), ("b2", "e3", 1), ("b3", "e4", 1)],
    # RR 1 1 0, Judged@10 1 1/2 0
    "bx": [("b1", "e1", 3), ("b2", "e3", 2), ("b2", "y", 1), ("b3", "z", 2), ("b3", "w", 1)],
}
GROUPED_YAML = """\
title: Grouped
groups:
  - {name: A, collection: a, topics: t, measures: [RR, P@1], columns: [RR, P@1]}
  - {name: B, collection: b, topics: t, measures: [RR, Judged@10], columns: [RR, Judged@10],
     display: {Judged@10: percent}}
reference: Ref
blocks:
  - name: Ours
    rows:
      - {label: Ref, runs: {A: ref, B: bref}}
      - {label: Better, runs: {A: better}}
      - {label: X, runs: {A: other, B: bx}, published: {B: {Judged@10: 40.0}}}
  - name: Second
    reference: Better
    rows:
      - {label: Other again, run: other}
  - name: Paper
    rows:
      - {label: Paper row, published_only: paper-row, published_source: "Someone 2021, Table 9",
         published: {A: {RR: 0.7}, B: {Judged@10: 55.5}}}
"""


@pytest.fixture
def grouped(tmp_path: Path):
    from hybrid_ir.reports.tables.results import source_key

    for name, text in (("a.qrels", QRELS), ("b.qrels", QRELS_B)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    files = {n: _run_file(tmp_path / f"{n}.trec", lines) for n, lines in {**RUNS, **RUNS_B}.items()}
    config = yaml.safe_load(GROUPED_YAML)
    # "Other again" names one run for every group; group B gets the B-side file of that name.
    inputs = {
        source_key("qrels", "A"): str(tmp_path / "a.qrels"),
        source_key("qrels", "B"): str(tmp_path / "b.qrels"),
        "A: Ref": files["ref"], "B: Ref": files["bref"], "A: Better": files["better"],
        "A: X": files["other"], "B: X": files["bx"],
        "A: Other again": files["other"], "B: Other again": files["bx"],
    }  # fmt: skip
    spec = table_spec("grouped", config, inputs)
    per_query, aggregate = score_rows(spec, inputs)
    return spec, per_query, aggregate, table_cells(spec, per_query, aggregate)


def test_groups_are_scored_against_their_own_qrels(grouped):
    spec, per_query, aggregate, _ = grouped
    assert spec.columns == ("A: RR", "A: P@1", "B: RR", "B: Judged@10")
    assert per_query["Ref"]["A: RR"] == pytest.approx(
        dict(zip(TOPICS, PER_TOPIC["ref"]["RR"], strict=True))
    )
    assert per_query["Ref"]["B: RR"] == pytest.approx({"b1": 0.5, "b2": 0.5, "b3": 1.0})
    assert per_query["X"]["B: Judged@10"] == pytest.approx({"b1": 1.0, "b2": 0.5, "b3": 0.0})
    assert aggregate["X"]["B: RR"] == pytest.approx(2 / 3)
    # A row with runs in group A only has nothing in B; a published-only row nothing at all.
    assert not any(key.startswith("B:") for key in per_query["Better"])
    assert per_query["Paper row"] == aggregate["Paper row"] == {}


def test_groups_are_tested_against_the_reference_run_of_the_same_group(grouped):
    cells = grouped[3]
    b_rr = ttest_rel([1, 1, 0], [0.5, 0.5, 1]).pvalue
    assert cells["X"]["B: RR"].p_value == pytest.approx(float(b_rr), rel=1e-12)
    a_rr = _expected_p("other", "RR")
    assert cells["X"]["A: RR"].p_value == pytest.approx(a_rr, rel=1e-12)
    assert cells["Better"]["B: RR"] == Cell(None)
    assert cells["Ref"]["B: RR"].p_value is None


def test_block_reference_replaces_the_tables(grouped):
    spec, _, _, cells = grouped
    # "Other again" (block Second) is tested against Better, not Ref; Better has no B run.
    against_better = ttest_rel(PER_TOPIC["other"]["RR"], PER_TOPIC["better"]["RR"]).pvalue
    assert cells["Other again"]["A: RR"].p_value == pytest.approx(float(against_better))
    assert cells["Other again"]["A: RR"].p_value != pytest.approx(_expected_p("other", "RR"))
    assert cells["Other again"]["B: RR"].p_value is None
    assert cells["Other again"]["B: RR"].value == pytest.approx(2 / 3)
    assert spec.block_references == {"Second": "Better"}
    legend = render_markdown(spec, cells)
    assert "the reference row (Ref) (in Second: Better) at p < 0.05" in legend


def test_published_only_row_shows_the_papers_values_and_is_never_tested(grouped, tmp_path):
    spec, per_query, _, cells = grouped
    row = cells["Paper row"]
    assert row["A: RR"] == Cell(None, published=0.7)
    assert row["B: Judged@10"] == Cell(None, published=55.5)
    assert all(cell.p_value is None and cell.marker == "" for cell in row.values())
    lines = render_markdown(spec, cells).splitlines()
    # With paper / Δ sub-columns (row X has a paper value), its values fill the paper cells.
    assert lines[8] == (
        "| Paper | Paper row § | – | 0.700 | – | – | – | – | – | – | – | – | 55.5 | – |"
    )
    assert (
        "- §: published-only row: the paper's values, with no run here, so never in a "
        "significance test."
    ) in lines
    assert "- Source of Paper row §: Someone 2021, Table 9." in lines
    assert r" & Paper row \S{} & " in render_latex(spec, cells)
    path = tmp_path / "t.csv"
    write_table_csv(spec, cells, path)
    records = [r for r in csv.DictReader(path.open(encoding="utf-8")) if r["run"] == "Paper row"]
    assert {r["marker"] for r in records} == {"published-only"}
    assert {r["column"]: r["published"] for r in records if r["published"]} == {
        "A: RR": "0.7",
        "B: Judged@10 %": "55.5",
    }
    assert all(r["value"] == r["difference"] == r["p_value"] == "" for r in records)
    write_per_query(spec, per_query, tmp_path / "t.tsv")
    assert "Paper row" not in (tmp_path / "t.tsv").read_text(encoding="utf-8")


def test_grouped_markdown_csv_and_per_query_name_the_group(grouped, tmp_path):
    spec, per_query, _, cells = grouped
    lines = render_markdown(spec, cells).splitlines()
    assert lines[2] == (
        "|  | run | A: RR | paper | Δ | A: P@1 | paper | Δ | B: RR | paper | Δ | "
        "B: Judged@10 % | paper | Δ |"
    )
    # Judged@10 of X: mean(1, 1/2, 0) = 0.5, printed 50.0 against the paper's 40.0 percent.
    assert lines[6].endswith("| 0.667 | – | – | 50.0 | 40.0 | +10.0 |")
    assert cells["X"]["B: Judged@10"].difference == pytest.approx(10.0)
    write_table_csv(spec, cells, tmp_path / "t.csv")
    columns = {r["column"] for r in csv.DictReader((tmp_path / "t.csv").open(encoding="utf-8"))}
    assert columns == {"A: RR", "A: P@1", "B: RR", "B: Judged@10 %"}
    write_per_query(spec, per_query, tmp_path / "t.tsv")
    rows = [line.split("\t") for line in (tmp_path / "t.tsv").read_text().splitlines()[1:]]
    # Per-topic values stay fractions; the group in the column keeps B's RR apart from A's.
    assert ["X", "B: Judged@10", "b2", "0.5"] in rows
    assert ["X", "B: RR", "b3", "0.0"] in rows and ["X", "A: RR", "5", "1.0"] in rows
    latex = render_latex(spec, cells).splitlines()
    assert latex[4] == r" & & \multicolumn{6}{c}{A} & \multicolumn{6}{c}{B} \\"
    assert latex[5] == r"\cmidrule(lr){3-8} \cmidrule(lr){9-14}"
    assert r"\multicolumn{3}{c}{Judged@10 \%}" in latex[6]


def test_permille_of_ours_and_the_papers_value():
    config = {
        "columns": ["Judged@1000", "BPref"],
        "display": {"Judged@1000": "permille"},
        "blocks": [
            {"rows": [{"label": "ours", "run": "r", "published": {"Judged@1000": 21.9}}]},
            {"rows": [{"label": "theirs", "published_only": "t", "published": {"BPref": 0.5}}]},
        ],
    }
    spec = table_spec("pm", config, {"ours": "r.trec"})
    aggregate = {"ours": {"Judged@1000": 0.0219, "BPref": 0.25}, "theirs": {}}
    cells = table_cells(spec, {"ours": {}, "theirs": {}}, aggregate)
    assert cells["ours"]["Judged@1000"].value == pytest.approx(21.9)
    assert cells["ours"]["Judged@1000"].difference == pytest.approx(0.0)
    lines = render_markdown(spec, cells).splitlines()
    assert lines[2] == "|  | run | Judged@1000 ‰ | paper | Δ | BPref | paper | Δ |"
    assert lines[4] == "|  | ours | 21.9 | 21.9 | +0.0 | 0.250 | – | – |"
    assert lines[5] == "|  | theirs § | – | – | – | – | 0.500 | – |"
    assert "- ‰: the measure in per mille, ours and the paper's alike." in lines
    assert r"\multicolumn{3}{c}{Judged@1000 \textperthousand{}}" in render_latex(spec, cells)


def test_published_only_rows_fill_the_value_cells_when_no_row_of_ours_has_paper_values():
    config = {
        "columns": ["RR", "Judged@10"],
        "display": {"Judged@10": "percent"},
        "blocks": [
            {"rows": [{"label": "(1) theirs", "published_only": "t",
                       "published": {"RR": 0.25, "Judged@10": 45.3}}]},
            {"rows": [{"label": "ours", "run": "r"}]},
        ],
    }  # fmt: skip
    spec = table_spec("compact", config, {"ours": "r.trec"})
    cells = table_cells(
        spec,
        {"ours": {}, "(1) theirs": {}},
        {"ours": {"RR": 0.5, "Judged@10": 0.2}, "(1) theirs": {}},
    )
    assert not spec.has_published
    lines = render_markdown(spec, cells).splitlines()
    assert lines[2] == "|  | run | RR | Judged@10 % |"
    assert lines[4:6] == ["|  | (1) theirs § | 0.250 | 45.3 |", "|  | ours | 0.500 | 20.0 |"]


# bad table configuration: one line naming the key, at DAG build time -------------------------

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


def _default_config() -> dict:
    return yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))


def _validated(config: dict, published: dict | None = None, tmp_path: Path | None = None) -> dict:
    from hybrid_ir.config.published import fill_published
    from hybrid_ir.config.validation import validate_config

    if published is not None and tmp_path is not None:
        path = tmp_path / "published.yaml"
        path.write_text(yaml.safe_dump(published, allow_unicode=True), encoding="utf-8")
        config["tables"]["paper000-table1"]["published_from"] = str(path)
    validate_config(config, SCHEMA)
    fill_published(config, [])
    return config


def _table1_file() -> dict:
    return yaml.safe_load((REPO / "expected" / "paper000-table1.yaml").read_text(encoding="utf-8"))


def test_default_table1_has_the_papers_12_rows_and_our_runs(monkeypatch):
    monkeypatch.chdir(REPO)
    config = _validated(_default_config())
    table = config["tables"]["paper000-table1"]
    rows = [row for block in table["blocks"] for row in block["rows"]]
    paper = [row for row in rows if "published_only" in row]
    assert [row["label"].split(")")[0] for row in paper] == [f"({n}" for n in range(1, 13)]
    assert all(row["published"] and row["published_source"] for row in paper)
    assert paper[4]["published"] == {"NTCIR-12": {"Full BPref": 0.614, "Part. BPref": 0.736}}
    assert paper[0]["published"]["NTCIR-12"]["Judged@1000"] == 21.9
    assert paper[11]["published"]["ARQMath-2"]["Judged@10"] == 69.5
    # The official views, then the pool-restricted ones of the ARQMath thread sample.
    assert [g["qrels"] for g in table["groups"]] == [
        "all", "arqmath1", "arqmath2", "arqmath1-in-corpus", "arqmath2-in-corpus"
    ]  # fmt: skip
    # Table 3's previous systems are ARQMath-2 rows only.
    names = [b["name"] for b in config["tables"]["paper000-table3-arqmath2"]["blocks"]]
    assert names[0] == "Previous systems (paper)"
    first = config["tables"]["paper000-table3-arqmath1"]["blocks"]
    assert "Previous systems (paper)" not in [block["name"] for block in first]
    assert not any("only_for_topics" in block for block in first)


def _ours(config: dict) -> dict:
    return config["tables"]["paper000-table1"]["blocks"][3]["rows"][0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda c: _ours(c)["runs"].update({"ARQMath-2": "no-such-run"}),
            r"config: tables\.paper000-table1\.blocks\.DPR, MiniLM as is\.runs\.ARQMath-2: no run "
            r"'no-such-run' for arqmath/arqmath2",
        ),
        (
            lambda c: _ours(c)["runs"].update({"ARQMath-3": "dpr-minilm"}),
            r"tables\.paper000-table1\.blocks\.DPR, MiniLM as is\.runs: no group 'ARQMath-3' "
            r"\(groups: NTCIR-12, ARQMath-1, ARQMath-2, ARQMath-1, in sample, "
            r"ARQMath-2, in sample\)",
        ),
        (
            # A run for every group reaches NTCIR-12, where this config makes no runs.
            lambda c: _ours(c).pop("runs") and _ours(c).update({"run": "dpr-minilm"}),
            r"config: tables\.paper000-table1\.blocks\.DPR, MiniLM as is: no run 'dpr-minilm' "
            r"for ntcir12/all; known: none",
        ),
        (
            lambda c: c["tables"]["paper000-table1"]["groups"][1].update({"collection": "nope"}),
            r"config: tables\.paper000-table1\.groups\.ARQMath-1: no collection 'nope'",
        ),
        (
            lambda c: c["tables"]["paper000-table1"]["groups"][2]["display"].update(
                {"Judged": "percent"}
            ),
            r"tables\.paper000-table1\.groups\.ARQMath-2\.display: 'Judged' is not one of its "
            "columns",
        ),
        (
            lambda c: c["tables"]["paper000-table1"]["groups"][2]["display"].update(
                {"BPref": "per-cent"}
            ),
            r"tables\.paper000-table1\.groups\.2\.display\.BPref: 'per-cent' is not one of",
        ),
        (
            lambda c: c["tables"]["paper000-table1"].update({"reference": "(12) Our ColBERT"}),
            r"tables\.paper000-table1\.reference: '\(12\) Our ColBERT' is a published-only row",
        ),
        (
            lambda c: c["tables"]["paper000-table1"]["blocks"][0].update({"reference": "nobody"}),
            r"tables\.paper000-table1\.blocks\.DPR models fine-tuned for 1 epoch \(paper\)\."
            r"reference: 'nobody' is not a row label",
        ),
        (
            lambda c: c["tables"]["paper000-table1"]["groups"].append(
                dict(c["tables"]["paper000-table1"]["groups"][1])
            ),
            r"tables\.paper000-table1\.groups: group names must be unique",
        ),
    ],
    ids=[
        "unknown-run",
        "unknown-group-in-runs",
        "run-in-a-group-without-runs",
        "collection-of-a-group-with-runs",
        "display-of-a-column-not-shown",
        "display-kind",
        "published-only-reference",
        "block-reference",
        "duplicate-group",
    ],
)
def test_bad_table_configuration_names_the_key(monkeypatch, change, message):
    monkeypatch.chdir(REPO)
    config = _default_config()
    change(config)
    with pytest.raises(ConfigError, match=message):
        _validated(config)


MATHBERT = r"tables\.paper000-table1\.blocks\.\(5\) MathBERT † \(2021\)"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda p: p["published"]["mathbert"]["NTCIR-12"].update({"P@10": 0.5}),
            MATHBERT + r"\.published \(.*published\.yaml, key 'mathbert'\): 'P@10' is not a "
            r"column group 'NTCIR-12' shows \(Full BPref, Part\. BPref, Judged@1000\)",
        ),
        (
            lambda p: p["published"]["mathbert"].update({"NTCIR-13": {"Full BPref": 0.5}}),
            MATHBERT + r"\.published .*: no group 'NTCIR-13'",
        ),
        (
            lambda p: p["published"].pop("mathbert"),
            MATHBERT + r"\.published_only: no published values for 'mathbert'",
        ),
        (
            lambda p: p["sources"].pop("mathbert"),
            MATHBERT + r"\.published_only: no 'sources' entry naming where 'mathbert' comes from",
        ),
    ],
    ids=["column-not-shown", "unknown-group", "no-values", "no-source"],
)
def test_bad_published_values_name_the_key(monkeypatch, tmp_path, change, message):
    monkeypatch.chdir(REPO)
    published = _table1_file()
    change(published)
    with pytest.raises(ConfigError, match=message):
        _validated(_default_config(), published, tmp_path)


def test_a_group_of_published_values_only_needs_no_configured_collection(monkeypatch):
    monkeypatch.chdir(REPO)
    config = _default_config()
    config["tables"]["paper000-table1"]["groups"][0]["collection"] = "not-configured"
    assert _validated(config)["tables"]["paper000-table1"]["groups"][0]["qrels"] == "all"


def test_published_value_for_a_column_a_table_without_groups_does_not_show(monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    config = _default_config()
    table = config["tables"]["paper000-table4"]
    table["blocks"][0]["rows"][0]["published"] = {"Judged@10": 40.0}
    with pytest.raises(
        ConfigError,
        match=r"config: tables\.paper000-table4\.blocks\.Borda Count\.published "
        r"\(expected/paper000-table4\.yaml, key 'a0-colbert-borda'\): 'Judged@10' is not a column "
        r"the table shows \(nDCG', MAP', P'@10, BPref\)",
    ):
        _validated(config)


def test_bm25_table_prints_counts_as_integers(tmp_path: Path):
    from hybrid_ir import paths
    from hybrid_ir.reports.tables.bm25 import bm25_rows, write_csv, write_markdown

    experiments = {
        "arqmath": {"layouts": ["flat"], "topics": "t1", "qrels": {"t1": ["nDCG'", "Rel_Ret"]}}
    }
    evaluation = tmp_path / paths.evaluation("arqmath", "t1", "bm25-flat", "t1")
    evaluation.parent.mkdir(parents=True)
    evaluation.write_text(json.dumps({"aggregate": {"nDCG'": 0.25, "Rel_Ret": 118.0}}))
    expected = [
        {
            "collection": "arqmath",
            "runs": {"bm25-flat": {"t1": {"Rel_Ret": {"value": 118.0, "tolerance": 0}}}},
        }
    ]
    rows = bm25_rows(experiments, expected, tmp_path)
    assert [(row.metric, row.reproduced, row.status) for row in rows] == [
        ("nDCG'", 0.25, "-"),
        ("Rel_Ret", 118, "PASS"),
    ]
    write_markdown(rows, tmp_path / "bm25.md", "BM25", [])
    assert "| bm25-flat | 0.2500 | – | 118 | 118 |" in (tmp_path / "bm25.md").read_text()
    write_csv(rows, tmp_path / "bm25.csv")
    records = list(csv.DictReader((tmp_path / "bm25.csv").open()))
    assert [record["reproduced"] for record in records] == ["0.250000", "118"]


def test_note_placeholders_take_numbers_from_the_cells(table):
    spec, _, _, cells = table
    note = (
        "Better 50% & more: RR {row:Better 50% & more/RR} against the printed "
        "{paper:Better 50% & more/RR}, Rel_Ret {row:Better 50% & more/Rel_Ret}, "
        "P@1 {row:Better 50% & more/P@1} (reference {row:Ref_BM25/P@1})."
    )
    # Formatted as the cells print them: the table's 3 digits, counts whole, no t-test marker.
    assert fill_note(spec, cells, note) == (
        "Better 50% & more: RR 0.900 against the printed 0.950, Rel_Ret 5, P@1 0.800 "
        "(reference 0.000)."
    )
    assert fill_note(spec, cells, "no placeholder: {x} 0.5/1") == "no placeholder: {x} 0.5/1"
    noted = dataclasses.replace(spec, notes=("RR is {row:Other_run/RR}.",))
    assert "- RR is 0.800." in render_markdown(noted, cells).splitlines()


@pytest.mark.parametrize(
    ("placeholder", "problem"),
    [
        ("{row:Nobody/RR}", "no row labelled 'Nobody'"),
        ("{row:Ref_BM25/nDCG}", "no column 'nDCG' \\(columns: P@1, RR, Rel_Ret\\)"),
        ("{paper:Ref_BM25/RR}", "row 'Ref_BM25' has no published value in 'RR'"),
        ("{row:Other_run/Rel_Ret}", "row 'Other_run' has no value of ours in 'Rel_Ret'"),
    ],
)
def test_a_bad_note_placeholder_names_the_table_and_placeholder(table, placeholder, problem):
    spec, _, _, cells = table
    with pytest.raises(ConfigError, match=rf"^config: tables\.toy_table\.notes: .*: {problem}"):
        fill_note(spec, cells, f"quoted: {placeholder}.")


@pytest.mark.parametrize(
    "path", sorted(str(p) for p in [Path("config.yaml"), *Path("configs").glob("*.yaml")])
)
def test_note_placeholders_of_the_shipped_configs_name_rows_and_columns(path: str):
    """Every placeholder in a shipped table note names a row and a column of its table, so a
    note never fails to render (the render itself needs the runs)."""
    from hybrid_ir.reports.tables.spec import NOTE_PLACEHOLDER, column_key, table_groups

    root = Path(__file__).resolve().parents[1]
    tables = (yaml.safe_load((root / path).read_text(encoding="utf-8")) or {}).get("tables") or {}
    for name, table in tables.items():
        # An overlay (configs/paper.yaml) may change a table's notes only: check complete ones.
        quoted = [m for note in table.get("notes", []) for m in NOTE_PLACEHOLDER.finditer(note)]
        if not quoted:
            continue
        labels = {row["label"] for block in table["blocks"] for row in block["rows"]}
        columns = {
            column_key(group["name"], column)
            for group in table_groups(table)
            for column in group["columns"]
        }
        for match in quoted:
            assert match.group(2) in labels, (name, match.group(0))
            assert match.group(3) in columns, (name, match.group(0))
