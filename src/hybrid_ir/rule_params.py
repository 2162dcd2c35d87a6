"""What each rule's script reads besides its files: its params, but for the code version each
rule adds (workflow/rules/common.smk), as values or functions of the wildcards, the way
Snakemake's params take them. A part of :class:`hybrid_ir.plan.Plan`, which the run origins and
kinds of output name by method (:mod:`hybrid_ir.run_origins`, :mod:`hybrid_ir.output_kinds`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hybrid_ir import paths
from hybrid_ir.claims_file import PaperClaims
from hybrid_ir.explore_inputs import explored_tables
from hybrid_ir.katex_assets import katex_version


class RuleParams:
    """The params of the rules of runs, tables, sweeps and cross-validations."""

    config: dict[str, Any]
    claims: Mapping[str, PaperClaims]

    def bm25_search_params(self) -> dict[str, Any]:
        bm25 = self.config["bm25"]
        return {
            "layout": "{layout}",
            "k1": bm25["k1"],
            "b": bm25["b"],
            "depth": self.config["run_depth"],
            "remove_query": lambda w: bm25["experiments"][w.collection]["remove_query"],
            "query_fields": lambda w: bm25["experiments"][w.collection]["query_fields"],
            "tag": "bm25-{layout}",
        }

    def retriever_params(self) -> dict[str, Any]:
        return {"retriever": lambda w: self.config["retrievers"][w.collection][w.system]}

    def import_params(self) -> dict[str, Any]:
        return {
            "depth": self.config["run_depth"],
            "run_format": lambda w: self._imported(w)["format"],
            "duplicates": lambda w: self._imported(w)["duplicates"],
        }

    def _imported(self, w) -> dict:
        return self.config["external_runs"][w.collection][w.topics][w.system]

    def fusion_params(self) -> dict[str, Any]:
        def fusion(w) -> dict:
            return self.config["fusions"][w.collection][w.topics][w.system]

        return {
            "method": lambda w: fusion(w)["method"],
            "params": lambda w: fusion(w)["params"],
            "depth": self.config["run_depth"],
        }

    def crossval_params(self) -> dict[str, Any]:
        return {
            "entry": lambda w: self.config["crossval"][w.crossval],
            "depth": self.config["run_depth"],
        }

    def sweep_params(self) -> dict[str, Any]:
        return {
            "entry": lambda w: self.config["sweeps"][w.sweep],
            "depth": self.config["run_depth"],
        }

    def table_params(self) -> dict[str, Any]:
        explored = set(explored_tables(self.config))
        return {
            "name": "{table}",
            "spec": lambda w: self.config["tables"][w.table],
            "claims": lambda w: self.table_claims(w.table),
            "explorer": lambda w: (
                paths.result_table(w.table, "explore.html") if w.table in explored else None
            ),
        }

    def explorer_params(self) -> dict[str, Any]:
        """A table's explorer: its configuration entry, the page's size settings, and the math
        renderer it inlines (by version, so that installing or updating KaTeX rebuilds it)."""
        explore = self.config["explore"]
        return {
            "name": "{table}",
            "spec": lambda w: self.config["tables"][w.table],
            "settings": {
                "top_k": explore["top_k"],
                "text_chars": explore["text_chars"],
                "label_order": explore["label_order"],
            },
            "katex": explore["katex"],
            "renderer": katex_version(explore["katex"]),
        }

    def parameter_table_params(self) -> dict[str, Any]:
        return {
            "name": "{parameter_table}",
            "spec": lambda w: self.config["parameter_tables"][w.parameter_table],
        }

    def bm25_table_params(self) -> dict[str, Any]:
        bm25 = self.config["bm25"]
        return {
            "experiments": bm25["experiments"],
            "k1": bm25["k1"],
            "b": bm25["b"],
            "depth": self.config["run_depth"],
        }

    def table_claims(self, name: str) -> dict[str, list[str]]:
        """The claims tested on a table, as ``paper -> [claim ids]``, for its notes."""
        found = {}
        for paper, claims in self.claims.items():
            ids = [claim.id for claim in claims.claims if claim.table == name]
            if ids:
                found[paper] = ids
        return found
