"""Which model each math-model run loads: one trained here or a released checkpoint.

A DPR / ColBERT run is ``<encoder>-<backbone>``, fine-tuned here, or a ``math_models.released``
entry, whose checkpoint is a hub id or a local path; encoder re-rankers name either kind, and
paper 001's re-ranker a backbone or a ``checkpoint``. The rules ask this module for a job's
model, its settings, and its model input: a directory trained here, or a local checkpoint, so
that replacing it re-runs the jobs; a hub id is no file, transformers fetches it (or reads its
cache) when the job runs. A released run thus indexes, searches and re-ranks exactly as a
fine-tuned one, with no training job in its DAG.
"""

from __future__ import annotations

from typing import Any

from hybrid_ir import paths
from hybrid_ir.config_settings import math_model_runs
from hybrid_ir.hub import local_checkpoint
from hybrid_ir.neural.encoders import ENCODERS


def checkpoint_input(checkpoint: str, key: str) -> dict[str, str]:
    """``{key: path}`` for a local checkpoint; nothing for a hub id."""
    local = local_checkpoint(checkpoint)
    return {} if local is None else {key: str(local)}


class MathModels:
    """The models of a validated ``math_models`` section, by run name."""

    def __init__(self, math: dict[str, Any]):
        self.math = math
        self.runs = math_model_runs(math)
        self.encoder_runs = {
            name: run for name, run in self.runs.items() if run["kind"] in ENCODERS
        }

    def encoder_model(self, system: str) -> str:
        """What an encoder run loads: its released checkpoint, or the model fine-tuned here."""
        run = self.encoder_runs[system]
        if "checkpoint" in run:
            return run["checkpoint"]
        return paths.model(run["kind"], run["backbone"])

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
        spec = self.runs[system]
        if "released" in spec:
            return spec["released"]
        return f"{spec['encoder']}-{spec['backbone']}"

    def mlm_model(self, system: str) -> str:
        """What paper 001's re-ranker loads: its checkpoint, the backbone further pretrained
        here, or the backbone's configured model."""
        spec = self.runs[system]
        if "checkpoint" in spec:
            return spec["checkpoint"]
        backbone = self.math["backbones"][spec["backbone"]]
        if backbone["pretrain"]:
            return paths.model("pretrained", spec["backbone"])
        return backbone["model"]

    def mlm_input(self, system: str) -> dict[str, str]:
        spec = self.runs[system]
        if "checkpoint" in spec:
            return checkpoint_input(spec["checkpoint"], "checkpoint")
        if self.math["backbones"][spec["backbone"]]["pretrain"]:
            return {"backbone": self.mlm_model(system)}
        return {}
