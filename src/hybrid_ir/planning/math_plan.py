"""What the math models' rules ask of a validated configuration: the pre-tokenized copies, the
triplets, pretraining and fine-tuning, and which model each math-model run loads. A part of
:class:`hybrid_ir.planning.plan.Plan`, whose rule-facing methods the rule files in
``workflow/rules/math`` call (input functions and params take Snakemake's ``wildcards``).

A DPR / ColBERT run is ``<encoder>-<backbone>``, fine-tuned here, or a ``math_models.released``
entry, whose checkpoint is a hub id or a local path; encoder re-rankers name either kind, and
paper 001's re-ranker a backbone or a ``checkpoint``. A job's model, its settings and its model
input come from here: the input is a directory trained here, or a local checkpoint, so that
replacing it re-runs the jobs; a hub id is no file, transformers fetches it (or reads its cache)
when the job runs. A released run thus indexes, searches and re-ranks exactly as a fine-tuned
one, with no training job in its DAG.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from hybrid_ir import paths
from hybrid_ir.config.settings import fine_tuning_settings, pretraining_settings, snapshot_model
from hybrid_ir.data.hub import local_checkpoint
from hybrid_ir.neural.encoders import ENCODERS


def checkpoint_input(checkpoint: str, key: str) -> dict[str, str]:
    """``{key: path}`` for a local checkpoint; nothing for a hub id."""
    local = local_checkpoint(checkpoint)
    return {} if local is None else {key: str(local)}


class MathPlan:
    """The inputs and params of the math models' rules, and the model each of their runs loads
    (by run name: ``encoder_model`` and the like; by a job's wildcards: the rule-facing
    methods)."""

    config: dict[str, Any]
    math: dict[str, Any]
    """The validated ``math_models`` section (empty or ``None`` without one)."""
    math_runs: dict[str, dict]
    """Every math-model run by name (:func:`hybrid_ir.config.settings.math_model_runs`)."""
    converted_outputs: Callable[[str], dict[str, str]]
    run_path: Callable[[str, str, str], str]

    # --- pre-tokenization and triplets --------------------------------------------------------

    def pretok_inputs(self, name: str) -> dict[str, str]:
        """Canonical corpus and topic files of a collection, keyed as its pre-tokenized
        copies."""
        converted = self.converted_outputs(name)
        return {
            key: path
            for key, path in converted.items()
            if key == "corpus" or key.startswith("topics_")
        }

    def pretok_outputs(self, name: str) -> dict[str, str]:
        return {
            key: paths.pretok(
                name, "corpus" if key == "corpus" else f"topics/{key.removeprefix('topics_')}"
            )
            for key in self.pretok_inputs(name)
        }

    def triplets_settings(self) -> dict[str, Any]:
        """``math_models.triplets``, which the schema requires beside ``dpr`` or ``colbert``,
        the only users of the triplets."""
        return self.math["triplets"] if "triplets" in self.math else {"collections": []}

    def triplet_collections(self) -> list[str]:
        """The collections whose posts the triplets are drawn from."""
        return self.triplets_settings()["collections"]

    def triplets_inputs(self) -> dict[str, list[str]]:
        """The pre-tokenized corpora the triplets are drawn from, the qrels of those and of the
        models' own collection, and that collection's topics."""
        collections = self.triplet_collections()
        home = self.math["collection"]
        converted = self.config["collections"]
        return {
            "corpora": [paths.pretok(name, "corpus") for name in collections],
            "qrels": [
                paths.qrels(name, s)
                for name in sorted({home, *collections})
                for s in converted[name]["qrels"]
            ],
            "topics": [paths.topics(home, s) for s in converted[home]["topics"]],
        }

    # --- pretraining and fine-tuning ------------------------------------------------------------

    def backbone_model(self, wildcards) -> str:
        """The configured model of a job's backbone."""
        return self.math["backbones"][wildcards.backbone]["model"]

    def source_model_input(self, wildcards) -> dict[str, str]:
        """The model pretraining starts from, when it is a local directory."""
        return checkpoint_input(self.backbone_model(wildcards), "source_model")

    def pretrain_settings(self, wildcards) -> dict[str, Any]:
        """A backbone's pretraining settings
        (:func:`hybrid_ir.config.settings.pretraining_settings`)."""
        return pretraining_settings(self.math, wildcards.backbone)

    def backbone_input(self, wildcards) -> dict[str, str]:
        """The directory a fine-tuning job's backbone starts from: further pretrained here, or
        its configured model when that is a local directory (a fetched hub model's included)."""
        entry = self.math["backbones"][wildcards.backbone]
        if entry["pretrain"]:
            return {"backbone": paths.model("pretrained", wildcards.backbone)}
        return checkpoint_input(entry["model"], "backbone")

    def finetune_settings(self, wildcards) -> dict[str, Any]:
        """An encoder's settings for one backbone
        (:func:`hybrid_ir.config.settings.fine_tuning_settings`)."""
        return fine_tuning_settings(self.math, wildcards.encoder, wildcards.backbone)

    def dpr_snapshots(self) -> list[int]:
        """Epochs after which DPR fine-tuning also keeps its model (paper 000 Table 1 rows
        1-4)."""
        return self.math["dpr"]["snapshots"] if self.math and "dpr" in self.math else []

    def snapshot_dirs(self, wildcards) -> dict[int, str]:
        """Epoch -> where a fine-tuning job keeps its model after that epoch (DPR only)."""
        if wildcards.encoder != "dpr":
            return {}
        return {
            epoch: paths.model(snapshot_model(epoch), wildcards.backbone)
            for epoch in self.dpr_snapshots()
        }

    def backbone_source(self, wildcards, input) -> str:
        """What a fine-tuning step loads: the pretrained directory, or the configured model."""
        backbone = self.math["backbones"][wildcards.backbone]
        return input.backbone if backbone["pretrain"] else backbone["model"]

    # --- the model of each run, by run name -----------------------------------------------------

    @cached_property
    def encoder_runs(self) -> dict[str, dict]:
        """The DPR / ColBERT runs, fine-tuned here or released, by name."""
        return {name: run for name, run in self.math_runs.items() if run["kind"] in ENCODERS}

    def encoder_model(self, system: str) -> str:
        """What an encoder run loads: its released checkpoint, or the model fine-tuned here."""
        run = self.encoder_runs[system]
        if "checkpoint" in run:
            return run["checkpoint"]
        return paths.model(run["model"], run["backbone"])

    def encoder_input(self, system: str) -> dict[str, str]:
        run = self.encoder_runs[system]
        if "checkpoint" in run:
            return checkpoint_input(run["checkpoint"], "model")
        return {"model": self.encoder_model(system)}

    def encoder_settings(self, system: str) -> dict[str, Any]:
        """A released run's own entry, or the settings its encoder was fine-tuned with."""
        run = self.encoder_runs[system]
        if "checkpoint" in run:
            return self.math["released"][system]
        return self.math[run["kind"]]

    def reranking_encoder(self, system: str) -> str:
        """The encoder run whose model an encoder re-ranker scores with."""
        spec = self.math_runs[system]
        if "released" in spec:
            return spec["released"]
        return f"{spec['encoder']}-{spec['backbone']}"

    def mlm_model(self, system: str) -> str:
        """What paper 001's re-ranker loads: its checkpoint, the backbone further pretrained
        here, or the backbone's configured model."""
        spec = self.math_runs[system]
        if "checkpoint" in spec:
            return spec["checkpoint"]
        backbone = self.math["backbones"][spec["backbone"]]
        if backbone["pretrain"]:
            return paths.model("pretrained", spec["backbone"])
        return backbone["model"]

    def mlm_input(self, system: str) -> dict[str, str]:
        spec = self.math_runs[system]
        if "checkpoint" in spec:
            return checkpoint_input(spec["checkpoint"], "checkpoint")
        if self.math["backbones"][spec["backbone"]]["pretrain"]:
            return {"backbone": self.mlm_model(system)}
        return {}

    # --- encoder indexes and runs, re-rankers: by a job's wildcards ----------------------------

    def encoder_run_names(self) -> list[str]:
        """The ``system`` constraint of the encoder index rule: every encoder run."""
        return list(self.encoder_runs)

    def encoder_index_inputs(self, wildcards) -> dict[str, str]:
        """An encoder run's model input and the pre-tokenized corpus it indexes."""
        return {
            **self.encoder_input(wildcards.system),
            "corpus": paths.pretok(wildcards.collection, "corpus"),
        }

    def encoder_search_inputs(self, wildcards) -> dict[str, str]:
        """An encoder run's model input, its index and the pre-tokenized topics it searches."""
        collection, system = wildcards.collection, wildcards.system
        return {
            **self.encoder_input(system),
            "index": paths.index(collection, system),
            "topics": paths.pretok(collection, f"topics/{wildcards.topics}"),
        }

    def encoder_run_model(self, wildcards) -> str:
        """The model an encoder run's job loads (:meth:`encoder_model`)."""
        return self.encoder_model(wildcards.system)

    def encoder_run_kind(self, wildcards) -> str:
        """An encoder run's encoder: ``dpr`` or ``colbert``."""
        return self.encoder_runs[wildcards.system]["kind"]

    def encoder_run_settings(self, wildcards) -> dict[str, Any]:
        """An encoder run's settings (:meth:`encoder_settings`)."""
        return self.encoder_settings(wildcards.system)

    def reranker_entry(self, wildcards) -> dict[str, Any]:
        """A re-ranker's run entry (:attr:`math_runs`)."""
        return self.math_runs[wildcards.system]

    def _base_run(self, wildcards) -> str:
        base = self.math_runs[wildcards.system]["base"]
        return self.run_path(wildcards.collection, wildcards.topics, base)

    def mlm_rerank_inputs(self, wildcards) -> dict[str, str]:
        """Paper 001's re-ranker: its model input, the base run it re-ranks, and the
        pre-tokenized corpus and topics."""
        collection = wildcards.collection
        return {
            **self.mlm_input(wildcards.system),
            "base": self._base_run(wildcards),
            "corpus": paths.pretok(collection, "corpus"),
            "topics": paths.pretok(collection, f"topics/{wildcards.topics}"),
        }

    def mlm_reranker_model(self, wildcards) -> str:
        """The further-pretrained directory, or the configured checkpoint (hub id or path)."""
        return self.mlm_model(wildcards.system)

    def encoder_rerank_inputs(self, wildcards) -> dict[str, str]:
        """An encoder re-ranker: its encoder run's model input and index (the candidates'
        vectors: the collection is encoded once per model, by its index), the base run it
        re-ranks, and the pre-tokenized topics."""
        collection, encoder = wildcards.collection, self.reranking_encoder(wildcards.system)
        return {
            **self.encoder_input(encoder),
            "index": paths.index(collection, encoder),
            "base": self._base_run(wildcards),
            "topics": paths.pretok(collection, f"topics/{wildcards.topics}"),
        }

    def encoder_reranker_model(self, wildcards) -> str:
        """The model of an encoder re-ranker's encoder run."""
        return self.encoder_model(self.reranking_encoder(wildcards.system))

    def encoder_reranker_settings(self, wildcards) -> dict[str, Any]:
        """The settings of an encoder re-ranker's encoder run."""
        return self.encoder_settings(self.reranking_encoder(wildcards.system))
