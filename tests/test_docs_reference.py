"""The documentation site's generated reference pages (hybrid_ir.cli.docs_reference): each lists
everything its source defines (every key of the configuration schema, every command and option
of the CLI, every measure set and column, every output path and registry entry), in Markdown
tables that hold together. Building the site itself is tests/test_docs_site.py."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from hybrid_ir import paths
from hybrid_ir.cli import docs_reference
from hybrid_ir.cli.docs_reference import (
    CLAIMS_SCHEMA,
    changelog_page,
    claims_files_page,
    cli_page,
    code,
    commands,
    configuration_page,
    escape,
    first_sentence,
    load_schema,
    measures_page,
    outputs_page,
    path_functions,
    schema_rows,
)
from hybrid_ir.cli.main import build_parser
from hybrid_ir.config import run_origins
from hybrid_ir.evaluation import measures as evaluate
from hybrid_ir.planning import output_kinds
from hybrid_ir.reports.figures import kinds as figure_kinds

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def schema():
    return load_schema(REPO)


@pytest.fixture(scope="module")
def configuration(schema):
    return configuration_page(schema)


def property_names(node, found=None):
    """Every key named under ``properties`` anywhere in a schema (conditional branches too)."""
    found = set() if found is None else found
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                found |= {name for name, sub in value.items() if sub is not True}
            property_names(value, found)
    elif isinstance(node, list):
        for item in node:
            property_names(item, found)
    return found


def unescaped_pipes(line: str) -> int:
    """Cell separators of a table line: pipes outside code spans and not escaped."""
    outside = re.sub(r"(`+).+?\1", "", line)
    return len(re.findall(r"(?<!\\)\|", outside))


def assert_tables_hold_together(page: str) -> None:
    """Every table row has its header's number of cells."""
    header = None
    for number, line in enumerate(page.splitlines(), 1):
        if not line.startswith("|"):
            header = None
            continue
        if header is None:
            header = unescaped_pipes(line)
        assert unescaped_pipes(line) == header, f"line {number}: {line}"


def test_every_schema_key_has_a_row_and_every_top_level_key_a_section(schema, configuration):
    rows = [row.path for section in schema_rows(schema).values() for row in section]
    named = {part.split("[")[0] for path in rows for part in path.split(".")}
    assert property_names(schema) - named == set()
    for key in schema["properties"]:
        assert f"## `{key}` {{#{key}}}" in configuration
        assert f"[`{key}`](#{key})" in configuration
    for name in schema["$defs"]:
        assert f"{{#def-{name}}}" in configuration
    assert_tables_hold_together(configuration)


def test_configuration_rows_carry_type_default_constraints_and_description(schema):
    rows = {row.path: row for section in schema_rows(schema).values() for row in section}
    depth = rows["run_depth"]
    assert (depth.type, depth.default) == ("integer", "`1000`")
    assert depth.constraints == ["≥ 1", "≤ 2147483647"]
    assert depth.description.startswith("Documents kept per topic")
    assert rows["mirror"].constraints == ["required"]
    assert rows["bm25.k1"].constraints == ["> 0", "required"]
    method = rows["fusions.<collection>.<system name>.method"]
    assert method.type == "string" and '`"rrf"`' in method.constraints[0]
    # A key only a conditional branch allows says so.
    pooling = rows["math_models.released.<run name>.pooling"]
    assert pooling.constraints[0] == 'only when `encoder` is `"dpr"`'
    doc_maxlen = rows["math_models.released.<run name>.doc_maxlen"]
    assert doc_maxlen.constraints[0] == 'only when `encoder` is not `"dpr"`'
    # A key both branches allow alike is unconditional.
    assert not rows["math_models.released.<run name>.math_tokens"].constraints[0].startswith("only")
    # A linked definition: its uses link to it, their own defaults listed.
    assert rows["resources.retrieve"].type == "[rule_resources](#def-rule_resources)"
    assert rows["resources.retrieve.threads"].default == "`2`"


def test_a_small_schema_in_words():
    schema = {
        "required": ["a"],
        "properties": {
            "a": {
                "type": "object",
                "description": "Collection -> run name -> settings.",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "required": ["kind"],
                        "properties": {"kind": {"enum": ["x", "y"]}, "n": {"type": "integer"}},
                        "if": {"properties": {"kind": {"const": "x"}}},
                        "then": {"required": ["n"], "properties": {"extra": {"type": "string"}}},
                    },
                },
            }
        },
    }
    rows = {row.path: row for row in schema_rows(schema)["a"]}
    assert list(rows) == [
        "a",
        "a.<collection>",
        "a.<collection>.<run name>",
        "a.<collection>.<run name>.kind",
        "a.<collection>.<run name>.n",
        "a.<collection>.<run name>.extra",
    ]
    assert rows["a"].constraints == ["required"]
    assert rows["a.<collection>.<run name>"].constraints == ['when `kind` is `"x"`: requires `n`']
    assert rows["a.<collection>.<run name>.extra"].constraints == ['only when `kind` is `"x"`']
    assert rows["a.<collection>.<run name>.kind"].type == "string"


