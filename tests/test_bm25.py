"""One BM25 entry point: the workflow's rule, ``hybrid-ir search`` and the API all search with
``lucene.search.bm25_search`` on one ``BM25Settings``, whose defaults are the only ones."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from hybrid_ir.cli.main import build_parser
from hybrid_ir.errors import ConfigError
from hybrid_ir.interfaces import api
from hybrid_ir.retrieval.bm25 import DEFAULTS, JAVA_INT_MAX, BM25Settings

REPO = Path(__file__).resolve().parents[1]
CORPUS = [
    {"id": "d1", "title": "volcano", "text": "lava and magma flow from a volcano"},
    {"id": "d2", "title": "zebra", "text": "a zebra has stripes"},
    {"id": "d3", "title": "", "text": "magma under the crust"},
    {"id": "q2", "title": "", "text": "stripes of a zebra and a tiger"},
]
TOPICS = [
    {"id": "q1", "title": "volcano", "text": "magma lava"},
    {"id": "q2", "title": "", "text": "zebra stripes"},
]


def _search_defaults() -> dict:
    (search,) = [
        parser
        for action in build_parser()._subparsers._group_actions
        for name, parser in action.choices.items()
        if name == "search"
    ]
    return {action.dest: action.default for action in search._actions}


def test_the_command_line_defaults_are_the_settings_defaults():
    defaults = _search_defaults()
    for field in dataclasses.fields(BM25Settings):
        if field.name in defaults:
            value = defaults[field.name]
            expected = getattr(DEFAULTS, field.name)
            assert (tuple(value) if isinstance(value, list) else value) == expected, field.name
    assert {"layout", "k1", "b", "depth", "query_fields", "remove_query", "tag", "threads"} <= set(
        defaults
    )
    assert (DEFAULTS.k1, DEFAULTS.b, DEFAULTS.depth) == (0.9, 0.4, 1000)


def test_the_rules_params_are_settings_fields():
    """What the bm25_search rule passes its script (the plan's bm25_search_params) names fields
    of the settings, so the script builds them field for field."""
    from hybrid_ir.planning.rule_params import RuleParams

    params = RuleParams()
    params.config = {"bm25": {"k1": 0.9, "b": 0.4, "experiments": {}}, "run_depth": 1000}
    names = {field.name for field in dataclasses.fields(BM25Settings)}
    assert set(params.bm25_search_params()) <= names
    script = (REPO / "workflow" / "scripts" / "bm25_search.py").read_text()
    for name in params.bm25_search_params():
        assert f"{name}=params.{name}" in script or f"params.{name})" in script, name


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"layout": "tiled"}, "unknown index layout 'tiled'"),
        ({"k1": float("nan")}, "k1 must be a finite number of at least 0, got nan"),
        ({"k1": -1.0}, "k1 must be a finite number of at least 0"),
        ({"b": 1.5}, "b must be from 0 to 1, got 1.5"),
        ({"depth": 0}, "depth must be from 1"),
        ({"threads": JAVA_INT_MAX + 1}, "threads must be from 1 to 2,147,483,647"),
        ({"query_fields": []}, "name at least one topic field"),
    ],
)
def test_bad_settings_are_config_errors(changes, problem):
    with pytest.raises(ConfigError, match=problem):
        BM25Settings(**changes)
    with pytest.raises(ConfigError, match=problem):
        dataclasses.replace(DEFAULTS, **changes)


def test_query_fields_are_held_as_a_tuple():
    assert BM25Settings(query_fields=["text"]).query_fields == ("text",)
    assert BM25Settings(query_fields=["text"]) == BM25Settings(query_fields=("text",))


def test_the_api_imports_no_lucene_until_it_searches():
    code = (
        "import sys\nfrom hybrid_ir.interfaces import api\n"
        "assert api.BM25Settings().k1 == 0.9\n"
        "heavy = ('pyserini', 'jnius', 'tqdm', 'hybrid_ir.retrieval.lucene.search')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.lucene
def test_the_api_the_command_and_the_settings_write_the_same_run(tmp_path, capsys):
    from hybrid_ir.cli.main import main
    from hybrid_ir.data.formats import write_records
    from hybrid_ir.retrieval.lucene.index import build_bm25_index
    from hybrid_ir.retrieval.lucene.search import bm25_search

    write_records(tmp_path / "corpus.jsonl", CORPUS)
    write_records(tmp_path / "topics.jsonl", TOPICS)
    build_bm25_index(tmp_path / "corpus.jsonl", tmp_path / "index", "flat")
    index, topics = tmp_path / "index", tmp_path / "topics.jsonl"
    settings = BM25Settings(k1=1.2, b=0.75, depth=3, remove_query=True, tag="mine")
    assert bm25_search(index, topics, tmp_path / "settings.trec", settings) > 0
    api.bm25_search(index, topics, tmp_path / "api.trec", k1=1.2, b=0.75, depth=3,
                    remove_query=True, tag="mine")  # fmt: skip
    argv = ["search", str(index), str(topics), "-o", str(tmp_path / "cli.trec"), "--k1", "1.2",
            "--b", "0.75", "--depth", "3", "--remove-query", "--tag", "mine"]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    written = (tmp_path / "settings.trec").read_bytes()
    assert (tmp_path / "api.trec").read_bytes() == written
    assert (tmp_path / "cli.trec").read_bytes() == written
    lines = [line.split() for line in written.decode().splitlines()]
    assert all(tag == "mine" for *_, tag in lines)
    assert ("q2", "q2") not in {(line[0], line[2]) for line in lines}  # remove_query
    # Defaults: the same function with nothing given is the settings' defaults.
    api.bm25_search(index, topics, tmp_path / "defaults.trec")
    bm25_search(index, topics, tmp_path / "default-settings.trec", DEFAULTS)
    assert (tmp_path / "defaults.trec").read_bytes() == (
        tmp_path / "default-settings.trec"
    ).read_bytes()
