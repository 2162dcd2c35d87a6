"""What each rule's script reads besides its files: its params, but for the code version each
rule adds (workflow/rules/common.smk), as values or functions of the wildcards, the way
Snakemake's params take them. A part of :class:`hybrid_ir.planning.plan.Plan`, which the run origins
and kinds of output name by method (:mod:`hybrid_ir.config.run_origins`,
:mod:`hybrid_ir.planning.output_kinds`); the math models' are in
:mod:`hybrid_ir.planning.math_plan`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from hybrid_ir import paths
from hybrid_ir.config.settings import run_measures
from hybrid_ir.data.fetch import ManifestEntry
from hybrid_ir.reports.claims.file import PaperClaims
from hybrid_ir.reports.explore.inputs import explored_tables
from hybrid_ir.reports.explore.katex import katex_version


class RuleParams:
    """The params of the rules of raw files, runs, structure search, evaluations, tables,
    figures, sweeps and cross-validations."""

    config: dict[str, Any]
    claims: Mapping[str, PaperClaims]
    expected: Sequence[dict]
    manifest_entry: Callable[..., ManifestEntry]
    askme_indexes: Callable[[str], set[str]]

    def raw_file_entry(self, wildcards) -> dict[str, Any]:
        """A raw file's manifest row as a plain mapping, which Snakemake records (it skips a
        dataclass): a row changed for a replaced mirror file re-fetches it and re-runs what
        reads it."""
        return asdict(self.manifest_entry(wildcards.path))

    def qrels_language(self, wildcards) -> str:
        """The language a per-language qrels view keeps."""
        return self.config["collections"][wildcards.collection]["language_qrels"][wildcards.view][
            "language"
        ]

    def bm25_text_fields(self, wildcards) -> list[str]:
        """The fields a collection's BM25 indexes hold."""
        return self.config["bm25"]["experiments"][wildcards.collection]["text_fields"]

    def bm25_store_raw(self, wildcards) -> bool:
        """Whether a BM25 index keeps the documents' text: askme retrievers read it."""
        return f"bm25-{wildcards.layout}" in self.askme_indexes(wildcards.collection)

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

    def evaluation_measures(self, wildcards) -> list[str]:
        """A run's measures against a qrels set
        (:func:`hybrid_ir.config.settings.run_measures`)."""
        return run_measures(
            self.config, self.expected, wildcards.collection, wildcards.system, wildcards.qrels
        )

    def structure_entry(self, wildcards) -> dict[str, Any]:
        """A structure-search run's configuration entry."""
        return self.config["structure"][wildcards.collection][wildcards.system]

    def structure_depth(self, wildcards) -> int:
        """How many hits a structure-search run keeps per topic."""
        return self.structure_entry(wildcards)["depth"]

    def structure_shard_count(self, wildcards) -> int:
        """How many shards a structure-search run's index is split into."""
        return self.structure_entry(wildcards)["shards"]

    def structure_shard_number(self, wildcards) -> int:
        """A shard job's shard, as a number."""
        return int(wildcards.shard)

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

    def figure_spec(self, wildcards) -> dict[str, Any]:
        """A figure's configuration entry."""
        return self.config["figures"][wildcards.figure]

    def figure_sweep(self, wildcards) -> dict[str, Any] | None:
        """The configuration entry of the sweep a figure draws, if it draws one."""
        figure = self.figure_spec(wildcards)
        return self.config["sweeps"][figure["sweep"]] if "sweep" in figure else None

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
