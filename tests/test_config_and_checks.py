"""Configuration validation errors and the expected-score checks."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from hybrid_ir.config.validation import validate_config
from hybrid_ir.errors import CheckFailed, ConfigError
from hybrid_ir.evaluation.checks import (
    CheckResult,
    assert_all_passed,
    run_checks,
    run_summary,
    write_summary,
)

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


@pytest.fixture()
def config() -> dict:
    with open(REPO / "config.yaml", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_default_config_is_valid(config):
    validate_config(config, SCHEMA, "config.yaml")


def test_paper_config_is_valid_over_the_default(config, tmp_path):
    from conftest import paper_pins
    from snakemake.utils import update_config

    from hybrid_ir.config.layers import config_layers, merged_config

    paper = [REPO / "config.yaml", REPO / "configs" / "paper.yaml", paper_pins(tmp_path)]
    layers = config_layers(paper, {})
    merged = merged_config(layers)
    validate_config(merged, SCHEMA, "configs/paper.yaml")
    assert merged["math_models"]["pretraining"]["epochs"] == 7
    assert "steps" not in merged["math_models"]["pretraining"]
    assert merged["math_models"]["backbones"]["bert-math-3ep"]["pretraining"] == {"epochs": 3}
    # Merged key by key alone, the default's steps would stay beside the paper's epochs: that
    # is refused, never trained silently for the default's 150 steps.
    with open(REPO / "configs" / "paper.yaml", encoding="utf-8") as handle:
        update_config(config, yaml.safe_load(handle))
    update_config(config, yaml.safe_load(paper_pins(tmp_path).read_text()))
    with pytest.raises(ConfigError, match="math_models.pretraining: sets both steps and epochs"):
        validate_config(config, SCHEMA, "configs/paper.yaml")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda c: c["bm25"].update(k1="high"),
         "config.yaml: bm25.k1: 'high' is not of type 'number'"),
        (lambda c: c["bm25"]["experiments"]["scifact"].update(layouts=["sparse"]),
         "config.yaml: bm25.experiments.scifact.layouts.0: 'sparse' is not one of"),
        (lambda c: c.update(colections={}), "config.yaml: (top level): Additional properties"),
        (lambda c: c["collections"]["cf"].pop("reader"),
         "config.yaml: collections.cf: 'reader' is a required property"),
        (lambda c: c["bm25"]["experiments"]["scifact"].update(topics="dev"),
         "config.yaml: bm25.experiments.scifact.topics: 'dev' is not one of"),
        (lambda c: c["bm25"]["experiments"].update(nfcorpus=c["bm25"]["experiments"]["cf"]),
         "config.yaml: bm25.experiments.nfcorpus: no collection named 'nfcorpus'"),
        (lambda c: c["math_models"]["pretraining"].update(mask_rule="90/10"),
         "config.yaml: math_models.pretraining.mask_rule: '90/10' is not one of"),
        (lambda c: c["math_models"]["rerankers"]["tfidf-qa-mlm"].update(backbone="bert"),
         "config.yaml: math_models.rerankers.tfidf-qa-mlm.backbone: no backbone 'bert'"),
        (lambda c: c["math_models"]["rerankers"]["tfidf-qa-mlm"].update(base="nope"),
         "config: math_models.rerankers.tfidf-qa-mlm.base: no run 'nope'"),
        (lambda c: c["math_models"]["pretokenize"].pop("stackmathqa"),
         "config.yaml: math_models: collection 'stackmathqa' is not pre-tokenized"),
        (lambda c: c["math_models"].update(topics=["arqmath3"]),
         "config.yaml: math_models.topics: no topic set 'arqmath3'"),
        # Paper scale: what would otherwise fail inside a job after its time in the queue.
        (lambda c: c["math_models"]["pretraining"].update(micro_batch_size=3),
         "config.yaml: math_models.pretraining.micro_batch_size: 3 does not divide the 16 "
         "examples each of 1 training process(es) takes of the global batch of 16; use one of "
         "[1, 2, 4, 8, 16]"),
        (lambda c: c["math_models"].update(cpu_processes=2)
         or c["math_models"]["dpr"].update(batch_size=8, micro_batch_size=8),
         "config.yaml: math_models.dpr.micro_batch_size: 8 does not divide the 4 examples each "
         "of 2"),
        (lambda c: c["math_models"].update(cpu_processes=3),
         "config.yaml: math_models.pretraining.batch_size: the global batch of 16 does not split "
         "evenly over 3 training processes"),
        (lambda c: c["math_models"]["colbert"].update(micro_batch_size=5),
         "config.yaml: math_models.colbert.micro_batch_size: 5 does not divide the 8"),
        (lambda c: c["math_models"]["colbert"].update(ncells=0),
         "config.yaml: math_models.colbert.ncells: 0 is less than the minimum of 1"),
        (lambda c: c["math_models"]["colbert"].update(ndocs=0),
         "config.yaml: math_models.colbert.ndocs: 0 is less than the minimum of 1"),
        (lambda c: c["structure"]["arqmath"]["approach0-pya0"].update(shards=0),
         "config.yaml: structure.arqmath.approach0-pya0.shards: 0 is less than the minimum of 1"),
        # NaN passed every minimum (comparisons with it are false) and failed inside the job.
        (lambda c: c["bm25"].update(k1=float("nan")), "config.yaml: bm25.k1: nan is not a finite"),
        (lambda c: c["math_models"]["pretraining"].update(lr=float("inf")),
         "config.yaml: math_models.pretraining.lr: inf is not a finite number"),
        # numpy's generators take seeds from 0 to 2^32 - 1 only (a traceback in the job before).
        (lambda c: c.update(seed=-1), "config.yaml: seed: -1 is less than the minimum of 0"),
        (lambda c: c["math_models"]["pretraining"].update(seed=2**32),
         "config.yaml: math_models.pretraining.seed: 4294967296 is greater than the maximum of"),
    ],
)  # fmt: skip
def test_schema_violations_give_one_line_naming_the_key(config, edit, message):
    broken = copy.deepcopy(config)
    edit(broken)
    with pytest.raises(ConfigError) as error:
        validate_config(broken, SCHEMA, "config.yaml")
    assert str(error.value).startswith(message)
    assert "\n" not in str(error.value)


def _expected(value: float, tolerance: float) -> dict:
    return {
        "collection": "toy",
        "topics": "test",
        "runs": {"bm25-flat": {"test": {"nDCG@10": {"value": value, "tolerance": tolerance}}}},
        "indexes": {"bm25-flat": {"documents": {"value": 3, "tolerance": 0}}},
    }


def _artifacts(root: Path, ndcg: float, documents: int) -> None:
    evaluation = root / "results/eval/toy/test/bm25-flat.test.json"
    evaluation.parent.mkdir(parents=True)
    evaluation.write_text(json.dumps({"aggregate": {"nDCG@10": ndcg}, "per_query": {}}))
    stats = root / "results/indexes/toy/bm25-flat.stats.json"
    stats.parent.mkdir(parents=True)
    stats.write_text(json.dumps({"documents": documents}))


def test_checks_pass_inside_the_band_and_fail_outside(tmp_path):
    _artifacts(tmp_path, ndcg=0.67894, documents=3)
    results = run_checks([_expected(0.6789, 0.00005)], tmp_path)
    assert [(r.run, r.metric, r.status) for r in results] == [
        ("bm25-flat (test qrels)", "nDCG@10", "PASS"),
        ("bm25-flat (index)", "documents", "PASS"),
    ]
    failing = run_checks([_expected(0.6795, 0.00005)], tmp_path)
    assert failing[0].status == "FAIL"
    summary = tmp_path / "summary.tsv"
    write_summary(failing, summary)
    header = summary.read_text().splitlines()[0].split("\t")
    assert header == ["collection", "run", "metric", "expected", "actual", "tolerance", "status"]
    with pytest.raises(
        CheckFailed, match=r"^1 of 2 checks failed: .*summary.tsv:2: toy bm25-flat \(test qrels\) "
        r"nDCG@10: expected 0.6795 \+- 5e-05, got 0.678940$"
    ):  # fmt: skip
        assert_all_passed(summary)
    write_summary(results, summary)
    assert assert_all_passed(summary) == 2


def test_defaults_live_in_the_schema_not_in_rules_or_scripts():
    """A ``.get(...)`` in a rule or script would be a second, drifting default: validation
    fills every default, so rules and scripts index ``config[...]`` and their inputs."""
    files = [
        REPO / "Snakefile",
        *(REPO / "workflow" / "rules").rglob("*.smk"),
        *(REPO / "workflow/scripts").glob("*.py"),
    ]
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if ".get(" in line
    ]
    assert found == []


def test_validation_fills_the_schema_defaults():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    del config["run_depth"]
    crossval = next(iter(config["crossval"].values()))
    assert "folds" not in crossval
    assert "remove_query" not in config["bm25"]["experiments"]["cf"]
    config["math_models"]["dpr"]["seed"] = 7
    validate_config(config, SCHEMA)
    assert config["run_depth"] == 1000 and config["max_relevance"] == 1000
    assert config["bm25"]["experiments"]["cf"]["remove_query"] is False
    assert config["math_models"]["dpr"]["query_max_length"] == 64
    # derived from other settings: the seed, the run depth, a retriever's topic sets
    assert config["math_models"]["dpr"]["seed"] == 7
    assert config["math_models"]["colbert"]["seed"] == config["seed"] == 1234
    assert crossval["seed"] == 1234 and crossval["qrels"] == crossval["topics"]
    assert config["retrievers"]["arqmath"]["tfidf-qa"]["depth"] == 1000
    assert config["retrievers"]["arqmath"]["tfidf-qa"]["topics"] == ["arqmath1", "arqmath2"]
    assert config["collections"]["scifact"]["tables"] == []
    assert crossval["folds"] == 5


def test_an_entry_for_several_topic_sets_expands_to_one_per_set():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    validate_config(config, SCHEMA)
    first, second = (config["tables"][f"paper001-first-stage-arqmath{n}"] for n in (1, 2))
    assert (first["topics"], first["qrels"]) == ("arqmath1", "arqmath1")
    assert (second["topics"], second["qrels"]) == ("arqmath2", "arqmath2")
    assert "ARQMath-2 topics" in second["title"] and "{topics" not in json.dumps(second)
    assert first["blocks"] == second["blocks"]
    assert not any("{topics}" in name for name in config["tables"])


def test_an_entry_for_several_topic_sets_needs_topics_in_its_name():
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    config["tables"]["one-name"] = config["tables"].pop("paper001-first-stage-{topics}")
    with pytest.raises(ConfigError, match=r"tables.one-name: an entry for several topic sets"):
        validate_config(config, SCHEMA)


def test_published_values_are_written_once_and_fill_table_and_checks():
    from hybrid_ir.config.published import fill_published
    from hybrid_ir.evaluation.checks import checks_from_expected, load_expected

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    validate_config(config, SCHEMA)
    expected = load_expected([REPO / path for path in config["expected"]])
    for document in expected:
        document["path"] = str(Path(document["path"]).relative_to(REPO))
    fill_published(config, expected)
    rows = {
        row["label"]: row
        for block in config["tables"]["paper001-table1"]["blocks"]
        for row in block["rows"]
    }
    assert rows["Approach-0"]["published"] == {
        "nDCG'": 0.25,
        "MAP'": 0.1,
        "P'@10": 0.062,
        "Rel_Ret": 441,
    }
    runs = next(d for d in expected if d["path"] == "expected/arqmath1-runs.yaml")
    checks = {(c.run, c.metric): c.expected for c in checks_from_expected(runs)}
    assert checks["approach0 (arqmath1 qrels)", "MAP'"] == 0.1
    del runs["published"]["approach0"]
    with pytest.raises(ConfigError, match=r"runs.approach0.arqmath1.nDCG': no value"):
        list(checks_from_expected(runs))
    config["tables"]["paper001-table1"]["published_from"] = "expected/elsewhere.yaml"
    with pytest.raises(ConfigError, match=r"tables.paper001-table1.published_from"):
        fill_published(config, expected)


def test_said_once_entries_expand_as_before(config, monkeypatch):
    """A fusion over a list of topic sets, a block per sample topic with its published values
    from an expected file, and a sweep figure's sets from its sweep."""
    from hybrid_ir.config.published import fill_published

    monkeypatch.chdir(REPO)
    validate_config(config, SCHEMA)
    fusions = config["fusions"]["arqmath"]
    arqmath2_only = {name for name in fusions["arqmath2"] if name.startswith("a0-colbert-")}
    assert set(fusions["arqmath1"]) == {"rrf-psu-bm25-tf", *fusions["arqmath2"]} - arqmath2_only
    assert fusions["arqmath2"]["rrf-bm25-tfidf-qa"] == {
        "method": "rrf",
        "runs": ["bm25-flat", "tfidf-qa"],
        "params": {"rrf_k": 60},
    }
    table = config["tables"]["paper003-fig3-queries"]
    fill_published(config, [])
    assert [block["topic"] for block in table["blocks"]] == ["39", "48", "73", "67"]
    q48 = table["blocks"][1]
    assert q48["name"].startswith("Q48: ")
    assert [row["label"] for row in q48["rows"]] == ["VSR (Q48)", "Dense (Q48)", "Hybrid 0.8 (Q48)"]
    assert q48["rows"][1]["published"] == {"P@1": 1.0, "P@3": 0.3333, "P@5": 0.4, "P@10": 0.5}
    figure = config["figures"]["paper003-cf-ndcg-vs-lambda"]
    assert (figure["collection"], figure["topics"], figure["qrels"]) == ("cf", "all", "graded")


