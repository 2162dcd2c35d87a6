"""Targets one can name (hybrid_ir.planning.targets): a rule per paper and per table, figure and
claims page, ``hybrid-ir targets`` listing them, and a misspelled result file or target rule refused
before any job runs with the nearest real ones."""

from __future__ import annotations

import copy
import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from toy_workflow import SNAKEMAKE, make_toy, snakemake

from hybrid_ir.cli.main import main
from hybrid_ir.config.claim_setups import claims_by_paper
from hybrid_ir.config.published import fill_published
from hybrid_ir.config.validation import validate_config
from hybrid_ir.errors import ConfigError
from hybrid_ir.evaluation.checks import load_expected
from hybrid_ir.planning.output_kinds import OUTPUT_KINDS
from hybrid_ir.planning.plan import Plan
from hybrid_ir.planning.targets import (
    DeferredTable,
    NamedOutput,
    nearest,
    unknown_result_constraint,
    unknown_target_message,
)

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
PAPERS = ["000", "001", "002", "003", "004"]
RESULT_FOLDERS = ("results/tables/", "results/figures/", "results/claims/")


def _plan(config: dict) -> Plan:
    validate_config(config, SCHEMA)
    expected = load_expected([REPO / path for path in config["expected"]])
    fill_published(config, expected)
    claims = claims_by_paper([REPO / path for path in config["claims"]], config)
    return Plan(config, {}, expected, claims, None)


@pytest.fixture(scope="module")
def default() -> dict:
    return yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def plan(default) -> Plan:
    return _plan(copy.deepcopy(default))


# --- the rules, from the registry -------------------------------------------------------------


def test_one_target_rule_per_paper_asks_for_each_of_its_tables_figures_and_claims(plan):
    rules = plan.target_rules()
    assert [rule for rule in rules if re.fullmatch(r"paper\d{3}", rule)] == [
        f"paper{paper}" for paper in PAPERS
    ]
    paper001 = set(rules["paper001"])
    for name in ("paper001-table1", "paper001-first-stage-arqmath1"):
        assert set(plan.table_outputs(name).values()) <= paper001
    assert {"results/figures/paper001-fig2.png", "results/claims/paper001.md"} <= paper001
    assert all("paper001" in file for file in paper001)
    # Every file of a paper's outputs is in its rule, and in no other paper's.
    for paper in PAPERS:
        named = {f for o in plan.named_outputs() if o.paper == paper for f in o.files}
        assert set(rules[f"paper{paper}"]) == named
    # Paper 000's further-pretrained backbone's loss figure is paper 000's, as in the report.
    assert "results/figures/pretraining-minilm-math.svg" in rules["paper000"]


def test_one_target_rule_per_table_figure_and_claims_page_named_after_it(plan, default):
    rules = plan.target_rules()
    assert rules["paper000_table3_arqmath1"] == list(
        plan.table_outputs("paper000-table3-arqmath1").values()
    )
    assert rules["paper003_fig4_pr"][:2] == [
        "results/figures/paper003-fig4-pr.png",
        "results/figures/paper003-fig4-pr.svg",
    ]
    assert rules["paper002_claims"] == [
        "results/claims/paper002.json",
        "results/claims/paper002.md",
        "results/claims/paper002.html",
    ]
    assert rules["bm25"][0] == "results/tables/bm25.md"
    for name in [*default["figures"], *plan.config["tables"]]:
        assert name.replace("-", "_") in rules


def test_the_named_outputs_are_rule_alls_tables_figures_and_claims(plan):
    """The same registry gives both: every file a named output has is one ``rule all`` asks
    for, and every file ``rule all`` asks for under results/tables, figures and claims is a
    named output's."""
    named = [file for output in plan.named_outputs() for file in output.files]
    assert len(named) == len(set(named))
    targets = plan.all_targets()
    assert set(named) <= set(targets)
    assert {t for t in targets if t.startswith(RESULT_FOLDERS)} == set(named)
    kinds = {kind.named for kind in OUTPUT_KINDS.values() if kind.named}
    assert kinds == {
        "named_tables", "named_parameter_tables", "named_claims", "named_figures",
        "named_math_figures", "named_bm25_table", "named_explorers",
    }  # fmt: skip


