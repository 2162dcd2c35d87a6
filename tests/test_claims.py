"""Claims: verdicts on synthetic per-topic scores with known effects, the reproducibility
measures against their definitions, the claims files' bad input, and ``hybrid-ir claims``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.stats import ttest_rel

from hybrid_ir.cli.main import main
from hybrid_ir.config.claim_setups import claims_by_paper
from hybrid_ir.errors import ConfigError
from hybrid_ir.evaluation.reproducibility import delta_ri, effect_ratio
from hybrid_ir.reports.claims import verdicts as claims_module
from hybrid_ir.reports.claims.file import check_claims, load_claims
from hybrid_ir.reports.claims.verdicts import (
    CONTRADICTED,
    INCONCLUSIVE,
    NOT_HERE,
    SUPPORTED,
    judge,
    paired_effect,
    write_verdicts,
)

REPO = Path(__file__).resolve().parents[1]
TABLE = {
    "blocks": [
        {"rows": [{"label": "paper A", "published_only": "a"},
                  {"label": "paper B", "published_only": "b"}]},
        {"rows": [{"label": "A", "run": "a"}, {"label": "B", "run": "b"}]},
    ],
    "columns": ["nDCG@10", "MAP"],
}  # fmt: skip


def _scores(seed: int, n: int, shift: float, noise: float = 0.05) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    baseline = rng.uniform(0.2, 0.6, n)
    system = baseline + shift + rng.normal(0, noise, n)
    topics = [f"q{i}" for i in range(n)]
    return dict(zip(topics, system, strict=True)), dict(zip(topics, baseline, strict=True))


SETUPS = {
    table: {"collections": ["c"], "described": "the paper's collection c"}
    for table in ("t", "nowhere")
}


def _claims_file(tmp_path: Path, claims: list[dict], **top) -> Path:
    path = tmp_path / "paper009.yaml"
    document = {"paper": "009", "setups": SETUPS, "claims": claims, **top}
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def _claim(**changes) -> dict:
    return {
        "id": "a-beats-b", "claim": "A beats B.", "where": "Table 9", "table": "t",
        "column": "nDCG@10", "system": "A", "baseline": "B", "paper_test": None, **changes,
    }  # fmt: skip


def _judge(tmp_path, system, baseline, table_published=None, setup=None, **changes):
    claims = load_claims(_claims_file(tmp_path, [_claim(**changes)]))
    per_query = {"t": {("A", "nDCG@10"): system, ("B", "nDCG@10"): baseline}}
    setups = None if setup is None else {"a-beats-b": setup}
    return judge(claims, per_query, {"t": table_published or {}}, setups)[0]


def test_a_large_effect_in_the_claimed_direction_is_supported(tmp_path):
    system, baseline = _scores(1, 50, 0.1)
    verdict = _judge(tmp_path, system, baseline)
    assert verdict.verdict == SUPPORTED and verdict.topics == 50
    differences = np.array([system[t] - baseline[t] for t in system])
    assert verdict.effect == pytest.approx(differences.mean())
    assert verdict.p == pytest.approx(
        ttest_rel(list(system.values()), list(baseline.values())).pvalue
    )
    assert verdict.ci_low < verdict.effect < verdict.ci_high and verdict.ci_low > 0


def test_the_opposite_direction_is_contradicted(tmp_path):
    system, baseline = _scores(2, 50, -0.1)
    assert _judge(tmp_path, system, baseline).verdict == CONTRADICTED
    assert _judge(tmp_path, system, baseline, direction="less").verdict == SUPPORTED


def test_no_effect_is_inconclusive_and_says_whether_the_paper_effect_was_detectable(tmp_path):
    system, baseline = _scores(3, 60, 0.0)
    large = {("paper A", "nDCG@10"): 0.5, ("paper B", "nDCG@10"): 0.3}
    rows = {"system": "paper A", "baseline": "paper B"}
    powered = _judge(tmp_path, system, baseline, large, paper_rows=rows)
    assert powered.verdict == INCONCLUSIVE and "is above what these 60 topics" in powered.reason
    assert "shows no effect that large" in powered.reason
    assert powered.paper_effect == pytest.approx(0.2) and powered.detectable_effect < 0.2
    tiny = {("paper A", "nDCG@10"): 0.301, ("paper B", "nDCG@10"): 0.3}
    underpowered = _judge(tmp_path, system, baseline, tiny, paper_rows=rows)
    assert underpowered.verdict == INCONCLUSIVE
    assert "could not have shown it either way" in underpowered.reason


def test_the_detectable_effect_has_80_percent_power_by_simulation():
    """Differences drawn with a mean equal to the detectable effect of their topic set are
    significant at alpha = 0.05 in about 80 % of samples."""
    rng = np.random.default_rng(7)
    n, sd = 40, 0.1
    draw = rng.normal(0, 1, n)
    reference = (draw - draw.mean()) / draw.std(ddof=1) * sd  # its standard deviation exactly sd
    detectable = paired_effect(
        {f"q{i}": d for i, d in enumerate(reference)}, {f"q{i}": 0.0 for i in range(n)}
    ).detectable_effect
    hits = 0
    for _ in range(2000):
        sample = rng.normal(detectable, sd, n)
        hits += ttest_rel(sample, np.zeros(n)).pvalue < 0.05
    assert 0.74 < hits / 2000 < 0.86


def test_fewer_than_five_paired_topics_are_inconclusive_without_a_test(tmp_path):
    system, baseline = _scores(4, 4, 0.3)
    verdict = _judge(tmp_path, system, baseline)
    assert verdict.verdict == INCONCLUSIVE and verdict.p is None
    assert "fewer than 5 paired topics" in verdict.reason


def test_holm_correction_runs_across_the_paper_claims(tmp_path):
    weak, weak_base = _scores(6, 40, 0.01, noise=0.03)  # p = 0.038 alone
    strong, base = _scores(5, 40, 0.1)
    per_query = {"t": {("A", "nDCG@10"): weak, ("B", "nDCG@10"): weak_base,
                       ("C", "nDCG@10"): strong, ("D", "nDCG@10"): base}}  # fmt: skip
    alone = judge(load_claims(_claims_file(tmp_path, [_claim()])), per_query, {"t": {}})[0]
    assert alone.p == alone.p_adjusted < 0.05 and alone.verdict == SUPPORTED
    # Two claims at p = 0.038: the smaller p counts twice, and the other is never below it.
    twice = [_claim(), _claim(id="again")]
    first, second = judge(load_claims(_claims_file(tmp_path, twice)), per_query, {"t": {}})
    assert first.p_adjusted == second.p_adjusted == pytest.approx(2 * alone.p)
    assert first.verdict == second.verdict == INCONCLUSIVE
    # Beside a strong claim, the weak one keeps its own p (Holm's last step multiplies by 1).
    both = [_claim(), _claim(id="strong", system="C", baseline="D")]
    weak_verdict, strong_verdict = judge(
        load_claims(_claims_file(tmp_path, both)), per_query, {"t": {}}
    )
    assert strong_verdict.p_adjusted == pytest.approx(2 * strong_verdict.p)
    assert weak_verdict.p_adjusted == pytest.approx(alone.p) and weak_verdict.verdict == SUPPORTED
    uncorrected = _claims_file(tmp_path, twice, correction="none")
    assert [v.verdict for v in judge(load_claims(uncorrected), per_query, {"t": {}})] == [
        SUPPORTED
    ] * 2


def test_effect_ratio_and_delta_ri_follow_breuer_et_al():
    # ER = mean improvement here / mean improvement in the paper; ΔRI = RI here - RI there.
    assert effect_ratio(0.05, 0.1) == pytest.approx(0.5)
    assert effect_ratio(-0.05, 0.1) == pytest.approx(-0.5)
    assert effect_ratio(0.05, 0.0) is None
    assert delta_ri(0.33, 0.3, 0.44, 0.4) == pytest.approx(0.1 - 0.1)
    assert delta_ri(0.36, 0.3, 0.44, 0.4) == pytest.approx(0.2 - 0.1)
    assert delta_ri(0.3, 0.0, 0.4, 0.3) is None


def test_published_numbers_and_a_table_the_configuration_lacks(tmp_path):
    system, baseline = _scores(8, 30, 0.05)
    verdict = _judge(tmp_path, system, baseline, published={"system": 0.6, "baseline": 0.5})
    assert verdict.paper_effect == pytest.approx(0.1)
    assert verdict.effect_ratio == pytest.approx(verdict.effect / 0.1)
    claims = load_claims(_claims_file(tmp_path, [_claim(configuration="--configfile x.yaml")]))
    missing = judge(claims, {}, {})[0]
    assert missing.verdict == NOT_HERE and "--configfile x.yaml" in missing.reason


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"direction": "better"}, "direction: 'better' is not one of ['greater', 'less']"),
        ({"alpha": 0}, "alpha: 0 is less than or equal to the minimum of 0"),
        ({"alpha": 1.5}, "alpha: 1.5 is greater than or equal to the maximum of 1"),
        ({"test": "wilcoxon"}, "test: 'wilcoxon' is not one of"),
        ({"colour": "red"}, "('colour' was unexpected)"),
        ({"system": ""}, "system: '' should be non-empty"),
        ({"published": {"system": "high"}}, "published.system: 'high' is not of type 'number'"),
        ({"kind": "better"}, "kind: 'better' is not one of ['superiority', 'non-inferiority'"),
        ({"kind": "non-inferiority"}, "'margin' is a required property"),
        ({"kind": "equivalence", "margin": -0.01}, "margin: -0.01 is less than or equal to"),
        ({"kind": "non-superiority", "margin": float("nan")}, "margin: must be a finite number"),
        ({"kind": "non-inferiority", "margin": float("inf")}, "margin: must be a finite number"),
        ({"margin": 0.01}, "margin: a superiority claim has no margin"),
        (
            {"kind": "equivalence", "margin": 0.01, "direction": "less"},
            "direction: an equivalence claim has no direction",
        ),
        (
            {"kind": "non-inferiority", "margin": 0.01, "test": "randomization"},
            "test: the margin kinds are tested with one-sided t-tests",
        ),
        ({"paper_test": 3}, "paper_test: 3 is not of type 'string', 'null'"),
        ({"table": "elsewhere"}, "table: 'elsewhere' has no entry in 'setups'"),
        ({"comparability": "close enough"}, "comparability: 'close enough' is not one of"),
    ],
)
def test_a_malformed_claim_is_one_line_naming_file_and_claim(tmp_path, change, message):
    path = _claims_file(tmp_path, [_claim(**change)])
    with pytest.raises(ConfigError) as error:
        load_claims(path)
    assert str(error.value).startswith(f"{path}: claim a-beats-b: ") and message in str(error.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"table": "nowhere"}, "table 'nowhere' is not built by this configuration"),
        ({"system": "Z"}, "system 'Z' is not a row of table t"),
        ({"baseline": "paper B"}, "baseline 'paper B' is a published-only row of table t"),
        ({"column": "P@5"}, "column 'P@5' is not a column of table t"),
        ({"paper_rows": {"system": "paper Z"}}, "paper_rows.system 'paper Z' is not a row"),
    ],
)
def test_a_claim_naming_what_the_configuration_lacks_is_refused(tmp_path, change, message):
    path = _claims_file(tmp_path, [_claim(**change)])
    with pytest.raises(ConfigError) as error:
        check_claims(load_claims(path), {"tables": {"t": TABLE}})
    assert str(error.value).startswith(f"{path}: claim a-beats-b: ") and message in str(error.value)


def test_a_repeated_claim_id_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="claim id 'a-beats-b' appears twice"):
        load_claims(_claims_file(tmp_path, [_claim(), _claim()]))


def test_the_configured_claims_name_rows_and_columns_the_default_tables_have():
    from hybrid_ir.config.layers import config_layers, merged_config
    from hybrid_ir.config.validation import validate_config

    config = merged_config(config_layers([REPO / "config.yaml"], {}))
    validate_config(
        config, REPO / "workflow" / "schemas" / "config.schema.yaml", require_pins=False
    )
    papers = claims_by_paper(config["claims"], config)
    assert sorted(papers) == ["000", "001", "002", "003", "004"]
    assert all(claim.table in config["tables"] or claim.configuration
               for paper in papers.values() for claim in paper.claims)  # fmt: skip


STAND_IN = {
    "label": "a scaled-down stand-in", "why": "searches a sample of c", "collection": "c",
    "topics": "q", "qrels": "q", "system": "A on a small model", "baseline": "B as is",
    "paper": "the paper's collection c", "differences": {"sample": "searches a sample of c"},
    "searches_corpus": True,
    "share": {"documents": 40, "relevant": 30, "held": 6, "level": 1},
}  # fmt: skip


def test_files_are_written_whole_and_every_view_labels_a_stand_in(tmp_path, capsys):
    system, baseline = _scores(9, 20, 0.1)
    path = _claims_file(tmp_path, [_claim()], title="A paper")
    table = tmp_path / "t.per_query.tsv"
    table.write_text(
        "run\tcolumn\ttopic\tvalue\n"
        + "".join(f"{row}\tnDCG@10\t{t}\t{float(s[t])!r}\n"
                  for row, s in (("A", system), ("B", baseline)) for t in s),
        encoding="utf-8",
    )  # fmt: skip
    csv = tmp_path / "t.csv"
    csv.write_text(
        "block,run,column,value,marker,p_value,published,difference,reference\n"
        ",A,nDCG@10,0.5,,,0.6,,false\n,B,nDCG@10,0.4,,,0.4,,true\n",
        encoding="utf-8",
    )
    verdicts, reproductions = claims_module.judge_files(
        path, {"t": (table, csv)}, setups={"a-beats-b": STAND_IN}
    )
    assert reproductions == []
    assert verdicts[0].paper_effect == pytest.approx(0.2)
    assert verdicts[0].finding == "supported on this stand-in"
    results = tmp_path / "results"
    write_verdicts(path, verdicts, results / "claims/paper009.json", results / "claims/paper009.md")
    document = json.loads((results / "claims/paper009.json").read_text())
    saved = document["verdicts"][0]
    assert (saved["verdict"], saved["kind"], saved["comparability"]) == (
        SUPPORTED,
        "superiority",
        "a scaled-down stand-in",
    )
    assert saved["setup"]["system"] == "A on a small model" and saved["margin"] is None
    page = (results / "claims/paper009.md").read_text()
    assert page.startswith("# Paper 009: claims (A paper)\n\n## Summary\n")
    assert "| a scaled-down stand-in | 1 | 0 | 0 | 0 | 0 |" in page
    assert "| a-beats-b | superiority | supported on this stand-in | stand-in |" in page
    assert (
        "holding 6 of the 30 documents judged relevant (grade ≥ 1) for these topics (20.0%)" in page
    )
    assert "  - system here: A on a small model" in page
    assert main(["claims", "--results", str(results)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Paper 009: A paper") and "a scaled-down stand-in: 1 supported" in text
    row = next(line for line in text.splitlines() if line.lstrip().startswith("a-beats-b"))
    assert "supported on this stand-in" in row and "stand-in" in row.split("on this stand-in")[1]
    assert main(["claims", "--results", str(results), "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)[0]
    assert printed["paper"] == "009"
    assert printed["verdicts"][0]["comparability"] == "a scaled-down stand-in"
    assert printed["verdicts"][0]["setup"]["why"] == "searches a sample of c"
    assert main(["claims", "--results", str(tmp_path / "none")]) == 1
    assert "no judged claims" in capsys.readouterr().err
    assert not math.isnan(saved["effect"])


def test_a_verdict_without_a_setup_says_so_in_its_words(tmp_path):
    system, baseline = _scores(9, 20, 0.1)
    assert _judge(tmp_path, system, baseline).finding == "supported (setup not described)"
    other = {**STAND_IN, "label": "a different collection"}
    assert _judge(tmp_path, system, baseline, setup=other).finding == (
        "supported on a different collection"
    )
    paper = {**STAND_IN, "label": "the paper's setup"}
    assert _judge(tmp_path, system, baseline, setup=paper).finding == "supported"


def test_rmse_kendall_tau_and_rbo_follow_their_definitions():
    from hybrid_ir.evaluation.reproducibility import kendall_tau_union, rank_biased_overlap, rmse

    assert rmse({"a": 0.5, "b": 0.2, "c": 9}, {"a": 0.2, "b": 0.6}) == pytest.approx(
        math.sqrt((0.3**2 + 0.4**2) / 2)
    )
    assert rmse({"a": 1.0}, {"b": 1.0}) is None
    assert kendall_tau_union(list("abcd"), list("abcd")) == pytest.approx(1.0)
    assert kendall_tau_union(list("abcd"), list("dcba")) == pytest.approx(-1.0)
    # Over the union {a, b, c, x}: x is last (tied with nothing) in the first ranking and b,
    # missing from the second, is last there; tau-b of (0, 1, 2, 3) and (0, 3, 1, 2).
    from scipy.stats import kendalltau

    expected = kendalltau([0, 1, 2, 3], [0, 3, 1, 2]).statistic
    assert kendall_tau_union(list("abc"), list("acx")) == pytest.approx(expected)
    assert kendall_tau_union(["a"], ["a"]) is None
    p = 0.9
    assert rank_biased_overlap(list("abcdefghij"), list("abcdefghij"), p) == pytest.approx(1.0)
    assert rank_biased_overlap(list("abc"), list("xyz"), p) == 0.0
    # Eq. 32 by hand for S = (a, b, c), L = (b, a, d): X_1 = 0, X_2 = 2, X_3 = 2.
    by_hand = 2 / 3 * p**3 + (1 - p) / p * (0 / 1 * p + 2 / 2 * p**2 + 2 / 3 * p**3)
    assert rank_biased_overlap(list("abc"), list("bad"), p) == pytest.approx(by_hand)


def test_a_reproduction_compares_two_run_files_and_is_refused_without_them(tmp_path):
    from hybrid_ir.reports.claims.file import reproduction_runs
    from hybrid_ir.reports.claims.verdicts import compare_reproduction

    reproduction = {"id": "r", "what": "A again.", "where": "Table 9", "table": "t",
                    "column": "nDCG@10", "original": "A", "reproduced": "B",
                    "depth": 3}  # fmt: skip
    path = tmp_path / "paper009.yaml"
    path.write_text(yaml.safe_dump({"paper": "009", "claims": [], "reproductions": [reproduction]}))
    table = {**TABLE, "collection": "c", "topics": "q"}
    loaded = load_claims(path).reproductions[0]
    assert reproduction_runs(loaded, {"t": table}) == {
        "original": ("c", "q", "a"), "reproduced": ("c", "q", "b")
    }  # fmt: skip
    runs = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}, {"q1": {"d1": 3.0, "d3": 2.0, "d2": 1.0}}
    scores = {("A", "nDCG@10"): {"q1": 0.5}, ("B", "nDCG@10"): {"q1": 0.4}}
    result = compare_reproduction(loaded, scores, *runs)
    assert result["rmse"] == pytest.approx(0.1) and result["topics"] == 1
    assert result["kendall_tau"] == pytest.approx(1 / 3)
    crossval = {**table, "blocks": [{"rows": [{"label": "A", "crossval": "x"},
                                              {"label": "B", "run": "b"}]}]}  # fmt: skip
    with pytest.raises(ConfigError, match="reproduction r: original 'A' has no run file"):
        reproduction_runs(loaded, {"t": crossval}, str(path))
    refused = [
        ({"depth": 0}, "reproduction r: depth: 0 is less than the minimum of 1"),
        ({"persistence": 1}, "persistence: 1 is greater than or equal to the maximum of 1"),
        ({"original": ""}, "original: '' should be non-empty"),
    ]
    for change, message in refused:
        entries = [{**reproduction, **change}]
        path.write_text(yaml.safe_dump({"paper": "009", "claims": [], "reproductions": entries}))
        with pytest.raises(ConfigError, match=message):
            load_claims(path)


def test_rmse_does_not_depend_on_the_process_string_hashing():
    import os
    import subprocess
    import sys

    program = (
        "import random; from hybrid_ir.evaluation.reproducibility import rmse; "
        "r = random.Random(3); "
        "a = {f't{i}': r.random() for i in range(500)}; b = {t: r.random() for t in a}; "
        "print(repr(rmse(a, b)))"
    )
    printed = {
        subprocess.run(
            [sys.executable, "-c", program],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3", "4")
    }
    assert len(printed) == 1