def test_a_published_file_without_published_values_is_named(config, tmp_path, monkeypatch):
    from hybrid_ir.config.published import fill_published

    monkeypatch.chdir(REPO)
    validate_config(config, SCHEMA)
    empty = tmp_path / "empty.yaml"
    empty.write_text("collection: cf\n")
    config["tables"]["paper003-fig3-queries"]["published_from"] = str(empty)
    with pytest.raises(ConfigError, match=r"published_from: .*no 'published' or 'published_by"):
        fill_published(config, [])


def test_a_retriever_of_an_unknown_collection_is_named(config):
    """A retriever's topic sets default to its collection's, so an unknown collection must not
    pass as a retriever with no topics."""
    config["retrievers"]["cfx"] = {"vsr": {"model": "tfidf_cosine"}}
    with pytest.raises(ConfigError, match=r"retrievers.cfx: no collection 'cfx'"):
        validate_config(config, SCHEMA)


def test_expected_runs_without_a_topic_set_are_named(tmp_path):
    """Without ``topics`` the evaluation paths would have an empty topic-set folder."""
    from hybrid_ir.evaluation.checks import load_expected

    path = tmp_path / "pins.yaml"
    path.write_text(
        "collection: arqmath\nruns:\n  approach0-pya0:\n    arqmath1:\n"
        "      nDCG': {value: 0.1, tolerance: 0.005}\n"
    )
    with pytest.raises(ConfigError, match=r"pins.yaml: .* with 'runs' needs a 'topics' key"):
        load_expected([path])


