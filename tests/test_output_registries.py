"""The registries of what the workflow makes: run origins (hybrid_ir.config.run_origins) and the
kinds of output ``rule all`` asks for (hybrid_ir.planning.output_kinds). Each entry is checked
against the schema, the rule files and the scripts, so that an entry cannot name a section, rule or
function that does not exist; a new origin is one entry, and an error a job finds names the file
that sets the offending key."""

from __future__ import annotations

import copy
import importlib
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from hybrid_ir.config import run_origins
from hybrid_ir.config.run_origins import RUN_ORIGINS, RunOrigin, origin_names, systems
from hybrid_ir.config.sources import write_layers
from hybrid_ir.config.validation import validate_config
from hybrid_ir.errors import ConfigError
from hybrid_ir.jobs.run import run_step
from hybrid_ir.planning.output_kinds import OUTPUT_KINDS
from hybrid_ir.planning.plan import Plan

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
SETTINGS_SECTIONS = {
    "mirror", "manifest", "raw_url", "seed", "max_relevance", "max_line_chars", "run_depth",
    "resources", "job_servers", "hub_models", "deferred_tables", "structure_scratch",
}  # fmt: skip
"""Top-level sections that set how things are made, not what is made."""


def _rule_scripts() -> dict[str, str]:
    """Rule name (``convert_{name}`` for a rule generated per name) -> its script's stem."""
    scripts = {}
    for path in (REPO / "workflow" / "rules").rglob("*.smk"):
        blocks = re.split(r"\n(?=rule |for |\S)", path.read_text(encoding="utf-8"))
        for block in blocks:
            named = re.match(r"rule (\w+):", block) or re.search(
                r'name:\s+f"(\w+)_\{_\w+\}"', block
            )
            script = re.search(r'script:\s+"[./]*scripts/(\w+)\.py"', block)
            if named and script:
                name = named.group(1) + ("" if block.startswith("rule ") else "_{generated}")
                scripts[name] = script.group(1)
    return scripts


RULE_SCRIPTS = _rule_scripts()


def _script_of(rule: str) -> str:
    generated = re.sub(r"\{\w+\}$", "{generated}", rule)
    assert generated in RULE_SCRIPTS, f"no rule {rule} in workflow/rules"
    return RULE_SCRIPTS[generated]


def _imports(script: str, builder: str) -> bool:
    module, _, function = builder.rpartition(".")
    text = (REPO / "workflow" / "scripts" / f"{script}.py").read_text(encoding="utf-8")
    imported = re.search(
        rf"from hybrid_ir\.{re.escape(module)} import \(?([^)]*?)(?:\)|\n\n)", text
    )
    return bool(imported) and function in re.findall(r"\w+", imported.group(1))


@pytest.fixture(scope="module")
def schema_sections() -> set[str]:
    return set(yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))["properties"])


@pytest.fixture(scope="module")
def config() -> dict:
    config = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    validate_config(config, SCHEMA)
    return config


@pytest.mark.parametrize("name", RUN_ORIGINS)
def test_a_run_origin_names_a_section_rules_and_the_function_its_script_calls(
    name, schema_sections
):
    origin = RUN_ORIGINS[name]
    assert origin.section in schema_sections
    for rule in origin.rules:
        _script_of(rule)
    module, _, function = origin.builder.rpartition(".")
    assert callable(getattr(importlib.import_module(f"hybrid_ir.{module}"), function))
    assert any(_imports(_script_of(rule), origin.builder) for rule in origin.rules), origin
    assert {origin.inputs, origin.params} - {None} <= set(Plan.RULE_FACING)


@pytest.mark.parametrize("name", OUTPUT_KINDS)
def test_an_output_kind_names_a_section_rules_inputs_and_its_builder(name, schema_sections):
    kind = OUTPUT_KINDS[name]
    assert kind.section in schema_sections
    scripts = [_script_of(rule) for rule in kind.rules]
    module, _, function = kind.builder.rpartition(".")
    assert callable(getattr(importlib.import_module(f"hybrid_ir.{module}"), function))
    assert any(_imports(script, kind.builder) for script in scripts), kind
    assert {kind.inputs, kind.outputs, kind.params} - {None} <= set(Plan.RULE_FACING)
    assert callable(getattr(Plan, kind.targets))
    assert kind.named is None or callable(getattr(Plan, kind.named))