def test_a_name_whose_rule_another_takes_is_a_configuration_error(default):
    config = copy.deepcopy(default)
    config["figures"]["paper003.cf-pr-curves"] = config["figures"]["paper003-cf-pr-curves"]
    with pytest.raises(
        ConfigError,
        match=r"^config: figures\.paper003\.cf-pr-curves: its target "
        r"rule paper003_cf_pr_curves is already figures\.paper003-cf-pr-curves",
    ):
        _plan(config).target_rules()
    with pytest.raises(
        ConfigError,
        match=r"config: tables\.paper004-scifact: its target rule "
        r"paper004_scifact is already the workflow's rule paper004_scifact",
    ):
        _plan(copy.deepcopy(default)).target_rules(taken=["paper004_scifact"])


def test_number_title_and_overlay_where_the_configuration_says_them():
    table = NamedOutput(
        "table", "paper000-table3-x", ("a.md",), "tables.x", "Paper 000, Table 3: t"
    )
    assert table.number == "Table 3" and table.target == "paper000_table3_x"
    assert NamedOutput("figure", "paper003-fig4-pr", (), "figures.x").number == "Fig. 4"
    assert NamedOutput("figure", "paper003-cf-pr-curves", (), "figures.x").number is None
    deferred = DeferredTable("paper000-table2", "NTCIR-12; run with --configfile configs/n.yaml")
    assert deferred.overlay == "configs/n.yaml" and deferred.paper == "000"
    assert DeferredTable("x", "data we lack").overlay is None


# --- misspelled targets -----------------------------------------------------------------------


def test_a_misspelled_result_file_names_the_nearest_targets(plan):
    constraint = re.compile(unknown_result_constraint(plan.result_files()))
    assert constraint.fullmatch("tables/paper000-table9.md")
    assert constraint.fullmatch("figures/paper000-fig9.png")
    for known in plan.result_files():  # a file another rule makes is left to it
        assert not constraint.fullmatch(known.removeprefix("results/")), known
    assert not constraint.fullmatch("runs/cf/all/vsr.trec")

    def refusal(path: str) -> str:
        with pytest.raises(ConfigError) as raised:
            plan.unknown_result(type("W", (), {"unknown_result": path.removeprefix("results/")}))
        return str(raised.value)

    assert refusal("results/tables/paper000-table9.md") == (
        "results/tables/paper000-table9.md: this configuration builds no such file; the nearest "
        "targets: results/tables/paper000-table4.md, results/tables/paper000-table1.md, "
        "results/tables/paper001-table1.md (hybrid-ir targets lists them all)"
    )
    # A name that starts real ones: each topic set's table.
    assert "the nearest targets: results/tables/paper000-table3-arqmath1.tex, " in refusal(
        "results/tables/paper000-table3.tex"
    )
    assert refusal("results/tables/paper000-table2.md").startswith(
        "results/tables/paper000-table2.md: tables.paper000-table2 is not built here: it needs "
        "the NTCIR-12 Wiki-Formula collection"
    )
    assert "no target is close to it" in refusal("results/figures/zzz.png")


def test_a_misspelled_target_rule_names_the_nearest_rules(plan):
    rules = list(plan.target_rules())
    constraint = re.compile(plan.unknown_targets())
    assert constraint.fullmatch("paper000_table3") and constraint.fullmatch("paper01")
    assert not any(constraint.fullmatch(rule) for rule in rules)
    assert not constraint.fullmatch("config.yaml") and not constraint.fullmatch("results/x")
    assert unknown_target_message("paper000_table3", rules) == (
        "paper000_table3: no target rule has this name; the nearest: paper000_table3_arqmath1, "
        "paper000_table3_arqmath2, paper000_table3_arqmath1_in_sample, "
        "paper000_table3_arqmath2_in_sample, paper000_table3_arqmath1_explorer, "
        "paper000_table3_arqmath2_explorer and 2 more (hybrid-ir targets lists them)"
    )
    assert unknown_target_message("paper01", rules).startswith(
        "paper01: no target rule has this name; the nearest: paper001, "
    )
    assert nearest("results/tables/paper003-fc.md", ["results/tables/paper003-cf.md"]) == [
        "results/tables/paper003-cf.md"
    ]