def test_run_summary_counts_checks_tables_and_figures(tmp_path: Path):
    results = [
        CheckResult("scifact", "bm25-flat (test qrels)", "nDCG@10", 0.6789, 0.6789, 5e-05, "PASS"),
        CheckResult("cf", "bm25-flat (binary qrels)", "P@10", 0.459, 0.47, 5e-05, "FAIL"),
        CheckResult("cf", "bm25-flat (index)", "documents", 1239, 1239, 0, "PASS"),
    ]
    write_summary(results, tmp_path / "results/checks/summary.tsv")
    tables, figures = tmp_path / "results/tables", tmp_path / "results/figures"
    tables.mkdir(parents=True)
    figures.mkdir()
    # Two tables in three formats each, a per-topic TSV that is no table of its own.
    for name in ("bm25.md", "bm25.csv", "t1.md", "t1.tex", "t1.csv", "t1.per_query.tsv"):
        (tables / name).write_text("x")
    for name in ("fig2.png", "fig2.svg", "fig3.png"):
        (figures / name).write_text("x")
    lines = run_summary(tmp_path).splitlines()
    assert lines == [
        "hybrid-ir: the workflow finished.",
        "Checks: 2 passed, 1 failed (results/checks/summary.tsv).",
        "  FAILED cf bm25-flat (binary qrels) P@10: expected 0.459 +- 5e-05, got 0.470000",
        "Tables: 2 in results/tables/ (md, tex, csv).",
        "Figures: 2 in results/figures/ (png, svg).",
        "Report: `make report` writes results/report.html.",
        "What produced a result: hybrid-ir provenance FILE.",
    ]
    (tmp_path / "results/report.html").write_text("<html>")
    assert run_summary(tmp_path).splitlines()[-2] == "Report: results/report.html."