def test_every_section_is_an_output_kind_a_run_origin_or_a_setting(schema_sections):
    registered = {kind.section for kind in OUTPUT_KINDS.values()}
    registered |= {origin.section for origin in RUN_ORIGINS.values()}
    assert schema_sections - registered == SETTINGS_SECTIONS


def test_the_run_names_of_the_default_configuration_by_origin(config):
    assert origin_names(config, "bm25") == {"bm25-flat", "bm25-multifield"}
    assert not origin_names(config, "fused") & origin_names(config, "bm25")
    by_origin = {name: origin_names(config, name) for name in RUN_ORIGINS}
    every = [run for names in by_origin.values() for run in names]
    claimed = {run for c, e in config["collections"].items() for t in e["topics"]
               for run in systems(config, c, t)}  # fmt: skip
    assert set(every) == claimed


def test_a_new_run_origin_is_one_registry_entry(config, monkeypatch):
    """A ``toy_runs.<collection>.<topics>.<name>`` section becomes runs that tables and fusions
    can name, by one entry (its rule and schema section aside)."""
    monkeypatch.setitem(
        RUN_ORIGINS,
        "toy",
        RunOrigin("toy_runs", "toy_runs.{collection}.{topics}.{name}", ("toy",), "runs.read_run",
                  run_origins._per_topics("toy_runs")),
    )  # fmt: skip
    config = copy.deepcopy(config) | {"toy_runs": {"cf": {"all": {"oracle": {}}}}}
    assert systems(config, "cf", "all")["oracle"] == "toy_runs"
    assert origin_names(config, "toy") == {"oracle"}
    plan = Plan(config, {}, [], {}, None)
    assert plan.run_path("cf", "all", "oracle") == "results/runs/cf/all/oracle.trec"


def test_a_run_name_two_origins_claim_names_the_second_key(config):
    config = copy.deepcopy(config)
    taken = next(iter(config["retrievers"]["cf"]))
    config["fusions"]["cf"]["all"][taken] = {"method": "rrf", "runs": ["vsr", "vsr"]}
    with pytest.raises(ConfigError, match=rf"^config: fusions\.cf\.all\.{taken}: run name already"):
        systems(config, "cf", "all")


def test_a_plan_error_names_the_file_that_sets_the_key(config, tmp_path):
    overlay = tmp_path / "overlay.yaml"
    imported = {"external_runs": {"cf": {"all": {"x": {"path": "nope.trec"}}}}}
    layers = [(str(REPO / "config.yaml"), {"collections": {}}), (str(overlay), imported)]
    plan = Plan(config, {}, [], {}, tmp_path, layers)
    raw_file = plan.rule_facing()["raw_file"]
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(overlay))}: external_runs\.cf\.all"):
        raw_file("nope.trec", "external_runs.cf.all.x")


def test_a_jobs_configuration_error_names_the_file_that_sets_the_key(tmp_path, monkeypatch, capfd):
    """The workflow's start keeps the layers; a job's error found later names the file."""
    monkeypatch.chdir(tmp_path)
    write_layers([("config.yaml", {"crossval": {"toy": {"folds": 5}}}),
                  ("extra.yaml", {"crossval": {"toy": {"folds": 3}}})])  # fmt: skip
    job = SimpleNamespace(log=[str(tmp_path / "job.log")], rule="crossvalidate", output=[],
                          config={"max_relevance": 1000, "max_line_chars": 10_000})  # fmt: skip

    def fails():
        raise ConfigError("config: crossval.toy.folds: cannot split 2 topic(s) into 3 folds")

    with pytest.raises(SystemExit):
        run_step(job, fails)
    line = "extra.yaml: crossval.toy.folds: cannot split 2 topic(s) into 3 folds"
    assert f"hybrid-ir error: {line}" in capfd.readouterr().err
    assert line in (tmp_path / "job.log").read_text(encoding="utf-8")
    kept = json.loads((tmp_path / ".snakemake/hybrid_ir/config_layers.json").read_text())
    assert [name for name, _ in kept] == ["config.yaml", "extra.yaml"]
