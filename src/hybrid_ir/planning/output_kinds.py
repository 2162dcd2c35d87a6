"""The kinds of output ``rule all`` asks for, one registry entry each: the configuration section
that names them, the rules that write them, the package function that builds one, and the
:class:`~hybrid_ir.planning.plan.Plan` methods that give their targets, inputs and outputs. Runs are
the other registry (:mod:`hybrid_ir.config.run_origins`), figure kinds a third
(:mod:`hybrid_ir.reports.figures.kinds`); ``tests/test_output_registries.py`` checks each entry
against the schema, the rule files and the script that calls its builder."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OutputKind:
    """One kind of output the configuration names and ``rule all`` asks for."""

    section: str
    """The configuration section that names these outputs (a property of the schema)."""
    rules: tuple[str, ...]
    """The rules that write them; ``{name}`` stands for a name of the section where one rule
    is generated per name, ``{kind}`` for a figure kind (:data:`FIGURE_KINDS`)."""
    builder: str
    """``module.function`` of the package that builds one (what the last rule's script calls)."""
    targets: str
    """The :class:`~hybrid_ir.planning.plan.Plan` method giving what ``rule all`` asks of this
    kind."""
    inputs: str | None = None
    """The plan's method giving one output's inputs, where the rule asks the plan."""
    outputs: str | None = None
    """The plan's method giving the files one output writes, by the keys its script writes them
    to: its rule's outputs (for the name's wildcard) and its targets both."""
    params: str | None = None
    """The plan's method giving what its rule's script reads besides files (its params, but for
    the code version)."""
    named: str | None = None
    """The plan's method giving the outputs of this kind one asks for by name (tables, figures,
    claims pages: :class:`~hybrid_ir.planning.targets.NamedOutput`), each with a target rule of its
    own and in its paper's (``workflow/rules/targets.smk``, ``hybrid-ir targets``)."""


OUTPUT_KINDS: dict[str, OutputKind] = {
    "collection": OutputKind(
        "collections", ("convert_{name}",), "data.collections.convert", "collection_targets",
        "sources_of", "converted_outputs",
    ),
    "table": OutputKind(
        "tables", ("paper_table",), "reports.tables.results.score_rows", "table_targets",
        "table_sources", "table_outputs", "table_params", "named_tables",
    ),
    "explorer": OutputKind(
        "explore", ("explore_table",), "reports.explore.pages.table_explorer", "explorer_targets",
        "explorer_inputs", "explorer_outputs", "explorer_params", "named_explorers",
    ),
    "parameter_table": OutputKind(
        "parameter_tables", ("parameter_table",), "reports.tables.parameters.parameter_rows",
        "parameter_table_targets", "parameter_table_inputs", "parameter_table_outputs",
        "parameter_table_params", "named_parameter_tables",
    ),
    "claims": OutputKind(
        "claims", ("claims",), "reports.claims.verdicts.judge_files", "claims_targets",
        "claims_inputs", "claims_outputs", named="named_claims",
    ),
    "crossval": OutputKind(
        "crossval", ("crossvalidate",), "fusion.crossval.crossvalidate_linear", "crossval_targets",
        "crossval_inputs", "crossval_outputs", "crossval_params",
    ),
    "sweep": OutputKind(
        "sweeps", ("sweep",), "fusion.sweeps.sweep", "sweep_targets", "sweep_inputs", None,
        "sweep_params",
    ),
    "figure": OutputKind(
        "figures", ("figure_{kind}",), "reports.figures.draw.draw", "figure_targets",
        "figure_inputs", named="named_figures",
    ),
    "math_models": OutputKind(
        "math_models", ("pretrain", "finetune", "encoder_index", "encoder_search"),
        "neural.encoders.encoder", "math_targets", named="named_math_figures",
    ),
    "structure": OutputKind(
        "structure", ("structure_index", "structure_search", "structure_queries"),
        "retrieval.approach0.search", "structure_targets", "structure_query_inputs",
    ),
    "bm25_table": OutputKind(
        "bm25", ("bm25_table",), "reports.tables.bm25.bm25_rows", "bm25_table_targets", None,
        "bm25_table_outputs", "bm25_table_params", "named_bm25_table",
    ),
    "checks": OutputKind(
        "expected", ("check_scores",), "evaluation.checks.run_checks", "check_targets",
    ),
}  # fmt: skip
"""Every kind of output ``rule all`` asks for, in the order it lists them. Runs are asked for
by what reads them (a table, a sweep, a fusion), each from its origin in
:data:`hybrid_ir.config.run_origins.RUN_ORIGINS`."""