def test_run_summary_recomputes_each_status_from_the_band(tmp_path: Path):
    results = [CheckResult("cf", "bm25-flat (binary qrels)", "P@10", 0.5, 0.9, 0.01, "PASS")]
    write_summary(results, tmp_path / "results/checks/summary.tsv")
    assert run_summary(tmp_path).splitlines()[1:3] == [
        "Checks: 0 passed, 1 failed (results/checks/summary.tsv).",
        "  FAILED cf bm25-flat (binary qrels) P@10: expected 0.5 +- 0.01, got 0.900000, outside "
        "the band, but its status says 'PASS'",
    ]


def test_run_summary_after_an_error_without_results(tmp_path: Path):
    lines = run_summary(tmp_path, succeeded=False).splitlines()
    assert lines[0].startswith("hybrid-ir: the workflow stopped with an error")
    assert lines[1:] == [
        "Checks: not run (results/checks/summary.tsv does not exist).",
        "Tables: none in results/tables/.",
        "Figures: none in results/figures/.",
        "Report: `make report` writes results/report.html.",
        "What produced a result: hybrid-ir provenance FILE.",
    ]


def test_gpu_jobs_split_the_global_batch_over_their_gpus(config):
    from hybrid_ir.config.settings import training_processes

    config["math_models"].update(device="auto", cpu_processes=2)
    config["math_models"]["pretraining"].update(batch_size=240, micro_batch_size=10)
    seven = copy.deepcopy(config)
    seven["resources"] = {"pretrain": {"gpu": 7}}
    config["resources"] = {"pretrain": {"gpu": 8}}
    validate_config(config, SCHEMA, "config.yaml")
    # auto: the 8 GPUs where the job sees them, else 2 CPU processes; both split 240 evenly.
    assert training_processes(config, "pretraining") == {2, 8}
    assert training_processes(config, "colbert") == {1}
    with pytest.raises(ConfigError, match="global batch of 240 does not split evenly over 7"):
        validate_config(seven, SCHEMA, "config.yaml")


