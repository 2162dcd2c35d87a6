"""The rule-facing plan of a configuration, without Snakemake: inputs, outputs, targets and the
one-line errors a rule's input function raises."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from hybrid_ir.config.validation import validate_config
from hybrid_ir.errors import ConfigError
from hybrid_ir.planning.plan import alternatives

REPO = Path(__file__).resolve().parents[1]


def test_a_run_the_configuration_does_not_make_is_a_one_line_error(plan):
    assert plan.run_path("cf", "all", "vsr") == "results/runs/cf/all/vsr.trec"
    with pytest.raises(ConfigError, match=r"^no run 'bm25-nope' for cf/all$"):
        plan.run_path("cf", "all", "bm25-nope")


def test_a_raw_file_missing_from_the_manifest_says_how_to_add_it(plan):
    with pytest.raises(ConfigError, match=r"hybrid-ir manifest add /mirror/x/y\.tsv --mirror"):
        plan.raw_file("x/y.tsv", "collections.cf.sources.cf74")
    path = plan.config["collections"]["cf"]["sources"]["cf74"]
    assert plan.sources_of("cf")["cf74"] == f"results/raw/{path}"


def test_a_tuned_retriever_reads_its_development_split(plan):
    wildcards = SimpleNamespace(collection="scifact", topics="test", system="bm25-sparse-tuned")
    assert plan.retriever_inputs(wildcards) == {
        "corpus": "results/collections/scifact/corpus.jsonl",
        "topics": "results/collections/scifact/topics/test.jsonl",
        "tune_topics": "results/collections/scifact/topics/train.jsonl",
        "tune_qrels": "results/collections/scifact/qrels/train.qrels",
    }


def test_a_table_reads_each_rows_run_and_each_groups_qrels(plan):
    sources = plan.table_sources(SimpleNamespace(table="paper002-scifact"))
    assert sources["sweep_scifact-ensemble-eta"].endswith("scifact-ensemble-eta.json")
    assert "results/runs/scifact/test/bm25-flat.trec" in sources.values()
    assert "results/collections/scifact/qrels/test.qrels" in sources.values()


def test_every_configured_output_is_a_target(plan):
    targets = plan.all_targets()
    assert len(targets) == len(set(targets))
    config = plan.config
    for name in config["tables"]:
        assert f"results/tables/{name}.md" in targets
    for name in config["figures"]:
        assert f"results/figures/{name}.png" in targets
    assert "results/figures/paper004-fig3.md" in targets  # collection_stats writes a table too
    assert "results/pretok/ntcir12/topics/all.jsonl" in targets  # a formula collection's copies
    assert "results/checks/passed" in targets


def test_figures_by_kind_and_wildcard_constraints(plan):
    assert plan.figures_of_kind("rank_scatter") == ["paper000-fig3"]
    assert alternatives(["a", "ab"]) == "ab|a" and alternatives([]) == "(?!)"


@pytest.mark.parametrize(
    ("placeholder", "message"),
    [
        ("{row:No such row/nDCG'}", "no row labelled 'No such row'"),
        ("{paper:Linked MSE Posts/nDCG@99}", "no column 'nDCG@99'"),
    ],
)
def test_a_note_placeholder_is_checked_when_the_dag_is_built(placeholder, message):
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    config["tables"]["paper001-table1"]["notes"].append(f"quoting {placeholder}")
    with pytest.raises(ConfigError, match=r"tables\.paper001-table1\.notes: .*" + message):
        validate_config(config, REPO / "workflow/schemas/config.schema.yaml")


def test_a_configuration_error_names_the_layer_that_sets_the_key(tmp_path):
    from hybrid_ir.config.layers import config_layers
    from hybrid_ir.config.sources import attributed, key_source

    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("fusions:\n  cf:\n    hybrid-0.8: {params: {lam: 7}}\n", encoding="utf-8")
    layers = config_layers([REPO / "config.yaml", overlay], {"run_depth": 5})
    assert key_source("fusions.cf.hybrid-0.8.params.lam", layers) == str(overlay)
    # The deepest match wins: config.yaml sets the method the overlay leaves alone.
    assert key_source("fusions.cf.hybrid-0.8.method", layers) == str(REPO / "config.yaml")
    assert key_source("collections.cf.sources", layers) == str(REPO / "config.yaml")
    assert key_source("run_depth", layers) == "--config"
    assert key_source("no_such_key", layers) is None
    error = attributed(
        ConfigError("config: fusions.cf.hybrid-0.8.params.lam: must be <= 1"), layers
    )
    assert str(error) == f"{overlay}: fusions.cf.hybrid-0.8.params.lam: must be <= 1"
    other = ConfigError("run.trec:3: a bad line")
    assert attributed(other, layers) is other