# --- hybrid-ir targets ------------------------------------------------------------------------


def test_hybrid_ir_targets_lists_every_output_by_paper(capsys, monkeypatch, plan):
    monkeypatch.chdir(REPO)
    assert main(["targets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "Paper 000: Zhong et al. 2022, math dense retrieval and Approach0 (snakemake paper000)"
    )
    assert lines[1:4] == [
        "  table paper000-table1 (Table 1): snakemake paper000_table1",
        "    Paper 000, Table 1: bi-encoder Transformers, the paper's 12 rows beside DPR and "
        "ColBERT from MiniLM here (NTCIR-12 and ARQMath-2 as published; ours over the "
        "3,395-answer ARQMath thread sample)",
        "    results/tables/paper000-table1.{md,tex,csv,per_query.tsv,html,notes.html}",
    ]
    at = lines.index("  table paper000-table2: not built here")
    assert lines[at + 1].startswith("    it needs the NTCIR-12 Wiki-Formula collection")
    assert lines[at + 2] == (
        "    snakemake --cores all paper000_table2 --configfile configs/ntcir12.yaml"
    )
    assert "Paper 001: Rohatgi et al. 2020, PSU at ARQMath (snakemake paper001)" in lines
    assert "  figure paper001-fig2 (Fig. 2): snakemake paper001_fig2" in lines
    assert "    results/claims/paper001.{json,md,html}" in lines
    assert lines[-4:] == [
        "Beyond the papers",
        "  table bm25: snakemake bm25",
        "    BM25 baselines",
        "    results/tables/bm25.{md,csv,html,notes.html}",
    ]
    listed = [line.split(": snakemake ")[1] for line in lines if ": snakemake " in line]
    assert set(listed) == {output.target for output in plan.named_outputs()}


def test_hybrid_ir_targets_json_and_an_overlay(capsys, monkeypatch, plan):
    monkeypatch.chdir(REPO)
    assert main(["targets", "--format", "json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [paper["target"] for paper in listing["papers"]] == [f"paper{p}" for p in PAPERS]
    assert len(listing["outputs"]) == len(plan.named_outputs())
    table1 = next(o for o in listing["outputs"] if o["name"] == "paper001-table1")
    assert table1 == {
        "kind": "table", "name": "paper001-table1", "paper": "001", "number": "Table 1",
        "title": plan.config["tables"]["paper001-table1"]["title"],
        "files": list(plan.table_outputs("paper001-table1").values()),
        "target": "paper001_table1",
    }  # fmt: skip
    (deferred,) = listing["not_built"]
    assert deferred["name"] == "paper000-table2" and deferred["overlay"] == "configs/ntcir12.yaml"
    # The overlay builds it: then it is listed with its rule, and nothing is deferred.
    assert main(["targets", "--format", "json", "--configfile", "configs/ntcir12.yaml"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["not_built"] == []
    assert any(o["target"] == "paper000_table2" for o in listing["outputs"])


def test_hybrid_ir_targets_names_the_overlay_of_a_bad_key(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("run_depth: 0\n", encoding="utf-8")
    assert main(["targets", "--configfile", str(overlay)]) == 1
    error = capsys.readouterr().err
    assert error == f"hybrid-ir error: {overlay}: run_depth: 0 is less than the minimum of 1\n"


# --- Snakemake: the toy workflow, and a dry run of the default configuration ------------------


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Path:
    """The toy workflow with its table and figure named as paper 003's, and a deferred table."""
    root = make_toy(tmp_path_factory.mktemp("targets"))
    config = yaml.safe_load((root / "config.yaml").read_text())
    config["tables"] = {"paper003-toy": config["tables"].pop("toy-table")}
    config["figures"] = {"paper003-toy-pr": config["figures"].pop("toy-pr")}
    config["deferred_tables"] = {
        "paper003-big": "the big collection; run with --configfile big.yaml"
    }
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    return root


def _jobs(result: subprocess.CompletedProcess) -> set[str]:
    return set(re.findall(r"^(?:local)?rule (\w+):", result.stdout, re.MULTILINE))


def test_a_papers_target_plans_only_its_outputs(toy):
    result = snakemake(toy, "-n", "paper003")
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = _jobs(result)
    assert {"paper003", "paper_table", "figure_pr_curves"} <= jobs
    assert not jobs & {"bm25_table", "check_scores", "assert_scores", "all"}
    listed = snakemake(toy, "--list-target-rules")
    assert {"paper003", "paper003_toy", "paper003_toy_pr", "bm25"} <= set(listed.stdout.split())
    assert not (toy / "results").exists()


@pytest.mark.parametrize(
    ("target", "line"),
    [
        (
            "results/tables/paper003-tyo.md",
            "results/tables/paper003-tyo.md: this configuration builds no such file; the nearest "
            "targets: results/tables/paper003-toy.md",
        ),
        (
            "results/figures/paper003-toy-rp.png",
            "results/figures/paper003-toy-rp.png: this configuration builds no such file; the "
            "nearest targets: results/figures/paper003-toy-pr.png",
        ),
        (
            "results/tables/paper003-big.csv",
            "results/tables/paper003-big.csv: tables.paper003-big is not built here: it needs the "
            "big collection; run with --configfile big.yaml",
        ),
        (
            "paper003_tyo",
            "paper003_tyo: no target rule has this name; the nearest: paper003_toy",
        ),
    ],
)
def test_a_misspelled_target_fails_before_any_job_naming_the_nearest(toy, target, line):
    result = snakemake(toy, "-n", target)
    assert result.returncode != 0
    output = result.stdout + result.stderr
    said = [text for text in output.splitlines() if f"hybrid-ir: {target}" in text]
    assert len(said) == 1, output[-3000:]
    assert said[0].strip().startswith(f"hybrid-ir: {line}")
    assert not (toy / "results").exists()


@pytest.mark.lucene
def test_a_right_path_builds_and_the_rerun_stays_a_no_op(toy, tmp_path):
    table = toy / "results/tables/paper003-toy.md"
    built = snakemake(toy, "results/tables/paper003-toy.md")
    assert built.returncode == 0, built.stderr[-3000:]
    assert table.is_file() and not (toy / "results/figures/paper003-toy-pr.png").exists()
    assert snakemake(toy, "paper003_toy_pr").returncode == 0
    assert (toy / "results/figures/paper003-toy-pr.png").is_file()
    assert snakemake(toy).returncode == 0
    again = snakemake(toy, "-n")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    again = snakemake(toy, "-n", "paper003")
    assert "Nothing to be done" in again.stdout + again.stderr, again.stdout[-2000:]


def test_the_default_dag_is_rule_alls_and_a_paper_target_is_a_part_of_it(plan):
    """The new rules add no job to ``snakemake`` (rule all), and paper001's jobs are among
    them, with no other paper's table, figure or claims page."""

    def outputs(*targets: str) -> tuple[set[str], set[str]]:
        command = [str(SNAKEMAKE), "--dry-run", "--forceall", "--nolock", "--cores", "1",
                   *targets]  # fmt: skip
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
        files = set()
        for line in done.stdout.splitlines():
            if line.strip().startswith("output:"):
                files |= {path.strip() for path in line.split(":", 1)[1].split(",")}
        return files, _jobs(done)

    every, jobs = outputs()
    assert not {rule for rule in jobs if rule.startswith(("paper0", "unknown_"))}
    assert {f for output in plan.named_outputs() for f in output.files} <= every
    paper001, jobs = outputs("paper001")
    assert paper001 <= every and "paper001" in jobs
    results = {file for file in paper001 if file.startswith(RESULT_FOLDERS)}
    assert set(plan.target_rules()["paper001"]) <= results
    # Besides its own, only the loss figure the pretraining job that tf.BERT needs draws.
    assert results - set(plan.target_rules()["paper001"]) == set(
        plan.target_rules()["pretraining_minilm_math"]
    )