_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n"
    for previous, name in zip("abcdefg", "bcdefgh", strict=True)
)
HOSTILE_CONFIGS = {
    # (file contents, what both tools must say; None: Snakemake refuses it in its own words)
    "alias bomb": (_LAUGHS, "too many aliases: with its YAML aliases expanded it holds 54,481,"),
    "recursive alias": ("seed: &s [*s]\n", "too many aliases: with its YAML aliases expanded"),
    "NaN": ("bm25: {k1: .nan}\n", "bm25.k1: nan is not a finite number"),
    "top-level list": ("- seed\n- 7\n", None),
    "cut-off 0": (
        "crossval: {arqmath1-approach0-psu: {measures: [P@0]}}\n",
        "crossval.arqmath1-approach0-psu.measures: measure 'P@0': the cut-off 0 is not a positive",
    ),
    "fusion weight outside [0, 1]": (
        "fusions: {cf: {hybrid-0.8: {params: {lam: 7}}}}\n",
        "fusions.cf.hybrid-0.8: fusion parameter lam must lie in [0, 1], got 7",
    ),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_CONFIGS))
def test_hostile_configuration_files_are_one_line_in_both_tools(tmp_path, case):
    """`hybrid-ir config` and the workflow read the same layers: both refuse, before any job
    (the alias bomb ran `hybrid-ir config` out of memory and printed 34.7 MB from both)."""
    import subprocess
    import sys

    text, problem = HOSTILE_CONFIGS[case]
    path = tmp_path / "hostile.yaml"
    path.write_text(text, encoding="utf-8")
    bin_dir = Path(sys.executable).parent
    tool = subprocess.run(
        [str(bin_dir / "hybrid-ir"), "config", "--configfile", str(path)],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    workflow = subprocess.run(
        [str(bin_dir / "snakemake"), "-n", "--nolock", "--configfile", str(path)],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    said = workflow.stdout + workflow.stderr  # Snakemake prints its errors on stdout
    assert tool.returncode == 1 and tool.stdout == ""
    assert tool.stderr.startswith("hybrid-ir error: ") and tool.stderr.count("\n") == 1
    assert len(tool.stderr) < 400 and len(said) < 10_000
    assert workflow.returncode != 0
    if problem is None:
        assert "must be a mapping of keys at the top level" in tool.stderr
        assert "keys at top level" in said
    else:
        assert problem in tool.stderr and problem in said


@pytest.mark.parametrize(
    ("overlay", "problem"),
    [
        (
            "sweeps: {cf-hybrid-lambda: {measures: [nDCG@1O]}}",
            "sweeps.cf-hybrid-lambda.measures: unknown measure or measure set 'nDCG@1O'",
        ),
        (
            "sweeps: {cf-hybrid-lambda: {measures: [ERR@10]}}",
            "sweeps.cf-hybrid-lambda.measures: measure 'ERR@10' is not one trec_eval computes",
        ),
        (
            "tables: {paper003-cf: {measures: [cf, recall(0)]}}",
            "tables.paper003-cf.measures: recall(0): a cut-off is not a positive integer",
        ),
        (
            "fusions: {arqmath: {rrf-bm25-tfidf-qa: {params: {rrf_k: -60}}}}",
            "fusions.arqmath.rrf-bm25-tfidf-qa: fusion parameter rrf_k must be >= 0, got -60",
        ),
        (
            "fusions: {arqmath: {a0-colbert-borda: {params: {weights: [1]}}}}",
            "fusions.arqmath.a0-colbert-borda: fusion got 1 weight(s) for 2 run(s)",
        ),
        (
            "sweeps: {cf-hybrid-lambda: {values: [0.5, 1.5]}}",
            "sweeps.cf-hybrid-lambda: fusion parameter lam must lie in [0, 1], got 1.5",
        ),
        (
            "fusions: {cf: {hybrid-0.8: {params: {lam: 0.8, alpha: 0.5}}}}",
            "fusions.cf.hybrid-0.8: fusion method 'score_hybrid' has no parameter alpha",
        ),
    ],
)
def test_measures_and_fusion_parameters_are_checked_before_any_job(
    tmp_path, capsys, overlay, problem
):
    """Each failed only inside its job before (pytrec_eval aborting the process on some)."""
    from hybrid_ir.cli.main import main

    path = tmp_path / "overlay.yaml"
    path.write_text(overlay + "\n", encoding="utf-8")
    assert main(["config", "--configfile", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert problem in err
