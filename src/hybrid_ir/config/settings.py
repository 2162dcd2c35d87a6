"""What rules and scripts read from a validated configuration: the runs each topic set has, the
math models and their training settings, the qrels views, each rule's threads and resources."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hybrid_ir.neural.encoders import ENCODERS

IN_CORPUS = "-in-corpus"
"""Suffix of a pool-restricted qrels set: the judgments of documents the corpus holds."""


# Exactly one of these says how long a training section trains. They are alternatives, so a
# layer that sets one replaces the other of every layer below it: `epochs` in configs/paper.yaml
# must not end up beside config.yaml's `steps` (Snakemake merges configuration files key by key).
TRAINING_LENGTHS = ("steps", "epochs")


def training_sections(config: Mapping) -> dict[str, Mapping]:
    """Config key -> each training section of a (possibly partial) configuration layer: the
    shared pretraining, each encoder's fine-tuning, each backbone's pretraining overrides."""
    math = config.get("math_models")
    if not isinstance(math, Mapping):
        return {}
    sections = {
        f"math_models.{key}": math[key]
        for key in ("pretraining", *ENCODERS)
        if isinstance(math.get(key), Mapping)
    }
    backbones = math.get("backbones")
    for name, backbone in (backbones if isinstance(backbones, Mapping) else {}).items():
        if isinstance(backbone, Mapping) and isinstance(backbone.get("pretraining"), Mapping):
            sections[f"math_models.backbones.{name}.pretraining"] = backbone["pretraining"]
    return sections


def training_plan(config: dict) -> dict[str, dict]:
    """What each model trains with, after defaults and overrides: ``pretraining <backbone>``
    (the shared settings with the backbone's overrides) and ``<encoder> <backbone>``."""
    math = config["math_models"]
    if not math:
        return {}
    plan = {}
    for backbone, entry in math["backbones"].items():
        if entry["pretrain"]:
            plan[f"pretraining {backbone}"] = pretraining_settings(math, backbone)
        for encoder in trained_encoders(math, backbone):
            plan[f"{encoder} {backbone}"] = fine_tuning_settings(math, encoder, backbone)
    return plan


def trained_encoders(math: dict, backbone: str) -> list[str]:
    """The encoders fine-tuned from ``backbone``: those with a model among its ``models``
    (DPR's epoch snapshots are taken by DPR's training)."""
    wanted = kept_models(math, backbone)
    kinds = {kind for kind, model in _fine_tuned(math) if model in wanted}
    return [kind for kind in ENCODERS if kind in kinds]


def fine_tuning_settings(math: dict, encoder: str, backbone: str) -> dict:
    """``math_models.<encoder>`` for one backbone. A backbone whose ``models`` keep DPR's epoch
    snapshots but not its final model trains DPR up to the last snapshot and no further: with
    the constant rate snapshots require, and batches taken in order, the model after epoch e is
    the same whether training goes on or stops there (tests/test_dpr.py), so the epochs after
    it would be computed for nothing (paper 000: 9 of DPR's 10 epochs, for 3 of its backbones)."""
    settings = dict(math[encoder])
    models = math["backbones"][backbone].get("models")
    snapshots = settings.get("snapshots", [])
    if encoder == "dpr" and models is not None and "dpr" not in models and snapshots:
        settings["epochs"] = max(snapshots)
    return settings


def pretraining_settings(math: dict, backbone: str) -> dict:
    """The shared pretraining settings (less the corpus) with the backbone's own overrides; a
    length the backbone gives replaces the shared one."""
    settings = {key: value for key, value in math["pretraining"].items() if key != "corpus"}
    override = math["backbones"][backbone]["pretraining"]
    if any(key in override for key in TRAINING_LENGTHS):
        for key in TRAINING_LENGTHS:
            settings.pop(key, None)
    return settings | override


# The rule whose jobs train each section's models: their GPUs decide the process count.
TRAINING_RULES = {"pretraining": "pretrain", "dpr": "finetune", "colbert": "finetune"}


def training_processes(config: Mapping, section: str) -> set[int]:
    """The process counts a training job of ``math_models.<section>`` may run on: one per GPU
    of its rule where CUDA may be used, ``cpu_processes`` where the CPU may (``device: auto``
    allows both); ColBERT trains on one process."""
    math = config["math_models"]
    if section == "colbert":
        return {1}
    gpus = rule_settings(config, TRAINING_RULES[section])["gpu"]
    counts = set()
    if math["device"] != "cpu" and gpus > 0:
        counts.add(gpus)
    if math["device"] != "cuda" or gpus == 0:
        counts.add(math["cpu_processes"])
    return counts


def run_measures(
    config: dict, expected: Sequence[dict], collection: str, system: str, qrels: str
) -> list[str]:
    """A run's measures against a qrels set: its BM25 experiment's, then any other metric an
    expected-scores file asks of it."""
    measures = []
    if collection in config["bm25"]["experiments"]:
        measures += config["bm25"]["experiments"][collection]["qrels"].get(qrels, [])
    for document in expected:
        if document["collection"] == collection:
            asked = document.get("runs", {}).get(system, {}).get(qrels, {})
            measures += [metric for metric in asked if metric not in measures]
    return measures


def math_model_runs(math: dict) -> dict[str, dict]:
    """Runs of the math language models: ``dpr-<backbone>``, ``colbert-<backbone>``, the
    released checkpoints and the configured re-rankers -> {kind, backbone or checkpoint, ...}.
    A released run's kind is its encoder, as a fine-tuned one's. A re-ranker's kind is
    ``rerank`` (paper 001's MLM re-ranker) or, for one naming an ``encoder`` or a ``released``
    run (whose encoder it takes), ``encoder_rerank``."""
    runs = {}
    for backbone in math["backbones"]:
        wanted = kept_models(math, backbone)
        for kind, model in _fine_tuned(math):
            if model in wanted:
                runs[f"{model}-{backbone}"] = {"kind": kind, "backbone": backbone, "model": model}
    released = math.get("released", {})
    for name, entry in released.items():
        runs[name] = {"kind": entry["encoder"], "checkpoint": entry["checkpoint"]}
    for name, entry in math.get("rerankers", {}).items():
        if "released" in entry:
            # A missing entry is reported by the configuration check, which needs these runs.
            encoder = released.get(entry["released"], {}).get("encoder")
            runs[name] = {"kind": "encoder_rerank", "encoder": encoder, **entry}
        else:
            runs[name] = {"kind": "encoder_rerank" if "encoder" in entry else "rerank", **entry}
    return runs


def trainable_models(math: dict) -> list[str]:
    """The models a backbone can be fine-tuned into: each configured encoder, then DPR after
    each epoch of ``math_models.dpr.snapshots`` (paper 000, Table 1 rows 1-4)."""
    return [model for _, model in _fine_tuned(math)]


def kept_models(math: dict, backbone: str) -> list[str]:
    """The models of ``trainable_models`` whose runs ``backbone`` keeps (its ``models``)."""
    return math["backbones"][backbone].get("models", trainable_models(math))


def _fine_tuned(math: dict) -> list[tuple[str, str]]:
    """(encoder, model) of each model of ``trainable_models``."""
    pairs = [(kind, kind) for kind in ENCODERS if kind in math]
    snapshots = math["dpr"]["snapshots"] if "dpr" in math else []
    return pairs + [("dpr", snapshot_model(epoch)) for epoch in snapshots]


def snapshot_model(epoch: int, encoder: str = "dpr") -> str:
    """The model name (``results/models/<name>/<backbone>``, run ``<name>-<backbone>``) of an
    encoder after ``epoch`` epochs of its fine-tuning."""
    return f"{encoder}-epoch{epoch}"


def qrels_views(collection: Mapping) -> list[str]:
    """The derived qrels sets of a configured collection: pool-restricted and per-language."""
    return [*collection["restricted_qrels"], *collection["language_qrels"]]


def rule_threads(config: Mapping, rule: str) -> int:
    """The threads of ``rule``'s jobs: its ``resources`` entry, else ``resources.default``."""
    return int(rule_settings(config, rule)["threads"])


def rule_resources(config: Mapping, rule: str) -> dict[str, Any]:
    """The Snakemake resources of ``rule``'s jobs (every key but threads), each from the rule's
    ``resources`` entry, else ``resources.default``; a partition or cores per GPU that neither
    sets is left out, so that SLURM picks its default partition rather than ``-p ''``. A job with
    GPUs asks for one node (``--nodes=1``): its training processes are started by one torchrun
    on one machine, and SLURM could otherwise place 8 GPUs on two 4-GPU nodes."""
    settings = rule_settings(config, rule)
    resources = {key: value for key, value in settings.items() if key != "threads"}
    if resources["gpu"] > 0:
        resources["nodes"] = 1
    return resources


def rule_settings(config: Mapping, rule: str) -> dict[str, Any]:
    section = config["resources"]
    return dict(section["default"]) | dict(section.get(rule, {}))