def test_every_command_and_option_of_the_cli_is_listed():
    parser = build_parser()
    page = cli_page(parser)
    listed = list(commands(parser))
    assert {"data", "evaluate", "manifest add", "completion"} <= {
        " ".join(c.words[1:]) for c in listed
    }
    for command in listed:
        assert f"`{' '.join(command.words)}` {{#{command.anchor}}}" in page
        for action in command.parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            name = action.option_strings[-1] if action.option_strings else action.metavar
            assert (name or action.dest) in page, (command.words, action)
    # Help texts with the defaults --help states.
    assert "manifest to update (default: workflow/resources/manifest.tsv)" in page
    assert_tables_hold_together(page)


def test_every_measure_set_and_column_is_listed():
    page = measures_page()
    for name in evaluate.SETS:
        assert f"### `{name}` {{#{name}}}" in page
    for column in evaluate.arqmath().columns + evaluate.ntcir12().columns + evaluate.cf().columns:
        assert f"| {code(column.name)} |" in page
    # Relevance levels, averaging and diagnostics come from the columns themselves.
    assert "| `MAP'` | `AP(rel=2,judged_only=True)` | 2 | `judged` | mean | no |" in page
    assert "| `Rel_Ret` | `NumRet(rel=2)` | – | `all` | sum | yes |" in page
    assert "## Default measures" in page and "beir" in page
    assert_tables_hold_together(page)


def test_every_output_path_and_registry_entry_is_listed():
    page = outputs_page()
    for function in (paths.corpus, paths.topics, paths.qrels, paths.run, paths.evaluation):
        assert f"`paths.{function.__name__}`" in page
    assert "| `results/runs/<collection>/<topic_set>/<system>.trec` | TREC run |" in page
    assert "| `results/collections/<collection>/corpus.jsonl` | JSON Lines |" in page
    assert "TREC format `qid Q0 docid rank score tag`" in page
    for registry in (
        output_kinds.OUTPUT_KINDS,
        run_origins.RUN_ORIGINS,
        figure_kinds.FIGURE_KINDS,
    ):
        for name in registry:
            assert f"| `{name}` |" in page
    assert_tables_hold_together(page)


def test_every_paths_function_has_a_description_and_a_format(monkeypatch):
    listed = {name for name, *_ in path_functions()}
    defined = {
        name
        for name, value in vars(paths).items()
        if callable(value) and getattr(value, "__module__", "") == paths.__name__
    }
    assert listed == defined

    def undocumented(collection: str) -> str:
        return f"results/new/{collection}.json"

    def unknown_format(collection: str) -> str:
        """A file of a new kind."""
        return f"results/new/{collection}.bin"

    for function in (undocumented, unknown_format):
        function.__module__ = paths.__name__
    monkeypatch.setattr(paths, "undocumented", undocumented, raising=False)
    with pytest.raises(KeyError, match="paths.undocumented has no docstring"):
        path_functions()
    monkeypatch.delattr(paths, "undocumented")
    monkeypatch.setattr(paths, "unknown_format", unknown_format, raising=False)
    with pytest.raises(KeyError, match="paths.unknown_format: no format"):
        path_functions()


def test_escape_keeps_code_and_makes_the_rest_literal():
    assert escape("a <b> | c_d `x|<y>_` *e*") == r"a &lt;b> \| c\_d `x|<y>_` \*e\*"
    assert escape("two\n  lines") == "two lines"
    assert code("a`b") == "``a`b``"
    assert first_sentence("Claims files (one, e.g. x.yaml): each claim.") == (
        "Claims files (one, e.g. x.yaml)"
    )
    assert first_sentence("One. Two.") == "One."


def test_changelog_links_fit_the_site():
    text = (
        "See [evaluation](docs/evaluation.md#a), [the README](README.md), [`Makefile`](Makefile),"
        " [web](https://example.org) and [here](#here)."
    )
    page = changelog_page(text)
    assert "[evaluation](evaluation.md#a)" in page
    assert "the README (`README.md`)" in page
    assert "`Makefile`" in page and "(Makefile)" not in page
    assert "[web](https://example.org)" in page and "[here](#here)" in page


def test_reference_pages_need_the_changelog(tmp_path):
    (tmp_path / "workflow" / "schemas").mkdir(parents=True)
    for schema in (docs_reference.SCHEMA, docs_reference.CLAIMS_SCHEMA):
        (tmp_path / schema).write_text((REPO / schema).read_text())
    with pytest.raises(FileNotFoundError, match="CHANGELOG.md"):
        docs_reference.reference_pages(tmp_path)
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n")
    pages = docs_reference.reference_pages(tmp_path)
    assert set(pages) == {
        "reference/configuration.md",
        "reference/claims-files.md",
        "reference/cli.md",
        "reference/measures.md",
        "reference/outputs.md",
        "changelog.md",
    }
    assert all(page.startswith("<!-- Generated") for page in pages.values())


def test_the_claims_files_page_lists_every_key_of_the_claims_schema():
    claims_schema = load_schema(REPO, CLAIMS_SCHEMA)
    page = claims_files_page(claims_schema)
    assert page.splitlines()[2] == "# Claims files reference"
    for name in property_names(claims_schema):
        assert f"`{name}`" in page or f".{name}`" in page, name
    assert "non-inferiority" in page and "claims.schema.yaml" in page
